package client

import (
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// authorizeNow runs the authorization of server name as a host does when
// it sees NeedsAuthorization: StartAuthorization, the user approving,
// CompleteAuthorization; then waits for Connected.
func authorizeNow(t *testing.T, m *Manager, name string) {
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

// After the authorization server restarts having forgotten every token and
// client registration (and the MCP server answers the token it no longer
// knows with a 500, as the TypeScript SDK's example server does), the
// server goes to NeedsAuthorization (one refresh, refused for the unknown
// client, not a budget of retries), the next authorization registers the
// client again, and the server is Connected: with the file store and with
// a shared store.
func TestAuthorizationAfterTheAuthorizationServerForgot(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(t *testing.T) []Option
	}{
		{"file", func(t *testing.T) []Option {
			return []Option{WithTokenStore(oauth.NewFileStore(filepath.Join(t.TempDir(), "tokens.json")))}
		}},
		{"memory", func(t *testing.T) []Option { return nil }},
		{"shared", func(t *testing.T) []Option {
			return []Option{WithSharedState(store.NewMemory()), WithUser("alice")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := oauthtest.Start(t, oauthtest.Options{ServerErrorForBadTokens: true})
			m := newTestManager(t, tc.opts(t)...)
			mustAdd(t, m, "s", oauthSpec(srv))
			authorizeNow(t, m, "s")
			echo(t, m, "s", "before")
			if n := srv.Registrations(); n != 1 {
				t.Fatalf("%d registrations, want 1", n)
			}

			srv.RestartForgetting(t)
			mustWait(t, m, "s", lifecycle.NeedsAuthorization)
			authorizeNow(t, m, "s")
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
		})
	}
}

// ForgetAuthorization drops the tokens and the registration: the server
// needs the user again, who authorizes a client registered anew.
func TestForgetAuthorization(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	tokens := store.NewMemory()
	m := newTestManager(t, WithSharedState(tokens), WithUser("bob"))
	mustAdd(t, m, "s", oauthSpec(srv))
	authorizeNow(t, m, "s")
	if _, ok, _ := tokens.LoadToken(testCtx(t), store.TokenKey{User: "bob", Server: "s"}); !ok {
		t.Fatal("no token in the shared store after the authorization")
	}
	if err := m.ForgetAuthorization(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tokens.LoadToken(testCtx(t), store.TokenKey{User: "bob", Server: "s"}); ok {
		t.Error("the token is still in the store")
	}
	authorizeNow(t, m, "s")
	echo(t, m, "s", "again")
	if n := srv.Registrations(); n != 2 {
		t.Errorf("%d registrations, want 2", n)
	}
}

// WithSharedTasks keeps a Manager's open tasks in the shared state under
// its scope: a later Manager of the same scope lists them, one of
// another scope does not, and the option wins over an earlier
// WithTaskStore.
func TestSharedTasks(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	hs := taskserver.StartHTTP(t, ts)
	shared := store.NewMemory()
	spec := ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}}
	unused := store.NewMemoryTaskStore()

	first := newTaskEnv(t, unused, WithSharedState(shared), WithSharedTasks("alice"))
	first.add("jobs", spec)
	task, err := first.m.StartTask(first.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "shared"})
	if err != nil {
		t.Fatal(err)
	}
	taskserver.Await(t, first.ctx, ts.Started(), "the job to start")
	if err := first.m.Close(); err != nil {
		t.Fatal(err)
	}
	if rs, _ := unused.LoadTasks(first.ctx); len(rs) != 0 {
		t.Errorf("WithTaskStore's store got %d records", len(rs))
	}
	if rs, err := shared.Tasks("alice").LoadTasks(first.ctx); err != nil || len(rs) != 1 || rs[0].TaskID != task.ID() {
		t.Fatalf("alice's scope: %+v %v", rs, err)
	}
	bob := newTaskEnv(t, nil, WithSharedState(shared), WithSharedTasks("bob"))
	if n := len(bob.m.Tasks()); n != 0 {
		t.Errorf("bob's Manager lists %d tasks", n)
	}
	second := newTaskEnv(t, nil, WithSharedState(shared), WithSharedTasks("alice"))
	if tasks := second.m.Tasks(); len(tasks) != 1 || tasks[0].ID() != task.ID() {
		t.Fatalf("alice's next Manager lists %v", tasks)
	}
	ts.Release("shared")
}
