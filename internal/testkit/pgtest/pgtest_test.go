//go:build linux

package pgtest

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server starts, accepts connections, restarts on its port, and leaves
// no process behind.
func TestStartRestartStop(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dial(ctx, s.Addr()); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	if err := dial(ctx, s.Addr()); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := dial(ctx, s.Addr()); err == nil {
		t.Error("still accepting after Stop")
	}
	proctest.NoChildren(t)
}
