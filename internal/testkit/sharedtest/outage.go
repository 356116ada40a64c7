package sharedtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// StoreOutage: the store slow (paused), then unreachable (stopped), then
// back. Meanwhile calls go on with what the process holds (the token in
// memory), a server is added and another authorized; a refresh, which
// needs the grant's lease, fails with an error that names the store.
// Once the store is back nothing is lost: the refresh goes through (once),
// the token of the authorization made during the outage and the catalog
// of the server added during it are in the store.
func StoreOutage(t *testing.T, b Backend) {
	ctx := testCtx(t)
	st := b.Open(t)
	srv := oauthtest.Start(t, oauthtest.Options{})
	var log logs
	// Calls wait 3 s for a server that is not Connected, and redials come
	// within half a second: the scenario takes seconds.
	m := newManager(t, client.WithSharedState(st), client.WithUser("alice"), client.WithLogger(log.logger()),
		client.WithTimeouts(client.Timeouts{Ready: 3 * time.Second}), client.WithPolicy(lifecycle.Policy{InitialInterval: 50 * time.Millisecond,
			MaxInterval: 500 * time.Millisecond, MaxAttempts: -1}))
	if err := m.Add(ctx, "s", oauthSpec(srv)); err != nil {
		t.Fatal(err)
	}
	authorize(t, m, "s")
	echo(t, m, "s", "before")

	// Slow: nothing the calls need is asked of the store.
	b.Pause()
	for i := range 5 {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := tryEcho(cctx, m, "s", "paused")
		cancel()
		if err != nil {
			b.Resume()
			t.Fatalf("call %d with the store paused: %v", i, err)
		}
	}
	b.Resume()

	// Unreachable.
	b.Stop(t)
	for range 5 {
		echo(t, m, "s", "stopped")
	}
	plain := httpserver.Start(t, httpserver.MCPGo)
	spec := client.ServerSpec{HTTP: &mcphttp.Spec{URL: plain.URL()}}
	if err := m.Add(ctx, "p", spec); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "p", lifecycle.Connected)
	srv2 := oauthtest.Start(t, oauthtest.Options{})
	if err := m.Add(ctx, "s2", oauthSpec(srv2)); err != nil {
		t.Fatal(err)
	}
	authorize(t, m, "s2")
	echo(t, m, "s2", "authorized while the store was down")
	// The token is due: its refresh needs the grant's lease.
	srv.ExpireAccessTokens()
	err := tryEcho(ctx, m, "s", "expired")
	if err == nil {
		t.Fatal("a call that needs a refresh went through while the store was down")
	}
	if !strings.Contains(err.Error(), st.Name()) {
		t.Errorf("the error does not name the store %q: %v", st.Name(), err)
	}
	if n := srv.Grants("refresh_token"); n != 0 {
		t.Errorf("%d refreshes without the lease", n)
	}

	t.Logf("a call that needs a refresh, the store down: %v", err)
	b.Start(t)
	// The refresh goes through once the store answers; every call works.
	for {
		err := tryEcho(ctx, m, "s", "back")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the server did not come back with the store: %v", err)
		}
	}
	mustWait(t, m, "s", lifecycle.Connected)
	if n := srv.Grants("refresh_token"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	// What was owed to the store is there: the token of s2, written at its
	// next request, and the catalog of p, written by the cache's retry (or
	// at Close).
	for {
		echo(t, m, "s2", "back")
		if _, ok, _ := st.LoadToken(ctx, store.TokenKey{User: "alice", Server: "s2"}); ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the token of the authorization made while the store was down never reached it")
		case <-time.After(100 * time.Millisecond): // the owed write is tried once a second
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	plain.Stop()
	other := newManager(t, client.WithSharedState(b.Open(t)))
	if err := other.Add(ctx, "p", spec); err != nil {
		t.Fatal(err)
	}
	if st, _ := other.Status("p"); !st.Cached {
		t.Error("the catalog of the server added while the store was down is not in the store")
	}
	if out := log.String(); !strings.Contains(out, st.Name()) {
		t.Errorf("no log line names the store:\n%s", out)
	}
}
