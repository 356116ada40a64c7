package client

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// The TypeScript SDK's own task server (simpleTaskInteractive, from the
// pinned @modelcontextprotocol/sdk 1.32.2, protocol 2025-11-25): its tools
// require tasks, so CallTool runs them as tasks, transparently; they wait
// for input (an elicitation, a sampling request), which the server asks for
// while the Manager waits on tasks/result, and which reach the host's
// handlers as any of a server's requests do.
func TestTaskTypeScriptInteractive(t *testing.T) {
	node, script := npmtest.File(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleTaskInteractive.js")
	srv := httpserver.StartNode(t, node, script, "Starting server on")
	var elicited, sampled atomic.Int32
	elicit := func(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		elicited.Add(1)
		if !strings.Contains(req.Params.Message, "notes.txt") {
			return nil, fmt.Errorf("unexpected elicitation %q", req.Params.Message)
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}, nil
	}
	sample := func(ctx context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		sampled.Add(1)
		return &mcp.CreateMessageResult{
			SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("Quiet pond\nA frog jumps in\nSplash")},
			Model:           "test", StopReason: "endTurn",
		}, nil
	}
	// On the system clock: the server's status notifications move polls
	// about, so a test cannot count on a poll per tick of a fake clock.
	e := newTaskEnvClock(t, store.NewMemoryTaskStore(), nil, WithElicitationHandler(elicit), WithSamplingHandler(sample))
	if err := e.m.Add(e.ctx, "ts", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL("/mcp")}}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.WaitFor(e.ctx, "ts", lifecycle.Connected); err != nil {
		t.Fatalf("%v\n%s", err, srv.Output())
	}

	call := func(tool string, args map[string]any) string {
		t.Helper()
		var got string
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, err := e.m.CallTool(e.ctx, "ts", tool, args)
			switch {
			case err != nil:
				got = "error: " + err.Error()
			case len(res.Content) != 1:
				got = fmt.Sprintf("content %+v", res.Content)
			default:
				tc, _ := res.Content[0].(mcp.TextContent)
				got = tc.Text
			}
		}()
		// The server asks for input once a poll (every second, as it asks)
		// saw the task wait for it; its answer ends the call.
		select {
		case <-done:
			return got
		case <-e.ctx.Done():
			t.Fatalf("%s: %v\n%s", tool, e.ctx.Err(), srv.Output())
			return ""
		}
	}
	if got := call("confirm_delete", map[string]any{"filename": "notes.txt"}); got != "Deleted 'notes.txt'" {
		t.Fatalf("confirm_delete: %s\n%s", got, srv.Output())
	}
	if got := call("write_haiku", map[string]any{"topic": "ponds"}); !strings.Contains(got, "Quiet pond") {
		t.Fatalf("write_haiku: %s\n%s", got, srv.Output())
	}
	if elicited.Load() != 1 || sampled.Load() != 1 {
		t.Fatalf("elicited %d, sampled %d", elicited.Load(), sampled.Load())
	}
	if len(e.m.Tasks()) != 0 {
		t.Fatalf("tasks left: %v", e.m.Tasks())
	}
}
