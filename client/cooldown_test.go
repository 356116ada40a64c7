package client

import (
	"context"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// The shared cooldown names an upstream by its URL without what differs
// per user (userinfo, query, fragment), and reads one schedule for every
// replica: the policy's backoff without jitter, capped. The cooldown
// across replicas, counted at the upstream, and the wake-up are
// internal/testkit/sharedtest's, run on every shared store.
func TestCooldownKeyAndSteps(t *testing.T) {
	key := func(u string) string { return cooldownKey(ServerSpec{HTTP: &mcphttp.Spec{URL: u}}) }
	base := key("https://mcp.example.com/mcp")
	for _, u := range []string{"https://alice:pw@mcp.example.com/mcp", "https://mcp.example.com/mcp?token=secret", "https://mcp.example.com/mcp#x"} {
		if key(u) != base {
			t.Errorf("%s: another upstream than its URL without per-user parts", u)
		}
	}
	if key("https://mcp.example.com/other") == base || key("https://mcp2.example.com/mcp") == base {
		t.Error("two upstreams, one key")
	}
	if k := cooldownKey(ServerSpec{Stdio: &stdio.Spec{Command: "x"}}); k != "" {
		t.Errorf("a stdio server has a shared cooldown: %q", k)
	}
	p := lifecycle.Policy{InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, Multiplier: 2, Jitter: 0.5}
	var got []time.Duration
	for n := range 6 {
		got = append(got, cooldownStep(p, n))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps %v, want %v", got, want)
		}
	}
}

// TestUserFailureKeepsToItsUser: a user whose credentials the upstream
// refuses (401) delays no other user's connect: the server answered, so
// its shared cooldown stays clear, and the failure counts in the user's
// own, which another replica of that user waits for. A failure of the
// server itself (503) is still everyone's. The clock never moves: a
// connect that waited for a cooldown would never come.
func TestUserFailureKeepsToItsUser(t *testing.T) {
	var failing atomic.Bool   // the server fails for everyone
	var requests atomic.Int64 // of alice's good token
	s := server.NewMCPServer("crm", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("ping"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("pong"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("Authorization") == "Bearer good-alice" {
			requests.Add(1)
		}
		switch {
		case failing.Load():
			nethttp.Error(w, "down", nethttp.StatusServiceUnavailable)
		case !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer good-"):
			nethttp.Error(w, "bad token", nethttp.StatusUnauthorized)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	shared := store.NewMemory()
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	policy := lifecycle.Policy{InitialInterval: time.Minute, MaxInterval: time.Hour, MaxAttempts: -1}
	spec := func(token string) ServerSpec {
		return ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + token}}}
	}
	manager := func(user string) *Manager {
		return newTestManager(t, WithSharedState(shared), WithUser(user), WithClock(clock), WithPolicy(policy))
	}
	failed := func(m *Manager, server string) {
		t.Helper()
		rec := record(m)
		mustAdd(t, m, server, spec("bad"))
		rec.wait(t, func(e Event) bool { return e.Kind == EventRetry && e.Server == server })
	}
	key := cooldownKey(spec(""))
	cooldown := func(key string) store.Cooldown {
		t.Helper()
		c, err := shared.Cooldown(testCtx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	alice := manager("alice")
	failed(alice, "crm") // 401: alice's own
	if c := cooldown(key); c.Attempts != 0 {
		t.Fatalf("alice's refused token put the upstream in cooldown: %+v", c)
	}
	if c := cooldown(userCooldownKey(key, "alice")); c.Attempts != 1 || !c.Until.After(clock.Now()) {
		t.Fatalf("alice's own cooldown: %+v", c)
	}
	bob := manager("bob")
	mustAdd(t, bob, "crm", spec("good-bob"))
	mustWait(t, bob, "crm", lifecycle.Connected) // at once: the clock has not moved

	// Another replica of alice's, with a good token now, waits out her
	// cooldown; then connects and clears it.
	alice2 := manager("alice")
	pending := clock.Pending()
	mustAdd(t, alice2, "crm", spec("good-alice"))
	if err := clock.WaitForTimers(testCtx(t), pending+1); err != nil { // the replica waits on the clock
		t.Fatal(err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("alice's replica dialed %d times during her cooldown", n)
	}
	clock.Advance(time.Minute)
	mustWait(t, alice2, "crm", lifecycle.Connected)
	if c := cooldown(userCooldownKey(key, "alice")); c.Attempts != 0 {
		t.Fatalf("alice's cooldown after her connect: %+v", c)
	}

	// The server down: everyone's. The others are closed first: a runtime
	// of theirs that noticed the server down, or alice's retry (due now),
	// would dial it, fail with the 503 and put the upstream in cooldown
	// before carol's first dial, which would then wait for the clock,
	// which never moves. On a loaded machine one of them did.
	for _, m := range []*Manager{alice, bob, alice2} {
		m.Close()
	}
	failing.Store(true)
	failed(manager("carol"), "crm")
	if c := cooldown(key); c.Attempts != 1 {
		t.Fatalf("a 503 did not put the upstream in cooldown: %+v", c)
	}
	if c := cooldown(userCooldownKey(key, "carol")); c.Attempts != 0 {
		t.Fatalf("a 503 counted as carol's own: %+v", c)
	}
}

// A dial that its own Manager gives up (Close, Remove, Disable: the loop's
// end) found nothing about the upstream, so it leaves the shared cooldown
// as it was: recorded as a failure, it would make every other replica's
// first connect wait out a backoff for an upstream that never failed.
func TestCancelledDialLeavesNoCooldown(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		// Read: net/http notices a client gone (and ends r's context)
		// only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done() // hangs until the client gives up
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	spec := ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL + "/mcp"}}
	for _, stop := range []string{"close", "remove", "disable"} {
		t.Run(stop, func(t *testing.T) {
			shared := store.NewMemory()
			m := newTestManager(t, WithSharedState(shared))
			mustAdd(t, m, "up", spec)
			select {
			case <-arrived: // the dial is in flight
			case <-testCtx(t).Done():
				t.Fatal("no dial reached the server")
			}
			var err error
			switch stop {
			case "close":
				err = m.Close()
			case "remove":
				err = m.Remove(testCtx(t), "up")
			case "disable":
				err = m.Disable(testCtx(t), "up")
			}
			if err != nil {
				t.Fatal(err)
			}
			m.Close() // waits for the loop, and what it recorded
			c, err := shared.Cooldown(testCtx(t), cooldownKey(spec))
			if err != nil {
				t.Fatal(err)
			}
			if c.Attempts != 0 {
				t.Fatalf("a dial given up by %s put the upstream in cooldown: %+v", stop, c)
			}
		})
	}
}
