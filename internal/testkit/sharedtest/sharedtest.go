// Package sharedtest runs, against a shared store (store.Memory, and the
// Redis and Postgres stores of the nested modules on their real servers),
// what the Managers of several replicas or users do through it: the
// authorization after the authorization server forgot everything, the
// store unreachable or slow, corrupt records, the cooldown of an upstream
// that is down (counted at the upstream), and the wake-up that brings the
// replicas back. storetest checks the stores' own promises; this checks
// what a host sees.
package sharedtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// Backend is a shared store under test.
type Backend struct {
	// Open opens a new client of the store, as each replica has its own;
	// it is closed when t ends.
	Open func(t *testing.T) store.Shared
	// Stop makes the store unreachable (connections refused); Start
	// brings it back, with its data or, for a Redis without persistence,
	// empty. Nil when the store cannot be stopped (store.Memory).
	Stop, Start func(t *testing.T)
	// Pause makes the store hang (connections accepted, nothing
	// answered) until Resume. Nil when it cannot.
	Pause, Resume func()
}

// Run runs every scenario on b.
func Run(t *testing.T, b Backend) {
	t.Run("AuthorizationServerForgot", func(t *testing.T) {
		AuthorizationServerForgot(t, client.WithSharedState(b.Open(t)), client.WithUser("alice"))
	})
	t.Run("CorruptRecords", func(t *testing.T) { CorruptRecords(t, b) })
	t.Run("Cooldown", func(t *testing.T) { Cooldown(t, b) })
	t.Run("WakeUp", func(t *testing.T) { WakeUp(t, b) })
	if b.Stop != nil && b.Pause != nil {
		t.Run("StoreOutage", func(t *testing.T) { StoreOutage(t, b) })
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newManager returns a Manager of opts, closed when t ends.
func newManager(t *testing.T, opts ...client.Option) *client.Manager {
	m := client.New(append([]client.Option{client.WithTimeouts(client.Timeouts{IdleProbe: -1, Ready: 20 * time.Second})}, opts...)...)
	t.Cleanup(func() { m.Close() })
	return m
}

func mustWait(t *testing.T, m *client.Manager, name string, want lifecycle.State) {
	t.Helper()
	if err := m.WaitFor(testCtx(t), name, want); err != nil {
		st, _ := m.Status(name)
		t.Fatalf("%s: waiting for %v: %v (state %v, last error %v)", name, want, err, st.State, st.LastError)
	}
}

func oauthSpec(srv *oauthtest.Server) client.ServerSpec {
	return client.ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}, OAuth: &oauth.Config{}}
}

// authorize runs the authorization of server name as a host does when it
// sees NeedsAuthorization, and waits for Connected.
func authorize(t *testing.T, m *client.Manager, name string) {
	t.Helper()
	mustWait(t, m, name, lifecycle.NeedsAuthorization)
	ctx := testCtx(t)
	u, err := m.StartAuthorization(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	redirect, err := oauthtest.Approve(ctx, u)
	if err != nil {
		t.Fatalf("the user approving at the authorization URL: %v", err)
	}
	if err := m.CompleteAuthorization(ctx, name, redirect); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, name, lifecycle.Connected)
}

// echo calls server name's echo tool and checks the answer.
func echo(t *testing.T, m *client.Manager, name, msg string) {
	t.Helper()
	if err := tryEcho(testCtx(t), m, name, msg); err != nil {
		t.Fatal(err)
	}
}

func tryEcho(ctx context.Context, m *client.Manager, name, msg string) error {
	res, err := m.CallTool(ctx, name, "echo", map[string]any{"message": msg})
	if err != nil {
		return err
	}
	if res.IsError {
		return &toolError{name}
	}
	return nil
}

type toolError struct{ server string }

func (e *toolError) Error() string { return e.server + ": the echo tool failed" }

// AuthorizationServerForgot: after the authorization server restarts
// having forgotten every token and client registration (and the MCP
// server answers the token it no longer knows with a 500, as the
// TypeScript SDK's example server does), the server goes to
// NeedsAuthorization after one refused refresh (not a budget of
// retries), the next authorization registers the client again, and the
// server is Connected. opts choose the token store.
func AuthorizationServerForgot(t *testing.T, opts ...client.Option) {
	srv := oauthtest.Start(t, oauthtest.Options{ServerErrorForBadTokens: true})
	m := newManager(t, opts...)
	if err := m.Add(testCtx(t), "s", oauthSpec(srv)); err != nil {
		t.Fatal(err)
	}
	authorize(t, m, "s")
	echo(t, m, "s", "before")
	if n := srv.Registrations(); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}

	srv.RestartForgetting(t)
	mustWait(t, m, "s", lifecycle.NeedsAuthorization)
	authorize(t, m, "s")
	echo(t, m, "s", "after")
	if n := srv.Registrations(); n != 2 {
		t.Errorf("%d registrations, want 2: the forgotten one dropped, a new one made", n)
	}
	if n := srv.Grants("refresh_token"); n != 0 {
		t.Errorf("%d refreshes granted", n)
	}
	if st, _ := m.Status("s"); st.Generation > 3 {
		t.Errorf("generation %d: the server was dialled more than needed", st.Generation)
	}
}

// logs is a Manager's log, to look for what it reported.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// recording is a store that tells the keys of the catalogs saved in it.
type recording struct {
	store.Shared
	mu   sync.Mutex
	keys []string
}

func (r *recording) SaveCatalog(ctx context.Context, key string, data []byte) error {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	return r.Shared.SaveCatalog(ctx, key, data)
}

// CorruptRecords: a corrupt credentials document and a corrupt catalog in
// the store are reported (in the log, naming the store) and ignored, not
// trusted: the server needs the user as if there were none, no cached
// catalog is published; the next authorization writes a good document.
func CorruptRecords(t *testing.T, b Backend) {
	ctx := testCtx(t)
	st := b.Open(t)
	srv := oauthtest.Start(t, oauthtest.Options{})
	k := store.TokenKey{User: "alice", Server: "s", Issuer: srv.Issuer()}
	const garbage = `{"token": {"access_token": "planted-secret-token"` // torn
	if err := st.SaveToken(ctx, k, store.TokenRecord{Data: []byte(garbage), Fence: 1}); err != nil {
		t.Fatal(err)
	}
	var log logs
	m := newManager(t, client.WithSharedState(st), client.WithUser("alice"), client.WithLogger(log.logger()))
	if err := m.Add(ctx, "s", oauthSpec(srv)); err != nil {
		t.Fatal(err)
	}
	authorize(t, m, "s") // NeedsAuthorization first: the planted document was not used
	if out := log.String(); !strings.Contains(out, "corrupt") || !strings.Contains(out, st.Name()) {
		t.Errorf("the corrupt credentials were not reported naming the store:\n%s", out)
	}
	if strings.Contains(log.String(), "planted-secret-token") {
		t.Error("the log quotes the corrupt document")
	}
	r, ok, err := st.LoadToken(ctx, store.TokenKey{User: "alice", Server: "s"})
	var e oauth.Entry
	if err != nil || !ok || json.Unmarshal(r.Data, &e) != nil || e.Token == nil {
		t.Errorf("after the authorization the store holds no good document: %v %v", ok, err)
	}

	// A catalog: saved by one Manager, corrupted, not published by the next.
	plain := httpserver.Start(t, httpserver.MCPGo)
	spec := client.ServerSpec{HTTP: &mcphttp.Spec{URL: plain.URL()}}
	rec := &recording{Shared: b.Open(t)}
	first := newManager(t, client.WithSharedState(rec))
	if err := first.Add(ctx, "p", spec); err != nil {
		t.Fatal(err)
	}
	mustWait(t, first, "p", lifecycle.Connected)
	first.Close() // writes its catalog
	rec.mu.Lock()
	keys := rec.keys
	rec.mu.Unlock()
	if len(keys) == 0 {
		t.Fatal("no catalog was saved")
	}
	for _, key := range keys {
		if err := rec.SaveCatalog(ctx, key, []byte(`{"key": 7, "tools": [`)); err != nil {
			t.Fatal(err)
		}
	}
	plain.Stop()
	var log2 logs
	second := newManager(t, client.WithSharedState(b.Open(t)), client.WithLogger(log2.logger()))
	if err := second.Add(ctx, "p", spec); err != nil {
		t.Fatal(err)
	}
	if st, _ := second.Status("p"); st.Cached || second.View().NumTools() != 0 {
		t.Errorf("a corrupt catalog was published: cached %v, %d tools", st.Cached, second.View().NumTools())
	}
	if out := log2.String(); !strings.Contains(out, "corrupt") {
		t.Errorf("the corrupt catalog was not reported:\n%s", out)
	}
}

// upstream is an MCP server on 127.0.0.1 that is down (it answers every
// request with 503) or up (mcp-go's streamable HTTP server). While down
// it counts the connects it receives: the requests that open one (the
// first of each dial: server/discover on 2026-07-28, or initialize).
type upstream struct {
	ln     net.Listener
	srv    *http.Server
	served chan struct{}
	up     atomic.Bool
	// admit, if set, says whether a request to the server, up, is served
	// (else refused as while down). Set before the first request.
	admit func(*http.Request) bool

	mu      sync.Mutex
	methods map[string]int // while down: requests by JSON-RPC method
}

func startUpstream(t *testing.T) *upstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mcps := mcpserver.NewMCPServer("upstream", "1.0.0", mcpserver.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(mcps)
	h := mcpserver.NewStreamableHTTPServer(mcps)
	u := &upstream{ln: ln, served: make(chan struct{}), methods: map[string]int{}}
	u.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.up.Load() && (u.admit == nil || u.admit(r)) {
			h.ServeHTTP(w, r)
			return
		}
		var msg struct {
			Method string `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		_ = json.Unmarshal(body, &msg)
		u.mu.Lock()
		u.methods[r.Method+" "+msg.Method]++
		u.mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
	})}
	go func() {
		defer close(u.served)
		_ = u.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = u.srv.Shutdown(ctx)
		<-u.served
		_ = h.Shutdown(ctx)
	})
	return u
}

func (u *upstream) URL() string { return "http://" + u.ln.Addr().String() + "/mcp" }

// connects returns how many connects reached the upstream while it was
// down, and every request by method, for the log. A connect sends
// server/discover and, refused, initialize (one that learned the server
// speaks only the older protocol, initialize alone): the larger count is
// the connects.
func (u *upstream) connects() (int, map[string]int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	all := make(map[string]int, len(u.methods))
	for k, v := range u.methods {
		all[k] = v
	}
	return max(all["POST server/discover"], all["POST initialize"]), all
}
