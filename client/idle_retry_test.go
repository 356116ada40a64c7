package client

import (
	"context"
	"net/http/httptrace"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// idleConns counts, through a ClientTrace on the caller's context (which
// reaches the HTTP requests a call makes), the connections that came out
// of the pool idle and those dialed fresh.
type idleConns struct {
	mu          sync.Mutex
	idle, fresh int
}

func (c *idleConns) ctx(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if info.Reused && info.WasIdle {
				c.idle++
			} else {
				c.fresh++
			}
		},
	})
}

// resent reports whether the call went out on an idle connection and then
// on a fresh one: what the transport does when the idle one was dead.
func (c *idleConns) resent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.idle == 1 && c.fresh == 1
}

// TestHTTPRestartIdleConnNoError restarts an mcp-go stateful HTTP server
// that declares no list_changed 50 times on the same port, with a call
// right after each restart. On 2026-07-28 there is then no notification
// stream, so nothing tells the Manager of the restart and the call goes
// out on the old runtime's pool, whose keep-alive connections the old
// server closed: without the transport's resend, a call that wins the race
// against the pool noticing the close fails with EOF, which the Manager
// reports as ErrOutcomeUnknown. The caller must see no error.
func TestHTTPRestartIdleConnNoError(t *testing.T) {
	srv := httpserver.StartQuiet(t, httpserver.QuietOptions{})
	m := newTestManager(t, WithPolicy(httpPolicy), WithTimeouts(Timeouts{Ready: httpReadyTimeout}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}})
	mustWait(t, m, "s", lifecycle.Connected)
	ctx := testCtx(t)
	if _, err := m.CallTool(ctx, "s", "echo", map[string]any{"message": "before"}); err != nil {
		t.Fatalf("CallTool before any restart: %v", err)
	}

	const restarts = 50
	resent := 0
	for i := range restarts {
		srv.Restart(t)
		conns := &idleConns{}
		res, err := m.CallTool(conns.ctx(ctx), "s", "echo", map[string]any{"message": "after"})
		if err != nil {
			t.Fatalf("restart %d: CallTool: %v (states %v)", i, err, states(rec.snapshot(), "s"))
		}
		if res.IsError || text(res) != "after" {
			t.Fatalf("restart %d: CallTool = %q (IsError %v), want \"after\"", i, text(res), res.IsError)
		}
		if conns.resent() {
			resent++
		}
	}
	st, err := m.Status("s")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d calls met a dead idle connection and were resent; generation %d", resent, restarts, st.Generation)
}
