package client

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// hookedServer is mcp-go's stateful streamable HTTP server (404 for a
// session it does not know), with logging and resource subscriptions,
// counting the requests it gets by method, behind a proxy that breaks
// connections. restart replaces it with a new one behind the same
// address, which knows none of the old one's sessions.
type hookedServer struct {
	t     *testing.T
	proxy *faultinject.HTTPProxy

	mu     sync.Mutex // guards the fields below
	counts map[string]int
	wait   map[string]chan struct{} // closed at the next request of the method
}

func startHookedServer(t *testing.T) *hookedServer {
	h := &hookedServer{t: t, counts: map[string]int{}, wait: map[string]chan struct{}{}}
	h.proxy = faultinject.StartHTTPProxy(t, h.start())
	return h
}

// start starts a new server and returns its URL.
func (h *hookedServer) start() string {
	hooks := &server.Hooks{}
	hooks.AddBeforeAny(func(_ context.Context, _ any, method mcp.MCPMethod, _ any) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.counts[string(method)]++
		if ch, ok := h.wait[string(method)]; ok {
			close(ch)
			delete(h.wait, string(method))
		}
	})
	s := server.NewMCPServer("hooked", "1.0.0", server.WithHooks(hooks), server.WithLogging(),
		server.WithResourceCapabilities(true, true), server.WithToolCapabilities(true))
	s.AddResource(mcp.NewResource("res://a", "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "res://a", Text: "a"}}, nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("message", "")), nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateful(true)))
	h.t.Cleanup(hs.Close)
	return hs.URL
}

// restart puts a new server behind the proxy, and starts counting anew.
func (h *hookedServer) restart() {
	h.mu.Lock()
	h.counts = map[string]int{}
	h.mu.Unlock()
	if err := h.proxy.SetTarget(h.start()); err != nil {
		h.t.Fatal(err)
	}
}

// next returns a channel closed at the next request of method.
func (h *hookedServer) next(method string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.wait[method]
	if !ok {
		ch = make(chan struct{})
		h.wait[method] = ch
	}
	return ch
}

func (h *hookedServer) count(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[method]
}

// what the host asked of the session, as the server counted it.
func (h *hookedServer) asked() [3]int {
	return [3]int{h.count("initialize"), h.count("logging/setLevel"), h.count("resources/subscribe")}
}

// The session state the host set (a logging level, a resource
// subscription) stays with the server across a cut (the stream reopened,
// the slot Connected all along) and a partition (the slot Reconnecting
// while the server cannot be reached, then a runtime that rejoins the
// session): nothing is sent again, and no session is created or deleted.
// After a restart, which forgets the session, a new session gets both
// again, once. Disable then ends the session with a DELETE.
func TestSessionStateKeptAcrossBlips(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	h := startHookedServer(t)
	// Sessions are of the older protocol: pinned to it, as a host does
	// for a server that keeps state in them.
	m := newTestManager(t, WithHTTPOptions(mcphttp.WithLegacyProtocol()))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: h.proxy.URL("/mcp")}})
	mustWait(t, m, "s", lifecycle.Connected)
	if err := m.SetLevel(ctx, "s", mcp.LoggingLevelDebug); err != nil {
		t.Fatal(err)
	}
	if err := m.SubscribeResource(ctx, "s", "res://a"); err != nil {
		t.Fatal(err)
	}
	if got := h.asked(); got != [3]int{1, 1, 1} {
		t.Fatalf("initialize, setLevel, subscribe: %v", got)
	}

	// A cut: the stream is reopened in the session, and the lists are
	// fetched again (notifications may have been lost meanwhile).
	refreshed := h.next("tools/list")
	if n := h.proxy.Cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	select {
	case <-refreshed:
	case <-ctx.Done():
		t.Fatal("no refresh after the stream was reopened")
	}
	if got := h.asked(); got != [3]int{1, 1, 1} {
		t.Errorf("after a cut: initialize, setLevel, subscribe %v, want nothing sent again", got)
	}
	noReconnect(t, rec, "s")
	mustHTTPEcho(ctx, t, m, httpTarget{wantEcho: "hi"}, "hi")

	// A partition: the server cannot be reached; the slot reconnects,
	// and the new runtime rejoins the session.
	h.proxy.Down()
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting")
	h.proxy.Up()
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	mustHTTPEcho(ctx, t, m, httpTarget{wantEcho: "hi"}, "hi")
	if got := h.asked(); got != [3]int{1, 1, 1} {
		t.Errorf("after a partition: initialize, setLevel, subscribe %v, want nothing sent again", got)
	}
	st := m.Stats().Servers[0]
	if st.Rejoined != 1 || len(h.proxy.Sessions()) != 1 || len(h.proxy.Deletes()) != 0 {
		t.Errorf("rejoined %d, sessions %v, deletes %v; want 1, one, none", st.Rejoined, h.proxy.Sessions(), h.proxy.Deletes())
	}

	// A restart forgets the session: a new one, told both again.
	h.restart()
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected", "Reconnecting", "Connected")
	mustHTTPEcho(ctx, t, m, httpTarget{wantEcho: "hi"}, "hi")
	if got := h.asked(); got != [3]int{1, 1, 1} {
		t.Errorf("after a restart: initialize, setLevel, subscribe %v, want each once", got)
	}
	sessions := h.proxy.Sessions()
	if len(sessions) != 2 || len(h.proxy.Deletes()) != 0 {
		t.Fatalf("sessions %v, deletes %v; want two, none", sessions, h.proxy.Deletes())
	}

	// The host ends the session.
	if err := m.Disable(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if d := h.proxy.Deletes(); !slices.Equal(d, sessions[1:]) {
		t.Errorf("DELETEs %v after Disable, want %v", d, sessions[1:])
	}
}
