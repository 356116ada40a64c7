//go:build unix

package stdio

import (
	"syscall"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
)

// TestThirdPartyKilled: a Node server killed from outside is noticed at
// once, with the cause.
func TestThirdPartyKilled(t *testing.T) {
	c := dial(t, Spec{Command: npmtest.Bin(t, "mcp-server-everything")}, fastClose...)
	mustConnect(t, c)
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("death -> Done: %v", waitDone(t, c))
	if got := how(c.Err()); got != "SIGKILL" {
		t.Errorf("ended by %s, want SIGKILL", got)
	}
}
