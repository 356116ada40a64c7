package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// A change the server made while nothing could tell the Manager of it
// shows in the catalog once the notification stream is open again in the
// session: the stream may have missed the list_changed, so its reopening
// is taken as one for every list. Here the server announces no list
// changes at all (listChanged false), so the reopening is the only news
// the Manager gets: without its refetch the added tool never shows.
func TestStreamReopenRefetchesTheLists(t *testing.T) {
	s := server.NewMCPServer("quiet", "1.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("first"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("first"), nil
	})
	inner := server.NewStreamableHTTPServer(s, server.WithStateful(true))
	streams := make(chan struct{}, 16) // one per notification stream opened
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			streams <- struct{}{}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the manager's Close: it waits for open streams
	proxy := faultinject.StartHTTPProxy(t, srv.URL)

	m := newTestManager(t, WithHTTPOptions(mcphttp.WithLegacyProtocol()))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: proxy.URL("/mcp")}})
	mustWait(t, m, "s", lifecycle.Connected)
	ctx := testCtx(t)
	awaitStream := func(what string) {
		t.Helper()
		select {
		case <-streams:
		case <-ctx.Done():
			t.Fatalf("no notification stream %s: states %v", what, states(rec.snapshot(), "s"))
		}
	}
	awaitStream("opened")

	s.AddTool(mcp.NewTool("added"), nil) // announced to no one
	if n := proxy.Cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	awaitStream("reopened after the cut")
	rec.awaitPublished(t, m, "s", "s__added", "the tool added before the stream's reopening")
	noReconnect(t, rec, "s")
	if st := m.Stats().Servers[0]; st.Reopened < 1 || st.Reconnects != 0 {
		t.Errorf("stats: reopened %d, reconnects %d; want at least 1 and 0", st.Reopened, st.Reconnects)
	}
}
