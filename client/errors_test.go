package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// Every per-server failure of every Manager method has one shape: a
// *ServerError naming the server and the operation, one "mcpfleet: "
// prefix in the whole message (the transports' included), and the
// sentinel reachable with errors.Is.
func TestOneErrorShape(t *testing.T) {
	ctx := testCtx(t)
	ts := newTestServer()
	m := newTestManager(t, WithTimeouts(Timeouts{Ready: 50 * time.Millisecond}),
		WithPolicy(lifecycle.Policy{MaxAttempts: 1, InitialInterval: time.Millisecond, ProbeInterval: -1}))
	mustAdd(t, m, "up", ServerSpec{Dialer: ts.dialer()})
	mustAdd(t, m, "off", ServerSpec{Dialer: ts.dialer(), Disabled: true})
	mustAdd(t, m, "gone", ServerSpec{Stdio: &stdio.Spec{Command: "/nonexistent/mcp-server"}})
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	mustAdd(t, m, "stuck", ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) {
		select {
		case <-stuck:
		case <-ctx.Done():
		}
		return nil, errors.New("test: never connects")
	}})
	mustWait(t, m, "up", lifecycle.Connected)
	mustWait(t, m, "gone", lifecycle.PermanentlyFailed)
	canceled, cancel := context.WithCancel(ctx)
	cancel()

	for _, tt := range []struct {
		server, op string
		want       error
		err        func() error
	}{
		{"nope", "status", ErrUnknownServer, func() error { _, err := m.Status("nope"); return err }},
		{"nope", "enable", ErrUnknownServer, func() error { return m.Enable(ctx, "nope") }},
		{"nope", "disable", ErrUnknownServer, func() error { return m.Disable(ctx, "nope") }},
		{"nope", "reconnect", ErrUnknownServer, func() error { return m.Reconnect(ctx, "nope") }},
		{"nope", "remove", ErrUnknownServer, func() error { return m.Remove(ctx, "nope") }},
		{"nope", "wait for Connected", ErrUnknownServer, func() error { return m.WaitFor(ctx, "nope", lifecycle.Connected) }},
		{"nope", "get prompt p", ErrUnknownServer, func() error { _, err := m.GetPrompt(ctx, "nope", "p", nil); return err }},
		{"nope", "read resource r://x", ErrUnknownServer, func() error { _, err := m.ReadResource(ctx, "nope", "r://x"); return err }},
		{"nope", "subscribe r://x", ErrUnknownServer, func() error { return m.SubscribeResource(ctx, "nope", "r://x") }},
		{"nope", "set level info", ErrUnknownServer, func() error { return m.SetLevel(ctx, "nope", "info") }},
		{"up", "add", ErrDuplicateServer, func() error { return m.Add(ctx, "up", ServerSpec{Dialer: ts.dialer()}) }},
		{"bad", "add", ErrInvalidSpec, func() error { return m.Add(ctx, "bad", ServerSpec{Stdio: &stdio.Spec{}}) }},
		{"off", "call tool echo", ErrDisabled, func() error { _, err := m.CallTool(ctx, "off", "echo", nil); return err }},
		{"gone", "call tool echo", ErrPermanentlyFailed, func() error { _, err := m.CallTool(ctx, "gone", "echo", nil); return err }},
		{"gone", "call tool echo", stdio.ErrCommandNotFound, func() error { _, err := m.CallTool(ctx, "gone", "echo", nil); return err }},
		{"stuck", "call tool echo", ErrUnavailable, func() error { _, err := m.CallTool(ctx, "stuck", "echo", nil); return err }},
		{"up", "call tool echo", context.Canceled, func() error { _, err := m.CallTool(canceled, "up", "echo", nil); return err }},
		{"up", "call tool crash", ErrOutcomeUnknown, func() error { _, err := m.CallTool(ctx, "up", "crash", nil); return err }},
	} {
		t.Run(tt.op+"/"+tt.server, func(t *testing.T) {
			err := tt.err()
			var se *ServerError
			if !errors.As(err, &se) || se.Server != tt.server || se.Op != tt.op {
				t.Fatalf("%v: want a *ServerError for server %q, op %q; got %#v", err, tt.server, tt.op, se)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("%v: does not match %v", err, tt.want)
			}
			msg := err.Error()
			if want := `mcpfleet: server "` + tt.server + `": ` + tt.op + ": "; !strings.HasPrefix(msg, want) {
				t.Fatalf("%q does not begin with %q", msg, want)
			}
			if n := strings.Count(msg, "mcpfleet: "); n != 1 {
				t.Fatalf("%q has %d prefixes, want one", msg, n)
			}
			if n := strings.Count(msg, `"`+tt.server+`"`); n != 1 {
				t.Fatalf("%q names the server %d times, want once", msg, n)
			}
		})
	}
	var ue *UnavailableError
	if _, err := m.CallTool(ctx, "stuck", "echo", nil); !errors.As(err, &ue) || ue.Server != "stuck" {
		t.Fatalf("errors.As *UnavailableError: %v", err)
	}
}
