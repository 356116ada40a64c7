package httpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
)

// Everything modes: the transports @modelcontextprotocol/server-everything
// serves over HTTP.
const (
	// EverythingStreamable serves Streamable HTTP at /mcp.
	EverythingStreamable = "streamableHttp"
	// EverythingSSE serves the legacy HTTP+SSE transport at /sse.
	EverythingSSE = "sse"
)

// everythingStartTimeout bounds how long a start waits for the server to
// say it listens.
const everythingStartTimeout = 30 * time.Second

// Everything runs the TypeScript reference server
// @modelcontextprotocol/server-everything from the pinned npm install, in
// its own process group, on a fixed port of 127.0.0.1 across restarts.
type Everything struct {
	bin  string
	mode string
	port int
	procSlot
}

type everythingProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process was reaped
	output *lockedBuffer
}

// procSlot holds the process of a server that stops and starts again.
type procSlot struct {
	// allMarkers makes a start wait for every marker, not the first.
	allMarkers bool

	mu   sync.Mutex // guards proc
	proc *everythingProc
}

// StartEverything starts server-everything in mode (EverythingStreamable
// or EverythingSSE) on a free port and kills it when the test ends. It
// skips the test (fails it under CI) when the npm packages are missing.
func StartEverything(t testing.TB, mode string) *Everything {
	t.Helper()
	bin := npmtest.Bin(t, "mcp-server-everything")
	port, err := freePort()
	if err != nil {
		t.Fatalf("httpserver: free port: %v", err)
	}
	e := &Everything{bin: bin, mode: mode, port: port}
	t.Cleanup(e.Stop)
	if err := e.start(); err != nil {
		t.Fatalf("httpserver: start server-everything %s: %v", mode, err)
	}
	return e
}

// URL returns the endpoint a client connects to.
func (e *Everything) URL() string {
	path := "/mcp"
	if e.mode == EverythingSSE {
		path = "/sse"
	}
	return "http://127.0.0.1:" + strconv.Itoa(e.port) + path
}

// Addr returns host:port.
func (e *Everything) Addr() string { return "127.0.0.1:" + strconv.Itoa(e.port) }

// Output returns what the server printed so far, for failure messages.
func (p *procSlot) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return ""
	}
	return p.proc.output.String()
}

// Restart kills the server and starts a new one on the same port.
func (e *Everything) Restart(t testing.TB) {
	t.Helper()
	e.Stop()
	if err := e.start(); err != nil {
		t.Fatalf("httpserver: restart server-everything %s on port %d: %v", e.mode, e.port, err)
	}
}

// Stop kills the server's whole process group and reaps it. It is safe to
// call while stopped.
func (p *procSlot) Stop() {
	p.mu.Lock()
	proc := p.proc
	p.proc = nil
	p.mu.Unlock()
	if proc == nil {
		return
	}
	killTree(proc.cmd)
	<-proc.exited
}

// start starts cmd (see startProc) as the slot's process; one that did not
// come to listen is stopped.
func (p *procSlot) start(cmd *exec.Cmd, env []string, markers [][]byte) error {
	proc, err := startProc(cmd, env, markers, p.allMarkers, func(proc *everythingProc) {
		p.mu.Lock()
		p.proc = proc
		p.mu.Unlock()
	})
	if proc != nil && err != nil {
		p.Stop()
	}
	return err
}

func (e *Everything) start() error {
	// The two transports announce that they listen with these lines.
	markers := [][]byte{[]byte("listening on port"), []byte("running on port")}
	return e.procSlot.start(exec.Command(e.bin, e.mode), []string{"PORT=" + strconv.Itoa(e.port)}, markers)
}

// startProc starts cmd with env added, in its own process group, hands
// its process to started, and waits until it prints one of markers (all
// of them, with all). It returns the process that it started, if any,
// with an error if it did not listen: the caller stops it.
func startProc(cmd *exec.Cmd, env []string, markers [][]byte, all bool, started func(*everythingProc)) (*everythingProc, error) {
	ready := make(chan struct{})
	out := &lockedBuffer{ready: ready, markers: markers, all: all}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = treeProcAttr()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &everythingProc{cmd: cmd, exited: make(chan struct{}), output: out}
	go func() {
		defer close(p.exited)
		_ = cmd.Wait()
	}()
	started(p)

	ctx, cancel := context.WithTimeout(context.Background(), everythingStartTimeout)
	defer cancel()
	select {
	case <-ready:
		return p, nil
	case <-p.exited:
		return p, fmt.Errorf("exited before listening: %s", out.String())
	case <-ctx.Done():
		return p, fmt.Errorf("did not listen within %v: %s", everythingStartTimeout, out.String())
	}
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	// The port is free once the listener closes, and the kernel may hand
	// it out again at once: two servers started side by side (parallel
	// subtests) were given one port, and one test's restart killed the
	// other's server. A port handed out once in this process is never
	// handed out again; the listeners on the ones met again stay open
	// until a fresh one is found, so that the kernel moves on.
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		held = append(held, ln)
		addr, ok := ln.Addr().(*net.TCPAddr)
		if !ok {
			return 0, errors.New("not a TCP address")
		}
		if _, seen := handedOut.LoadOrStore(addr.Port, true); !seen {
			return addr.Port, nil
		}
	}
	return 0, errors.New("no port that was not handed out before")
}

// handedOut holds the ports freePort returned in this process.
var handedOut sync.Map

// lockedBuffer collects a process's output and closes ready once a marker
// (every marker, with all) shows up in it.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	markers [][]byte
	all     bool
	ready   chan struct{}
	seen    bool
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 {
		b.buf.Write(p)
	}
	if !b.seen {
		found := 0
		for _, m := range b.markers {
			if bytes.Contains(b.buf.Bytes(), m) {
				found++
			}
		}
		if found > 0 && (!b.all || found == len(b.markers)) {
			b.seen = true
			close(b.ready)
		}
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
