//go:build linux

package redistest

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server starts, answers PING, restarts on its port, and leaves no
// process behind.
func TestStartRestartStop(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Dial(ctx); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	if err := s.Dial(ctx); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := s.Dial(ctx); err == nil {
		t.Error("still answering after Stop")
	}
	proctest.NoChildren(t)
}
