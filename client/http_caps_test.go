package client

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// A server that declares no list_changed capability has nothing to stream.
// Asking it to stream what it does not offer must not make the connection
// look dead: the slot stays on its first runtime and calls go through.
func TestHTTPServerWithoutListChangedStaysConnected(t *testing.T) {
	eachHTTPProtocol(t, func(t *testing.T, opts []Option) {
		s := server.NewMCPServer("plain", "1.0", server.WithToolCapabilities(false))
		s.AddTool(mcp.NewTool("echo", mcp.WithString("text")),
			func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(r.GetString("text", "")), nil
			})
		srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
		t.Cleanup(srv.Close) // after the manager's Close: it waits for open streams
		m := newTestManager(t, opts...)
		rec := record(m)
		mustAdd(t, m, "plain", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
		mustWait(t, m, "plain", lifecycle.Connected)
		for range 5 {
			if _, err := m.CallTool(testCtx(t), "plain", "echo", map[string]any{"text": "x"}); err != nil {
				t.Fatalf("call: %v (states %v)", err, states(rec.snapshot(), "plain"))
			}
		}
		if st, _ := m.Status("plain"); st.Generation != 1 || st.State != lifecycle.Connected {
			t.Fatalf("status %v generation %d, want Connected on generation 1; states %v",
				st.State, st.Generation, states(rec.snapshot(), "plain"))
		}
	})
}

// eachHTTPProtocol runs f as a subtest for 2026-07-28 and for the older
// protocol, with the Manager options that choose it.
func eachHTTPProtocol(t *testing.T, f func(t *testing.T, opts []Option)) {
	for _, legacy := range []bool{false, true} {
		name := "protocol=2026-07-28"
		var opts []Option
		if legacy {
			name = "protocol=legacy"
			opts = append(opts, WithHTTPOptions(mcphttp.WithLegacyProtocol()))
		}
		t.Run(name, func(t *testing.T) { f(t, opts) })
	}
}
