package client

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// The official Go SDK's server, over stdio on 2026-07-28, announces a tool
// list change only to a client that listens for it (subscriptions/listen):
// the Manager opens that stream itself, so the new tool reaches the View.
//
// The server here is slow to set up the stream (a second): the Manager is
// Connected only once the server acknowledged it, so the tool added by the
// first call after Connected is announced on it. Connected before that, the
// change went to no stream and the tool never showed.
func TestStdioListenStreamOnModernProtocol(t *testing.T) {
	m := newTestManager(t)
	inv := gosdkserver.Command()
	inv.Env[gosdkserver.EnvListenDelay] = "1s"
	mustAdd(t, m, "g", ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}})
	mustWait(t, m, "g", lifecycle.Connected)
	if st, _ := m.Status("g"); st.Protocol != "2026-07-28" {
		t.Fatalf("protocol %q: this test needs the Go SDK server on 2026-07-28", st.Protocol)
	}
	ctx := testCtx(t)
	if _, err := m.CallTool(ctx, "g", "add_tool", map[string]any{"text": "extra"}); err != nil {
		t.Fatal(err)
	}
	for {
		v := m.View()
		if _, ok := v.Tool("g__extra"); ok {
			break
		}
		select {
		case <-v.Changed():
		case <-ctx.Done():
			t.Fatal("the added tool never reached the View: no list_changed came")
		}
	}
	res, err := m.Call(ctx, "g__extra", map[string]any{"text": "hi"})
	if err != nil || text(res) != "hi" {
		t.Fatalf("calling the added tool: %q, %v", text(res), err)
	}
}
