package faultinject

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/server"
)

// Environment variables that switch a re-executed test binary into the
// stdio fault server and configure it.
const (
	// EnvServe, when set, makes Main run the stdio server.
	EnvServe = "MCPFLEET_FAULTINJECT"
	// EnvPoint is the Point the server faults at: AfterWrite, MidResponse
	// or AfterResponse, on the first run of a fault tool counted in
	// EnvCountFile, so the fault strikes once across every process started
	// with the same file.
	EnvPoint = "MCPFLEET_FAULTINJECT_POINT"
	// EnvCountFile is the file the counted tools append one byte to per run.
	EnvCountFile = "MCPFLEET_FAULTINJECT_COUNT"
	// EnvDownFile, when the file it names exists at start, makes the server
	// exit at once with DownCode: a server that is down.
	EnvDownFile = "MCPFLEET_FAULTINJECT_DOWN"
)

// Exit statuses of the stdio server.
const (
	// FaultCode: the server died at its fault point.
	FaultCode = 2
	// DownCode: the down file existed at start.
	DownCode = 3
)

// Stdio is how to start the stdio fault server, and where it counts.
type Stdio struct {
	// Path and Args start the test binary as the server; Env holds the
	// variables to set on top of the host's environment.
	Path string
	Args []string
	Env  map[string]string
	// CountFile is where the counted tools count their runs.
	CountFile string
	// DownFile is the file whose existence keeps the server down.
	DownFile string
}

// NewStdio returns the invocation of the stdio server faulting at point,
// counting in a file under dir (a t.TempDir(): the server may die, so the
// count lives outside it).
func NewStdio(dir string, point Point) Stdio {
	count := filepath.Join(dir, "executed")
	down := filepath.Join(dir, "down")
	return Stdio{
		Path: os.Args[0],
		// -test.run=^$ makes a binary whose TestMain never reaches Main run
		// no test and exit, instead of recursing into the suite.
		Args: []string{"-test.run=^$"},
		Env: map[string]string{
			EnvServe:     "1",
			EnvPoint:     string(point),
			EnvCountFile: count,
			EnvDownFile:  down,
			// A binary built with -race otherwise sleeps a second before
			// exiting, which would blur when the process died.
			"GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0"),
		},
		CountFile: count,
		DownFile:  down,
	}
}

// Executed returns how many times the counted tools ran, in every process
// started from s.
func (s Stdio) Executed() int64 {
	fi, err := os.Stat(s.CountFile)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// SetDown makes every server started from s from now on exit at start (on),
// or start normally again (off).
func (s Stdio) SetDown(on bool) error {
	if on {
		return os.WriteFile(s.DownFile, nil, 0o600)
	}
	if err := os.Remove(s.DownFile); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// Main runs the stdio fault server and exits if EnvServe is set; otherwise
// it returns at once. Call it before the tests run: first thing in
// TestMain, or from an init function of a test file.
func Main() {
	if _, ok := os.LookupEnv(EnvServe); !ok {
		return
	}
	os.Exit(serveStdio())
}

func serveStdio() int {
	if down := os.Getenv(EnvDownFile); down != "" {
		if _, err := os.Stat(down); err == nil {
			logf("down file exists: exiting at start")
			return DownCode
		}
	}
	point := Point(os.Getenv(EnvPoint))
	countFile := os.Getenv(EnvCountFile)
	out := &cutWriter{w: os.Stdout}
	h := hooks{
		count: func() int64 {
			if out.dying.Load() {
				// The fault answer is going out and the process exits
				// next: a call the client sent on seeing that answer
				// must not run (nor count) in the meantime.
				select {}
			}
			return countRun(countFile)
		},
		ran: func(_ context.Context, tool string, n int64) {
			if n != 1 {
				return // the fault strikes on the first run only
			}
			switch point {
			case AfterWrite:
				logf("%s: %s ran, dying before answering", point, tool)
				os.Exit(FaultCode)
			case MidResponse, AfterResponse:
				out.arm(point)
			}
		},
		blocked: func() { fmt.Fprintln(os.Stderr, BlockStartedLine) },
	}
	logf("pid=%d point=%q", os.Getpid(), point)
	// Listen rather than ServeStdio, which catches SIGTERM: a test server
	// keeps the signal's default disposition.
	err := server.NewStdioServer(newServer("faultinject-stdio", h)).Listen(context.Background(), os.Stdin, out)
	if err != nil {
		logf("listen: %v", err)
		return 1
	}
	return 0
}

// countRun appends one byte to the count file and returns its size. The
// append is atomic, so concurrent runs (and processes) each count once.
func countRun(path string) int64 {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		logf("count: %v", err)
		return -1
	}
	defer f.Close()
	if _, err := f.Write([]byte{'x'}); err != nil {
		logf("count: %v", err)
		return -1
	}
	fi, err := f.Stat()
	if err != nil {
		logf("count: %v", err)
		return -1
	}
	return fi.Size()
}

// cutWriter is the server's stdout. Once armed, it finds the fault tool's
// answer among the lines the server writes (one Write per message) and
// writes half of it (MidResponse) or all of it (AfterResponse), then the
// process dies.
type cutWriter struct {
	mu    sync.Mutex
	w     io.Writer
	point Point
	// dying is set before the fault answer is written: from then on no
	// counted tool runs.
	dying atomic.Bool
}

func (c *cutWriter) arm(p Point) {
	c.mu.Lock()
	c.point = p
	c.mu.Unlock()
}

func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.point == None || !bytes.Contains(p, []byte(ExecutedText)) {
		return c.w.Write(p)
	}
	c.dying.Store(true)
	switch c.point {
	case MidResponse:
		_, _ = c.w.Write(p[:len(p)/2])
	case AfterResponse:
		_, _ = c.w.Write(p)
	}
	logf("%s: dying after writing the answer's first %s", c.point, map[Point]string{MidResponse: "half", AfterResponse: "whole"}[c.point])
	os.Exit(FaultCode)
	return 0, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "faultinject: "+format+"\n", args...)
}
