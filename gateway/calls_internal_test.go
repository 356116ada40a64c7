package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
)

// testSession is a downstream MCP session with nothing behind it.
type testSession struct{ id string }

func (testSession) Initialize()                                         {}
func (testSession) Initialized() bool                                   { return true }
func (testSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s testSession) SessionID() string                                 { return s.id }

// TestSessionEndCancelsItsCalls: the end of a downstream session cancels
// the upstream context of each of its calls in flight, with
// errSessionEnded, and no other session's; a call registered while its
// session was ending (after the end's walk of the calls) is cancelled
// at once.
func TestSessionEndCancelsItsCalls(t *testing.T) {
	m := client.New()
	defer m.Close()
	g := New(m)
	defer g.Close()

	mine, other := testSession{"mine"}, testSession{"other"}
	ctx := g.srv.WithContext(context.Background(), mine)
	octx := g.srv.WithContext(context.Background(), other)
	c1, err := g.start(ctx, "tools/call", "a", "t", true)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := g.start(ctx, "prompts/get", "b", "p", false)
	if err != nil {
		t.Fatal(err)
	}
	o, err := g.start(octx, "tools/call", "a", "t", true)
	if err != nil {
		t.Fatal(err)
	}
	g.sessionUnregistered(ctx, mine)
	for _, c := range []*call{c1, c2} {
		if cause := context.Cause(c.ctx); !errors.Is(cause, errSessionEnded) {
			t.Fatalf("call on %s after its session ended: cause %v", c.server, cause)
		}
		g.finish(c, nil, nil)
	}
	if err := o.ctx.Err(); err != nil {
		t.Fatalf("another session's call: %v", err)
	}
	g.finish(o, nil, nil)

	// The session is found (as a request that began before its end
	// finds it), but the end's walk of the calls has passed.
	late := testSession{"late"}
	lctx := g.srv.WithContext(context.Background(), late)
	ls, err := g.sessions.of(lctx)
	if err != nil {
		t.Fatal(err)
	}
	ls.ended.Store(true)
	c, err := g.start(lctx, "tools/call", "a", "t", true)
	if err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(c.ctx); !errors.Is(cause, errSessionEnded) {
		t.Fatalf("call registered after its session's end: cause %v", cause)
	}
	g.finish(c, nil, nil)
}
