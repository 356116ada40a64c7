// Package faultserver is a real MCP server (mcp-go's server package over
// stdio) that misbehaves on request, for tests.
//
// It runs inside the test binary itself: a test re-executes os.Args[0] with
// EnvServe set (see Command), and the child's TestMain calls Main first
// thing, which serves and exits instead of running tests. Shipping no
// prebuilt helper keeps the server in step with the code under test and
// works in every package that calls Main from its TestMain.
package faultserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Environment variables that switch the re-executed test binary into a
// server and pick its behaviour.
const (
	// EnvServe, when set to any value, makes Main run the server.
	EnvServe = "MCPFLEET_FAULTSERVER"
	// EnvFault selects the fault mode: one of the Mode constants.
	EnvFault = "MCPFLEET_FAULT"
	// EnvN is the N of ModeCrashAfter. Defaults to 1.
	EnvN = "MCPFLEET_FAULT_N"
)

// Fault modes. Unless a mode says otherwise, the server exits 0 when its
// stdin reaches EOF (as well-behaved stdio servers do) and dies of SIGTERM.
const (
	// ModeNormal serves correctly.
	ModeNormal = ""
	// ModeExitAtStart writes one line to stderr and exits with status 3
	// before reading anything.
	ModeExitAtStart = "exit-at-start"
	// ModeCrashAfter answers EnvN tool calls, then exits with status 2 on
	// the next one, before answering it.
	ModeCrashAfter = "crash-after"
	// ModeHang reads stdin and never answers. It ignores stdin EOF, so only
	// a signal ends it.
	ModeHang = "hang"
	// ModeGarbageStdout writes non-JSON-RPC lines to stdout at start and
	// before every message, and otherwise serves correctly: a client must
	// skip the noise.
	ModeGarbageStdout = "garbage-stdout"
	// ModeStderrFlood writes to stderr without pause (1 KiB lines and, now
	// and then, a 256 KiB line with no newline) while serving correctly.
	ModeStderrFlood = "stderr-flood"
	// ModeBannerHang writes BannerLine to stdout, as a server meant for
	// another transport does ("listening on port 3000"), then reads stdin
	// and never answers; it exits at stdin EOF.
	ModeBannerHang = "banner-hang"
	// ModeBannerServe writes BannerLine to stdout, as several real servers
	// do ("Server running on stdio"), and then serves correctly: its first
	// message is its answer to the handshake.
	ModeBannerServe = "banner-serve"
	// ModeIgnoreSIGTERM ignores SIGTERM and stdin EOF: only SIGKILL ends it.
	ModeIgnoreSIGTERM = "ignore-sigterm"
	// ModeIgnoreEOF serves correctly but keeps running after stdin EOF, as
	// servers that never look for it do; SIGTERM ends it.
	ModeIgnoreEOF = "ignore-eof"
	// ModeGrandchild starts a sleeping grandchild (this binary again) that
	// shares its stdout and stderr, reports the grandchild's pid on stderr
	// and through the extra tool "grandchild", and serves correctly.
	ModeGrandchild = "grandchild"

	// modeSleeper is the grandchild: it sleeps until killed.
	modeSleeper = "sleeper"
)

// ExitAtStartCode and CrashCode are the exit statuses of ModeExitAtStart
// and ModeCrashAfter, so tests can match them.
const (
	ExitAtStartCode = 3
	CrashCode       = 2
)

// BannerLine is what ModeBannerHang and ModeBannerServe write to stdout.
const BannerLine = "MCP server listening on http://localhost:3000/mcp"

// ExitAtStartLine is what ModeExitAtStart writes to stderr before exiting.
const ExitAtStartLine = "faultserver: exiting at start as asked"

// SleepLine starts the stderr line the sleep tool writes when it begins,
// so a test can tell that a call is in flight on the server.
const SleepLine = "sleep started"

// SleepCancelledLine starts the stderr line the sleep tool writes when its
// context ends before the sleep is over: the server cancelled the call,
// which over stdio happens when the client sends notifications/cancelled
// for it (or when the server shuts down).
const SleepCancelledLine = "sleep cancelled"

// Invocation is how to start the fault server: the test binary re-executed
// with the environment that selects a mode. It is a plain struct so that
// any transport can use it without this package importing one.
type Invocation struct {
	Path string
	Args []string
	// Env holds only the variables to set on top of the host environment.
	Env map[string]string
}

// EnvList returns Env as KEY=VALUE pairs, the form exec and mcp-go take.
func (inv Invocation) EnvList() []string {
	out := make([]string, 0, len(inv.Env))
	for k, v := range inv.Env {
		out = append(out, k+"="+v)
	}
	return out
}

// Command returns the invocation of the fault server in the given mode.
// extraEnv holds KEY=VALUE pairs, for example EnvN+"=3".
func Command(mode string, extraEnv ...string) Invocation {
	env := map[string]string{EnvServe: "1", EnvFault: mode, "GORACE": NoRaceExitDelay()}
	for _, kv := range extraEnv {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				env[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	// -test.run=^$ makes a binary whose TestMain forgot to call Main run no
	// test and exit, instead of recursing into the suite.
	return Invocation{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: env}
}

// NoRaceExitDelay returns the GORACE value for a re-executed test binary:
// the host's GORACE plus atexit_sleep_ms=0. A binary built with -race
// otherwise sleeps a second before exiting, which would make every child
// look slow to exit on stdin EOF and push Close into its SIGTERM path.
func NoRaceExitDelay() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

// Main runs the fault server and exits if EnvServe is set; otherwise it
// returns at once. Call it first thing in TestMain.
func Main() {
	if _, ok := os.LookupEnv(EnvServe); !ok {
		return
	}
	os.Exit(run(os.Getenv(EnvFault)))
}

func run(mode string) int {
	logf("pid=%d mode=%q", os.Getpid(), mode)
	var stdout io.Writer = os.Stdout
	keepAfterEOF := false

	switch mode {
	case ModeNormal, ModeCrashAfter, ModeStderrFlood, ModeGrandchild:
	case ModeExitAtStart:
		fmt.Fprintln(os.Stderr, ExitAtStartLine)
		return ExitAtStartCode
	case ModeHang:
		_, _ = io.Copy(io.Discard, os.Stdin)
		sleepForever()
	case ModeBannerHang:
		fmt.Fprintln(os.Stdout, BannerLine)
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case ModeBannerServe:
		fmt.Fprintln(os.Stdout, BannerLine)
	case ModeGarbageStdout:
		stdout = &garbageWriter{w: os.Stdout}
		fmt.Fprint(os.Stdout, "\x00\xffnot json at all\n{\"hello\":\"world\"}\n{\"jsonrpc\":\"2.0\",\"id\":987654,\"result\":{}}\n")
	case ModeIgnoreSIGTERM:
		signal.Ignore(syscall.SIGTERM)
		keepAfterEOF = true
	case ModeIgnoreEOF:
		keepAfterEOF = true
	case modeSleeper:
		sleepForever()
	case ModeFlood:
		return runFlood()
	default:
		logf("unknown mode %q", mode)
		return 64
	}

	s := newServer(mode)
	if mode == ModeStderrFlood {
		go flood()
	}
	if mode == ModeGrandchild {
		pid, err := startGrandchild()
		if err != nil {
			logf("grandchild: %v", err)
			return 1
		}
		logf("grandchild pid=%d", pid)
		s.AddTool(mcp.NewTool("grandchild", mcp.WithDescription("Returns the pid of the sleeping grandchild."),
			mcp.WithToolAnnotation(mcp.ToolAnnotation{})),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(strconv.Itoa(pid)), nil
			})
	}

	// Listen rather than ServeStdio: ServeStdio catches SIGTERM, and the
	// modes need the signal's default disposition (or to ignore it).
	err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, stdout)
	if keepAfterEOF {
		sleepForever()
	}
	if err != nil {
		logf("listen: %v", err)
		return 1
	}
	return 0
}

// newServer builds the MCP server with the tools every mode offers.
func newServer(mode string) *server.MCPServer {
	s := server.NewMCPServer("mcpfleet-faultserver", "test", server.WithToolCapabilities(false))
	limit := -1
	if mode == ModeCrashAfter {
		limit = 1
		if n, err := strconv.Atoi(os.Getenv(EnvN)); err == nil {
			limit = n
		}
	}
	var calls atomic.Int64
	// counted wraps a handler so ModeCrashAfter can die in the middle of the
	// call after the limit, which leaves that call without an answer.
	counted := func(h server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if n := calls.Add(1); limit >= 0 && n > int64(limit) {
				logf("crashing on call %d as asked", n)
				os.Exit(CrashCode)
			}
			return h(ctx, req)
		}
	}
	// No hints: the zero annotation, so a client must treat the tool as
	// neither read-only nor idempotent (mcp-go's defaults say false anyway,
	// but explicit absence is what real servers usually send).
	none := mcp.WithToolAnnotation(mcp.ToolAnnotation{})

	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Returns its text argument."),
		mcp.WithString("text", mcp.Required()),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})),
		counted(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := req.RequireString("text")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(text), nil
		}))
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Returns a+b."),
		mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required()), none),
		counted(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a, err1 := req.RequireFloat("a")
			b, err2 := req.RequireFloat("b")
			if err1 != nil || err2 != nil {
				return mcp.NewToolResultError("a and b must be numbers"), nil
			}
			return mcp.NewToolResultText(strconv.FormatFloat(a+b, 'g', -1, 64)), nil
		}))
	s.AddTool(mcp.NewTool("sleep", mcp.WithDescription("Sleeps ms milliseconds, or until cancelled."),
		mcp.WithNumber("ms", mcp.Required()), none),
		counted(func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ms := req.GetFloat("ms", 0)
			// Tests wait for this line to know the call reached the server.
			logf("%s ms=%v", SleepLine, ms)
			t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
			defer t.Stop()
			select {
			case <-t.C:
				return mcp.NewToolResultText("slept"), nil
			case <-ctx.Done():
				logf("%s ms=%v: %v", SleepCancelledLine, ms, context.Cause(ctx))
				return nil, ctx.Err()
			}
		}))
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("Returns a text of the given number of bytes."),
		mcp.WithNumber("bytes", mcp.Required()), mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})),
		counted(func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("b", int(req.GetFloat("bytes", 0)))), nil
		}))
	s.AddTool(mcp.NewTool("pid", mcp.WithDescription("Returns the server's process id."), none),
		counted(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strconv.Itoa(os.Getpid())), nil
		}))
	return s
}

// garbageWriter puts a line of noise before every message the server writes.
// The server writes each message with a single Write under its own lock, so
// the noise never splits a message.
type garbageWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (g *garbageWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := io.WriteString(g.w, "garbage: this line is not JSON-RPC\n"); err != nil {
		return 0, err
	}
	return g.w.Write(p)
}

// flood writes to stderr as fast as the reader takes it, forever.
func flood() {
	line := make([]byte, 1024)
	for i := range line {
		line[i] = 'x'
	}
	line[len(line)-1] = '\n'
	long := make([]byte, 256*1024)
	for i := range long {
		long[i] = 'y'
	}
	for i := 0; ; i++ {
		buf := line
		if i%100 == 99 {
			buf = long // no newline: the reader must cap a line's length
		}
		if _, err := os.Stderr.Write(buf); err != nil {
			return
		}
	}
}

// startGrandchild starts this binary again as a sleeper that inherits our
// stdout and stderr: a grandchild holding the pipes open is the case that
// makes a naive transport wait forever for EOF.
func startGrandchild() (int, error) {
	inv := Command(modeSleeper)
	cmd := exec.Command(inv.Path, inv.Args...)
	cmd.Env = append(os.Environ(), inv.EnvList()...)
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	// Never waited for: when we die it is reparented, and whoever owns our
	// process group is expected to kill it.
	return cmd.Process.Pid, nil
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "faultserver: "+format+"\n", args...)
}
