package client

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// logLine is one record a logCapture took.
type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu    sync.Mutex
	lines []logLine
	more  chan struct{}
}

func newLogCapture() *logCapture { return &logCapture{more: make(chan struct{})} }

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	l := logLine{level: r.Level, msg: r.Message, attrs: map[string]any{}}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.Any()
		return true
	})
	c.mu.Lock()
	c.lines = append(c.lines, l)
	close(c.more)
	c.more = make(chan struct{})
	c.mu.Unlock()
	return nil
}

// wait returns the first line with msg for server, waiting for it.
func (c *logCapture) wait(t *testing.T, server, msg string) logLine {
	t.Helper()
	ctx := testCtx(t)
	for {
		c.mu.Lock()
		lines, more := c.lines, c.more
		c.mu.Unlock()
		for _, l := range lines {
			if l.msg == msg && l.attrs["server"] == server {
				return l
			}
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("no log line %q for %s; got %v", msg, server, lines)
		}
	}
}

// of returns the lines for server.
func (c *logCapture) of(server string) []logLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logLine
	for _, l := range c.lines {
		if l.attrs["server"] == server {
			out = append(out, l)
		}
	}
	return out
}

// TestLogStateChanges: with WithLogger, a connect is one Info line with the
// generation, the tools, the protocol and how long it took; a loss a Warn
// line with the cause; a server that cannot start an Error line with the
// cause and a hint.
func TestLogStateChanges(t *testing.T) {
	logs := newLogCapture()
	m := newTestManager(t, WithLogger(slog.New(logs)), WithPolicy(slowPolicy))
	ts := newTestServer()
	mustAdd(t, m, "up", ServerSpec{Dialer: ts.dialer()})
	mustAdd(t, m, "broken", ServerSpec{Stdio: &stdio.Spec{Command: "mcpfleet-no-such-server"}})

	l := logs.wait(t, "up", "mcpfleet: server connected")
	if l.level != slog.LevelInfo || l.attrs["generation"] != uint64(1) || l.attrs["tools"] != int64(7) ||
		l.attrs["protocol"] == nil || l.attrs["took"] == nil || l.attrs["state"] != "Connected" {
		t.Errorf("connected line: %v %+v", l.level, l.attrs)
	}
	ts.Kill(nil)
	l = logs.wait(t, "up", "mcpfleet: server lost; reconnecting")
	if l.level != slog.LevelWarn || l.attrs["err"] == nil || l.attrs["generation"] != uint64(1) {
		t.Errorf("lost line: %v %+v", l.level, l.attrs)
	}

	l = logs.wait(t, "broken", "mcpfleet: server failed")
	if l.level != slog.LevelError || l.attrs["hint"] == nil || l.attrs["state"] != "PermanentlyFailed" {
		t.Errorf("failed line: %v %+v", l.level, l.attrs)
	}
	if err, _ := l.attrs["err"].(string); !strings.Contains(err, "command not found") {
		t.Errorf("failed line's err = %q, want the cause", err)
	}
}

// TestLogFlappingIsBounded: a server whose dial fails every 10 ms for a
// minute (on a fake clock) writes a bounded number of lines, the later ones
// saying how many they stand for, not one per attempt.
func TestLogFlappingIsBounded(t *testing.T) {
	logs := newLogCapture()
	clock := fakeclock.New(time.Unix(1000, 0))
	m := newTestManager(t, WithLogger(slog.New(logs)), WithClock(clock), WithTimeouts(Timeouts{IdleProbe: -1}),
		WithPolicy(lifecycle.Policy{InitialInterval: 10 * time.Millisecond, MaxInterval: 10 * time.Millisecond,
			MaxAttempts: -1, Jitter: -1, FastInterval: -1}))
	refused := errors.New("connection refused")
	mustAdd(t, m, "flap", ServerSpec{Dialer: func(context.Context) (transport.Conn, error) { return nil, refused }})
	const attempts = 6000 // a minute of 10 ms steps
	for range attempts {
		if err := clock.WaitForTimers(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(10 * time.Millisecond)
	}
	if err := clock.WaitForTimers(testCtx(t), 1); err != nil { // the last attempt is done
		t.Fatal(err)
	}
	if dials := m.Stats().Servers[0].Dials; dials < attempts {
		t.Fatalf("%d dials, want %d or more", dials, attempts)
	}
	// The bus delivers asynchronously: wait for the line of the end.
	if err := m.Disable(testCtx(t), "flap"); err != nil {
		t.Fatal(err)
	}
	logs.wait(t, "flap", "mcpfleet: server disabled")
	lines := logs.of("flap")
	suppressed := 0
	for _, l := range lines {
		if n, ok := l.attrs["suppressed"].(int64); ok {
			suppressed += int(n)
		}
	}
	t.Logf("%d lines for %d failed attempts; %d left out", len(lines), attempts, suppressed)
	if max := logBurst + int(time.Minute/logEvery) + 4; len(lines) > max {
		t.Errorf("%d lines, want at most %d", len(lines), max)
	}
	if suppressed < attempts-len(lines) {
		t.Errorf("the lines say %d were left out; %d were", suppressed, attempts-len(lines))
	}
}
