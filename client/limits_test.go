package client

import (
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// An answer over the server's message limit fails that call with
// ErrMessageTooLarge, naming the server, the size and the limit; the
// runtime stays (same generation, no reconnect) and the next call works.
func TestCallAnswerOverTheSizeLimit(t *testing.T) {
	const limit = 1 << 20
	m := New()
	defer m.Close()
	spec := faultSpec(faultserver.ModeNormal)
	spec.Limits = Limits{MaxMessageBytes: limit}
	mustAdd(t, m, "s", spec)
	mustWait(t, m, "s", lifecycle.Connected)
	before, _ := m.Status("s")

	_, err := m.CallTool(testCtx(t), "s", "big", map[string]any{"bytes": 4 * limit})
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("call = %v, want ErrMessageTooLarge", err)
	}
	var se *ServerError
	var tl *MessageTooLargeError
	if !errors.As(err, &se) || se.Server != "s" || !errors.As(err, &tl) || tl.Size <= 4*limit || tl.Limit != limit {
		t.Fatalf("error %q: want the server, the size and the limit", err)
	}
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrServerError) {
		t.Fatalf("error %q is classified as something else too", err)
	}
	res, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "still here"})
	if err != nil || res.IsError {
		t.Fatalf("next call: %v", err)
	}
	after, _ := m.Status("s")
	if after.State != lifecycle.Connected || after.Generation != before.Generation {
		t.Fatalf("status after: %v generation %d, before generation %d", after.State, after.Generation, before.Generation)
	}
}
