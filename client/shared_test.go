package client

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
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

// TaskOptions.SharedScope keeps a Manager's open tasks in the shared state under
// its scope: a later Manager of the same scope lists them, one of
// another scope does not, and the option wins over an earlier
// TaskOptions.Store.
func TestSharedTasks(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	hs := taskserver.StartHTTP(t, ts)
	shared := store.NewMemory()
	spec := ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}}
	unused := store.NewMemoryTaskStore()

	first := newTaskEnv(t, unused, WithSharedState(shared), WithTasks(TaskOptions{SharedScope: "alice"}))
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
		t.Errorf("TaskOptions.Store got %d records", len(rs))
	}
	if rs, err := shared.Tasks("alice").LoadTasks(first.ctx); err != nil || len(rs) != 1 || rs[0].TaskID != task.ID() {
		t.Fatalf("alice's scope: %+v %v", rs, err)
	}
	bob := newTaskEnv(t, nil, WithSharedState(shared), WithTasks(TaskOptions{SharedScope: "bob"}))
	if n := len(bob.m.Tasks()); n != 0 {
		t.Errorf("bob's Manager lists %d tasks", n)
	}
	second := newTaskEnv(t, nil, WithSharedState(shared), WithTasks(TaskOptions{SharedScope: "alice"}))
	if tasks := second.m.Tasks(); len(tasks) != 1 || tasks[0].ID() != task.ID() {
		t.Fatalf("alice's next Manager lists %v", tasks)
	}
	ts.Release("shared")
}
