package otel_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcpotel "github.com/mcpfleet/mcpfleet/otel"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// Over HTTP the span has the network attributes and the session ID (of a
// protocol version that has sessions); and a call that meets a stale
// session (the server restarted, and nothing told the Manager) is resent
// on a new runtime: one span, with a retry event whose cause is the stale
// session.
func TestHTTPSpansAndStaleSessionRetry(t *testing.T) {
	tel := newTelemetry(t)
	stateful := httpserver.Start(t, httpserver.MCPGoStateful)
	srv := httpserver.Start(t, httpserver.MCPGoSSE)
	m := newManager(t, tel, client.WithHTTPOptions(mcphttp.WithLegacyProtocol()))
	addConnected(t, m, tel, "direct", client.ServerSpec{HTTP: &mcphttp.Spec{URL: stateful.URL()}})
	d := &blindDialer{spec: mcphttp.Spec{URL: srv.URL(), Kind: mcphttp.SSE}}
	addConnected(t, m, tel, "blind", client.ServerSpec{Dialer: d.dial})
	ctx := testCtx(t)
	args := map[string]any{"message": "hi"}

	if _, err := m.CallTool(ctx, "direct", "echo", args); err != nil {
		t.Fatal(err)
	}
	s := tel.span(t, "tools/call echo")
	host, port, _ := net.SplitHostPort(stateful.Addr())
	got := attrs(s.Attributes())
	wantAttrs(t, "http", got, map[string]string{
		"mcpfleet.server":       "direct",
		"mcpfleet.transport":    "http",
		"network.transport":     "tcp",
		"network.protocol.name": "http",
		"server.address":        host,
		"server.port":           port,
	})
	if got["mcp.session.id"] == "" || got["mcp.protocol.version"] == "" {
		t.Errorf("no mcp.session.id or mcp.protocol.version in %v", got)
	}
	t.Logf("http span: %v", got)
	tel.spans.Reset()

	srv.Stop()
	d.awaitDead(t)
	srv.Restart(t)
	if _, err := m.CallTool(ctx, "blind", "echo", args); err != nil {
		t.Fatal(err)
	}
	var blind []string
	for _, s := range tel.spans.Ended() {
		if attrs(s.Attributes())["mcpfleet.server"] == "blind" {
			blind = append(blind, s.Name())
			got := attrs(s.Attributes())
			wantAttrs(t, "resent", got, map[string]string{"mcpfleet.generation": "2", "error.type": ""})
			ev := events(s, mcpotel.EventRetry)
			if len(ev) != 1 {
				t.Fatalf("events %v, want one retry", s.Events())
			}
			got = attrs(ev[0].Attributes)
			wantAttrs(t, "retry event", got, map[string]string{"mcpfleet.attempt": "2", "mcpfleet.generation": "2",
				"error.type": "stale_session"})
			t.Logf("retry event: %v", got)
		}
	}
	if len(blind) != 1 {
		t.Fatalf("spans of blind: %v, want one", blind)
	}
}

// blindConn hides the notification stream's loss from the Manager, as if
// the server offered no stream: the restart shows only at the next call.
type blindConn struct{ *mcphttp.Conn }

func (blindConn) Done() <-chan struct{} { return nil }
func (blindConn) Err() error            { return nil }

// blindDialer dials through the HTTP transport and blinds each Conn.
type blindDialer struct {
	spec mcphttp.Spec
	last atomic.Pointer[mcphttp.Conn] // the newest Conn, unblinded
}

func (d *blindDialer) dial(ctx context.Context) (transport.Conn, error) {
	c, err := mcphttp.Dial(ctx, d.spec, mcphttp.WithLogger(nil))
	if err != nil {
		return nil, err
	}
	d.last.Store(c)
	return blindConn{c}, nil
}

// awaitDead waits until the newest Conn itself knows its server is gone,
// so that the next request opens a new HTTP connection to whatever
// listens now.
func (d *blindDialer) awaitDead(t *testing.T) {
	t.Helper()
	select {
	case <-d.last.Load().Done():
	case <-testCtx(t).Done():
		t.Fatal("the Conn did not notice the stop")
	}
}
