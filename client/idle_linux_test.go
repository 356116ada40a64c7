//go:build linux

package client

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// TestIdleShutdownStdio: a stdio server unused for its idle timeout has its
// child closed and reaped (no process, no zombie, once the close is done),
// its catalog kept; the next call spawns a new child, one generation up.
func TestIdleShutdownStdio(t *testing.T) {
	m, clock, verdicts := idleManager(t)
	rec := record(m)
	spec := faultSpec(faultserver.ModeNormal)
	spec.IdleTimeout = testIdle
	mustAdd(t, m, "s", spec)
	mustWait(t, m, "s", lifecycle.Connected)
	mustEcho(t, m, "s")
	pid, gen := childPID(t, m, "s")

	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", gen)
	if p, err := proctest.Stat(pid); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("child %d after the idle close: %v, %v; want it reaped", pid, p, err)
	}
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("the idle server's catalog was unpublished")
	}

	mustEcho(t, m, "s")
	pid2, gen2 := childPID(t, m, "s")
	if gen2 != gen+1 || pid2 == pid {
		t.Fatalf("after the next call: child %d generation %d; before: child %d generation %d", pid2, gen2, pid, gen)
	}
	closeAndCheck(t, m, rec, pid, pid2)
}
