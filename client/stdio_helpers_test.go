package client

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// Helpers for the tests that run the Manager over real child processes, on
// every OS; the tests that read /proc are in stdio_test.go (Linux).

// faultSpec is the stdio spec of the fault server in mode.
func faultSpec(mode string, env ...string) ServerSpec {
	inv := faultserver.Command(mode, env...)
	return ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}}
}

// childPID returns the pid of the server's current child process and the
// generation of the runtime it serves.
func childPID(t *testing.T, m *Manager, name string) (int, uint64) {
	t.Helper()
	s, err := m.slot(name)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	l, state := s.lease, s.state
	s.mu.Unlock()
	if l == nil {
		t.Fatalf("server %q has no runtime (state %s)", name, state)
	}
	p, ok := l.conn.(interface{ PID() int })
	if !ok {
		t.Fatalf("server %q: conn %T has no PID", name, l.conn)
	}
	return p.PID(), l.gen
}

// stderrWatch is a slog.Handler for stdio.WithStderrLogger: it keeps every
// stderr line of every child, with its pid, and lets a test wait for one.
type stderrWatch struct {
	mu    sync.Mutex
	lines []stderrLine
	more  chan struct{}
}

type stderrLine struct {
	pid  int
	line string
}

func newStderrWatch() *stderrWatch { return &stderrWatch{more: make(chan struct{})} }

func (w *stderrWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *stderrWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *stderrWatch) WithGroup(string) slog.Handler            { return w }

func (w *stderrWatch) Handle(_ context.Context, r slog.Record) error {
	var l stderrLine
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "pid":
			l.pid = int(a.Value.Int64())
		case "line":
			l.line = a.Value.String()
		}
		return true
	})
	w.mu.Lock()
	w.lines = append(w.lines, l)
	close(w.more)
	w.more = make(chan struct{})
	w.mu.Unlock()
	return nil
}

// wait returns the first line that contains substr.
func (w *stderrWatch) wait(t *testing.T, substr string) stderrLine {
	t.Helper()
	ctx := testCtx(t)
	seen := 0
	for {
		w.mu.Lock()
		lines, more := w.lines, w.more
		w.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if strings.Contains(lines[seen].line, substr) {
				return lines[seen]
			}
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("no stderr line containing %q in %d lines", substr, len(lines))
		}
	}
}

func (w *stderrWatch) count(substr string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if strings.Contains(l.line, substr) {
			n++
		}
	}
	return n
}

// kill ends the process pid at once: SIGKILL on Unix, TerminateProcess on
// Windows.
func kill(t *testing.T, pid int) {
	t.Helper()
	p, err := os.FindProcess(pid)
	if err == nil {
		err = p.Kill()
		_ = p.Release()
	}
	if err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}
