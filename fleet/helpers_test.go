package fleet_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestMain(m *testing.M) {
	if os.Getenv(envServeNotes) != "" {
		serveNotes() // the test binary as a stdio server (notesCommand)
		return
	}
	goleak.VerifyTestMain(m)
}

// upstream is an mcp-go streamable HTTP server on 127.0.0.1 with one tool,
// whoami, that answers with the Authorization header it got: what a
// user's fleet sent. Its requests can be held at the door (Gate) to show
// what a fleet has before any connect.
type upstream struct {
	srv      *httptest.Server
	requests atomic.Int64 // requests past the gate, to the MCP server

	mu   sync.Mutex
	gate chan struct{} // non-nil: requests wait until it is closed
}

func startUpstream(t testing.TB) *upstream {
	t.Helper()
	s := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Says who the caller is.")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.Header.Get("Authorization")), nil
		})
	h := server.NewStreamableHTTPServer(s)
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

func (u *upstream) URL() string { return u.srv.URL + "/mcp" }

// Close holds every request from now on until Open.
func (u *upstream) Close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gate == nil {
		u.gate = make(chan struct{})
	}
}

// Open lets the held requests, and every later one, through.
func (u *upstream) Open() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.gate != nil {
		close(u.gate)
		u.gate = nil
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closes records the pool's OnClose calls, in order.
type closes struct {
	ch chan string // "user why"
}

func newCloses() *closes { return &closes{ch: make(chan string, 64)} }

func (c *closes) hook(user string, why fleet.Reason) { c.ch <- user + " " + why.String() }

// next waits for the next close.
func (c *closes) next(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case s := <-c.ch:
		return s
	case <-ctx.Done():
		t.Fatal("no fleet was closed")
		return ""
	}
}

// none checks that no close was reported.
func (c *closes) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-c.ch:
		t.Fatalf("unexpected close: %s", s)
	default:
	}
}

// newPool makes a pool of cfg, closed with t.
func newPool(t *testing.T, cfg fleet.Config) *fleet.Pool {
	t.Helper()
	p, err := fleet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p
}

func mustTemplate(t *testing.T, json string) *fleet.Template {
	t.Helper()
	tmpl, err := fleet.ParseTemplate([]byte(json), client.WithSource("template.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func get(t *testing.T, ctx context.Context, p *fleet.Pool, user string) *fleet.Fleet {
	t.Helper()
	f, err := p.Get(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// whoami calls the whoami tool of server on f, once it is Connected.
func whoami(t *testing.T, ctx context.Context, f *fleet.Fleet, server string) string {
	t.Helper()
	m := f.Manager()
	if err := m.WaitFor(ctx, server, lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	res, err := m.CallTool(ctx, server, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(mcp.TextContent).Text
}
