//go:build linux

package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// Tests that look at processes through /proc or kill them from outside.

// TestOwnProcessGroup: the child leads a process group of its own, which
// is what lets Close end whatever it started.
func TestOwnProcessGroup(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), fastClose...)
	mustConnect(t, c)
	if p, err := proctest.Stat(c.PID()); err != nil || p.PGID != c.PID() {
		t.Errorf("child should lead its own process group: %+v, %v", p, err)
	}
}

// TestKilledFromOutside: SIGKILL from someone else closes Done at once, and
// a call in flight fails promptly with ErrTransportClosed instead of
// hanging; the process is already reaped, before anyone calls Close.
func TestKilledFromOutside(t *testing.T) {
	lines := make(lineHandler, 64)
	c := dial(t, faultSpec(faultserver.ModeNormal), append(fastClose, WithStderrLogger(slog.New(lines), slog.LevelInfo))...)
	cl := mustConnect(t, c)

	callErr := make(chan error, 1)
	go func() {
		_, err := callTool(testCtx(t, 10*waitBound), cl, "sleep", map[string]any{"ms": 60_000})
		callErr <- err
	}()
	waitLine(t, lines, faultserver.SleepLine) // the call is on the server now

	killed := time.Now()
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, c)
	t.Logf("death -> Done: %v", time.Since(killed))
	select {
	case err := <-callErr:
		t.Logf("death -> pending call returned: %v (%v)", time.Since(killed), err)
		if !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("pending call: %v, want ErrTransportClosed", err)
		}
	case <-time.After(waitBound):
		t.Fatal("pending call still blocked after the child died")
	}
	err := c.Err()
	if want := fmt.Sprintf("stdio: %s (pid %d): process killed by signal SIGKILL", c.Spec().Command, c.PID()); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Err() = %q", err)
	}
	if !errors.Is(err, ErrExited) || errors.Is(err, ErrClosed) {
		t.Errorf("Err() = %v: want ErrExited and not ErrClosed", err)
	}
	// Reaped by the exit watcher, not waiting for Close.
	if err := proctest.WaitNoChildren(testCtx(t, waitBound)); err != nil {
		t.Error(err)
	}
	if _, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "x"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("call after death: %v, want ErrTransportClosed", err)
	}
}

// TestLeaderDiesGrandchildHoldsPipes: the server dies while a grandchild it
// started still holds stdout and stderr. Done must close anyway, the
// pending call must fail, and the grandchild must die with its group even
// before Close.
func TestLeaderDiesGrandchildHoldsPipes(t *testing.T) {
	lines := make(lineHandler, 64)
	c := dial(t, faultSpec(faultserver.ModeGrandchild), append(fastClose, WithStderrLogger(slog.New(lines), slog.LevelInfo))...)
	cl := mustConnect(t, c)
	out, err := callTool(testCtx(t, waitBound), cl, "grandchild", nil)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, _ := strconv.Atoi(out)
	if p, err := proctest.Stat(grandchild); err != nil || p.PGID != c.PID() {
		t.Fatalf("grandchild %d should be in the server's group %d: %+v, %v", grandchild, c.PID(), p, err)
	}

	callErr := make(chan error, 1)
	go func() {
		_, err := callTool(testCtx(t, 10*waitBound), cl, "sleep", map[string]any{"ms": 60_000})
		callErr <- err
	}()
	waitLine(t, lines, faultserver.SleepLine)

	killed := time.Now()
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, c)
	t.Logf("death -> Done: %v", time.Since(killed))
	select {
	case err := <-callErr:
		if !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("pending call: %v, want ErrTransportClosed", err)
		}
	case <-time.After(waitBound):
		t.Fatal("pending call still blocked after the child died")
	}
	proctest.WaitDead(t, grandchild)
}

// TestDialCanceledDuringSpawn: when ctx ends while the process is being
// started, Dial kills and reaps it before returning the error.
func TestDialCanceledDuringSpawn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookAfterStart = cancel
	defer func() { testHookAfterStart = nil }()
	c, err := Dial(ctx, faultSpec(faultserver.ModeIgnoreSIGTERM))
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Dial = %v, %v; want nil, context.Canceled", c, err)
	}
	// Reaped before Dial returned, even though it ignores SIGTERM.
	if kids, err := proctest.Children(); err != nil || len(kids) != 0 {
		t.Errorf("children after the cancelled Dial: %v, %v", kids, err)
	}
}
