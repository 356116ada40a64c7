package client

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// The case of the issue, tried as a new user would: the TypeScript SDK's
// example OAuth server (simpleStreamableHttp.js --oauth, of the pinned
// @modelcontextprotocol/sdk 1.32.2) restarts, forgetting its tokens and
// its client registrations, and answers the token it no longer knows with
// HTTP 500. The server goes to NeedsAuthorization at once (that server
// issues no refresh token: there is nothing to refresh), never to
// PermanentlyFailed; the host's next authorization registers the client
// anew, instead of sending the user with the forgotten client_id, and the
// server is Connected. With the default memory token store and with a
// shared store.
func TestOAuthTypeScriptServerRestart(t *testing.T) {
	node, script := npmtest.File(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js")
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"memory", nil},
		{"shared", []Option{WithSharedState(store.NewMemory()), WithUser("alice")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httpserver.StartNodeOAuth(t, node, script)
			// Retries every half second at most, without end: the restart of
			// the node process (a second or two) is an outage to ride out.
			m := newTestManager(t, append([]Option{WithPolicy(lifecycle.Policy{InitialInterval: 50 * time.Millisecond,
				MaxInterval: 500 * time.Millisecond, MaxAttempts: -1})}, tc.opts...)...)
			events, stop := m.Events(256)
			defer stop()
			mustAdd(t, m, "ts", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}, OAuth: &oauth.Config{}})
			authorizeNow(t, m, "ts")
			greet(t, m, "before")
			first := clientID(t, m)

			srv.Restart(t)
			if err := m.WaitFor(testCtx(t), "ts", lifecycle.NeedsAuthorization); err != nil {
				stop()
				for ev := range events {
					t.Logf("%v %v->%v gen %d: %v", ev.Kind, ev.From, ev.To, ev.Generation, ev.Err)
				}
				t.FailNow()
			}
			authorizeNow(t, m, "ts")
			greet(t, m, "after")
			if again := clientID(t, m); again == first {
				t.Errorf("the client registration %q the server forgot was used again", first)
			}
			stop()
			for ev := range events {
				if ev.Kind == EventState && ev.To == lifecycle.PermanentlyFailed {
					t.Errorf("the server went to PermanentlyFailed: %v", ev.Err)
				}
			}
			if st, _ := m.Status("ts"); st.Generation > 3 {
				t.Errorf("generation %d: dialled more than needed", st.Generation)
			}
		})
	}
}

// clientID is the id of the client registration the Manager holds for
// the server "ts".
func clientID(t *testing.T, m *Manager) string {
	t.Helper()
	e, err := m.tokens.Load(testCtx(t), "ts")
	if err != nil || e == nil || e.Client == nil || e.Client.ID == "" {
		t.Fatalf("no client registration held: %v %v", e, err)
	}
	return e.Client.ID
}

// greet calls the example server's greet tool.
func greet(t *testing.T, m *Manager, name string) {
	t.Helper()
	res, err := m.CallTool(testCtx(t), "ts", "greet", map[string]any{"name": name})
	if err != nil || res.IsError {
		t.Fatalf("greet: %v %+v", err, res)
	}
}

// A server that refuses every token, with HTTP 500 (it lost its record of
// them and cannot tell) or with 401, while its authorization server still
// refreshes them, gets one refresh, and then the host is asked to
// authorize (NeedsAuthorization): not a refresh per dial, nor a budget of
// retries ending in PermanentlyFailed. Once it takes tokens again, the
// authorization brings it back.
func TestOAuthServerRefusesEveryToken(t *testing.T) {
	for _, serverError := range []bool{true, false} {
		t.Run(map[bool]string{true: "500", false: "401"}[serverError], func(t *testing.T) {
			srv := oauthtest.Start(t, oauthtest.Options{ServerErrorForBadTokens: serverError})
			m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: 50 * time.Millisecond,
				MaxInterval: 500 * time.Millisecond, MaxAttempts: -1}))
			events, stop := m.Events(256)
			defer stop()
			mustAdd(t, m, "s", oauthSpec(srv))
			authorizeNow(t, m, "s")
			echo(t, m, "s", "before")

			srv.RejectTokens(true)
			srv.Restart(t) // its sessions are gone: the Manager connects again, with its token
			mustWait(t, m, "s", lifecycle.NeedsAuthorization)
			if n := srv.Grants("refresh_token"); n != 1 {
				t.Errorf("%d refreshes, want 1", n)
			}
			if n := len(srv.TokenRequests()); n > 3 {
				t.Errorf("%d token requests: more than the code, one refresh (and a registration check)", n)
			}
			srv.RejectTokens(false)
			authorizeNow(t, m, "s")
			echo(t, m, "s", "after")
			stop()
			for ev := range events {
				if ev.Kind == EventState && ev.To == lifecycle.PermanentlyFailed {
					t.Errorf("the server went to PermanentlyFailed: %v", ev.Err)
				}
			}
		})
	}
}
