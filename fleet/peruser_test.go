package fleet_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
)

// The stdio notes server is the test binary itself: TestMain serves it
// when envServeNotes is set.
const (
	envServeNotes = "FLEETTEST_NOTES"
	envNotesUser  = "FLEETTEST_NOTES_USER" // whose notes it shows
	envNotesHold  = "FLEETTEST_NOTES_HOLD" // an address it waits on before serving
)

// userServer is an MCP server whose catalog is the user's own: a tool
// open_case_USER and a resource notes://USER/merger-plan-USER.
func userServer(user string) *server.MCPServer {
	s := server.NewMCPServer("notes", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, true))
	s.AddTool(mcp.NewTool("open_case_"+user, mcp.WithDescription("Opens one of "+user+"'s cases.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(user), nil
		})
	uri := "notes://" + user + "/merger-plan-" + user
	s.AddResource(mcp.NewResource(uri, "merger plan"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "secret"}}, nil
	})
	return s
}

// serveNotes serves userServer(envNotesUser) on stdio, after the
// connection to envNotesHold (if set) is closed by the test.
func serveNotes() {
	if addr := os.Getenv(envNotesHold); addr != "" {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Read(make([]byte, 1)) // until the test lets go
			c.Close()
		}
	}
	server.ServeStdio(userServer(os.Getenv(envNotesUser)))
}

// hold is a listener whose connections wait until Release: the notes
// servers that dial it do not serve before.
type hold struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  bool
}

func newHold(t *testing.T) *hold {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hold{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			if h.done {
				c.Close()
			} else {
				h.conns = append(h.conns, c)
			}
			h.mu.Unlock()
		}
	}()
	t.Cleanup(h.Release)
	return h
}

// Release lets every held server, and every later one, serve.
func (h *hold) Release() {
	h.ln.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for _, c := range h.conns {
		c.Close()
	}
}

// perUserUpstream serves, on one URL, each user their own userServer,
// told apart by the Authorization header ("Bearer USER"); its requests
// can be held (the upstream's Close and Open).
func perUserUpstream(t *testing.T) *upstream {
	var mu sync.Mutex
	servers := map[string]http.Handler{}
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		gate := u.gate
		u.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || user == "" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		h := servers[user]
		if h == nil {
			h = server.NewStreamableHTTPServer(userServer(user))
			servers[user] = h
		}
		mu.Unlock()
		u.requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.Open()
		u.srv.CloseClientConnections()
		u.srv.Close()
	})
	return u
}

// leaks lists what of other's shows in f's fleet: tools and resources
// whose name or URI names other.
func leaks(f *fleet.Fleet, other string) []string {
	var out []string
	for c := range f.Manager().View().Catalogs() {
		for _, t := range c.Tools() {
			if strings.Contains(t.Name, other) {
				out = append(out, c.Server()+" tool "+t.Name)
			}
		}
		for _, r := range c.Resources() {
			if strings.Contains(r.URI, other) {
				out = append(out, c.Server()+" resource "+r.URI)
			}
		}
	}
	return out
}

// TestUserCredentialsKeepCatalogPerUser: servers whose address is the
// same for every user, the user told apart only by a header (crm) or an
// env value (notes), keep their catalogs per user: Bob's fleet never shows
// Alice's tool or resource, neither from the shared store before it
// connects nor after.
func TestUserCredentialsKeepCatalogPerUser(t *testing.T) {
	u := perUserUpstream(t)
	h := newHold(t)
	c := newCloses()
	tmpl := mustTemplate(t, `{"mcpServers": {
		"crm": {"url": "`+u.URL()+`", "headers": {"Authorization": "Bearer ${user:id}"}},
		"notes": {"command": "`+os.Args[0]+`", "env": {"`+envServeNotes+`": "1", "`+envNotesUser+`": "${user:id}",
			"`+envNotesHold+`": "${user:hold}"}}}}`)
	for _, server := range []string{"crm", "notes"} {
		if !tmpl.PerUser(server) {
			t.Errorf("%s is not per user", server)
		}
	}
	p := newPool(t, fleet.Config{Template: tmpl, Shared: store.NewMemory(), OnClose: c.hook,
		Values: func(_ context.Context, user string) (map[string]string, error) {
			if user == "bob" {
				return map[string]string{"hold": h.ln.Addr().String()}, nil
			}
			return map[string]string{"hold": ""}, nil
		}})
	ctx := testCtx(t)
	f := get(t, ctx, p, "alice")
	for _, server := range []string{"crm", "notes"} {
		if err := f.Manager().WaitFor(ctx, server, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	if got := leaks(f, "alice"); len(got) != 4 {
		t.Fatalf("alice's own fleet shows %v", got)
	}
	f.Release()
	p.Evict("alice") // its close writes the catalogs it holds
	c.next(t, ctx)

	u.Close() // bob's fleet cannot connect: what it shows comes from the store
	f = get(t, ctx, p, "bob")
	defer f.Release()
	if got := leaks(f, "alice"); len(got) > 0 {
		t.Fatalf("bob's fleet, before it connects, shows alice's %v", got)
	}
	for _, server := range []string{"crm", "notes"} {
		if st, _ := f.Manager().Status(server); st.Cached || st.State == lifecycle.Connected {
			t.Errorf("bob's %s before any connect: cached %v, %v", server, st.Cached, st.State)
		}
	}
	u.Open()
	h.Release()
	for _, server := range []string{"crm", "notes"} {
		if err := f.Manager().WaitFor(ctx, server, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	if got := leaks(f, "alice"); len(got) > 0 {
		t.Fatalf("bob's connected fleet shows alice's %v", got)
	}
	if got := leaks(f, "bob"); len(got) != 4 {
		t.Fatalf("bob's own: %v", got)
	}
}

// TestSharedCatalogsOptIn: SharedCatalogs must name servers of the
// template, and not servers UserCatalogs names too.
func TestSharedCatalogsOptIn(t *testing.T) {
	tmpl := mustTemplate(t, `{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "${user:id}"}},
		"b": {"url": "http://127.0.0.1:1/mcp"}}}`)
	if !tmpl.PerUser("a") || tmpl.PerUser("b") {
		t.Errorf("per user: a %v, b %v", tmpl.PerUser("a"), tmpl.PerUser("b"))
	}
	for _, tc := range []struct {
		cfg  fleet.Config
		want string
	}{
		{fleet.Config{Template: tmpl, SharedCatalogs: []string{"c"}}, `no server "c"`},
		{fleet.Config{Template: tmpl, SharedCatalogs: []string{"a"}, UserCatalogs: []string{"a"}}, "both"},
	} {
		if _, err := fleet.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg.SharedCatalogs, err, tc.want)
		}
	}
	oauth := mustTemplate(t, `{"mcpServers": {"o": {"url": "http://127.0.0.1:1/mcp", "oauth": {"clientId": "x"}}}}`)
	if !oauth.PerUser("o") {
		t.Error("an OAuth server is not per user")
	}
}
