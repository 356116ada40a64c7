package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/store"
)

// rpc posts a JSON-RPC request of a 2025-11-25 session and returns its
// result, or fails the test.
func rpc(t *testing.T, url, sid, method string, params any) json.RawMessage {
	t.Helper()
	out, rpcErr := rpcErr(t, url, sid, method, params)
	if rpcErr != "" {
		t.Fatalf("%s: %s", method, rpcErr)
	}
	return out
}

// rpcErr is rpc that returns a JSON-RPC error's message.
func rpcErr(t *testing.T, url, sid, method string, params any) (json.RawMessage, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	resp := postAs(t, url, string(body), map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	raw, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(raw), "data: "); i >= 0 { // an event stream
		raw = []byte(strings.TrimSpace(string(raw[i+len("data: "):])))
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: HTTP %d %q: %v", method, resp.StatusCode, raw, err)
	}
	if r.Error != nil {
		return nil, r.Error.Message
	}
	return r.Result, ""
}

// TestTasksPassedThrough: a 2025-11-25 client's task-augmented tools/call
// runs the tool as a task on its server, under an id namespaced by the
// server, which tasks/get, tasks/result, tasks/cancel and tasks/list find.
func TestTasksPassedThrough(t *testing.T) {
	ts := taskserver.New()
	t.Cleanup(ts.Close)
	f := newFleetWith(t, map[string]client.ServerSpec{"jobs": {Dialer: ts.Dial}},
		[]client.Option{client.WithTasks(client.TaskOptions{Store: store.NewMemoryTaskStore()})}) // not the user's task file
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	resp := postAs(t, url, initializeBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	var init struct {
		Result struct {
			Capabilities mcp.ServerCapabilities `json:"capabilities"`
		} `json:"result"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(raw), "{"); i >= 0 {
		raw = raw[i:]
	}
	if err := json.Unmarshal(raw, &init); err != nil || init.Result.Capabilities.Tasks == nil {
		t.Fatalf("initialize: %s %v: the gateway declares no tasks", raw, err)
	}

	start := func(job string) string {
		res := rpc(t, url, sid, "tools/call", map[string]any{"name": "jobs__work", "arguments": map[string]any{"job": job},
			"task": map[string]any{}}) // no ttl: mcp-go would keep a goroutine for it
		var created mcp.CreateTaskResult
		if err := json.Unmarshal(res, &created); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(created.Task.TaskId, "jobs/") || created.Task.Status != mcp.TaskStatusWorking {
			t.Fatalf("the task: %+v", created.Task)
		}
		return created.Task.TaskId
	}
	a := start("a")
	upstreamA := taskserver.Await(t, testCtx(t), ts.Created(), "task a created")
	if a != "jobs/"+upstreamA {
		t.Fatalf("the client's id %q is not the upstream's %q under its server's name", a, upstreamA)
	}
	var got mcp.GetTaskResult
	if err := json.Unmarshal(rpc(t, url, sid, "tasks/get", map[string]any{"taskId": a}), &got); err != nil || got.TaskId != a || got.Status != mcp.TaskStatusWorking {
		t.Fatalf("tasks/get: %+v %v", got, err)
	}
	ts.Release("a")
	var res mcp.CallToolResult
	if err := json.Unmarshal(rpc(t, url, sid, "tasks/result", map[string]any{"taskId": a}), &res); err != nil ||
		len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "done a" {
		t.Fatalf("tasks/result: %+v %v", res, err)
	}

	b := start("b")
	taskserver.Await(t, testCtx(t), ts.Created(), "task b created")
	var cancelled mcp.CancelTaskResult
	if err := json.Unmarshal(rpc(t, url, sid, "tasks/cancel", map[string]any{"taskId": b}), &cancelled); err != nil || cancelled.TaskId != b {
		t.Fatalf("tasks/cancel: %+v %v", cancelled, err)
	}
	taskserver.Await(t, testCtx(t), ts.Cancelled(), "task b cancelled upstream")
	var list mcp.ListTasksResult
	// The tasks not collected: a's result was taken, b's was not.
	if err := json.Unmarshal(rpc(t, url, sid, "tasks/list", map[string]any{}), &list); err != nil || len(list.Tasks) != 1 ||
		list.Tasks[0].TaskId != b || list.Tasks[0].Status != mcp.TaskStatusCancelled {
		t.Fatalf("tasks/list: %+v %v", list, err)
	}
	if _, msg := rpcErr(t, url, sid, "tasks/get", map[string]any{"taskId": "jobs/made-up"}); !strings.Contains(msg, "not found") {
		t.Fatalf("an unknown task: %q", msg)
	}
}

// TestTasksExtensionPassedThrough: a 2026-07-28 client that declares the
// tasks extension (SEP-2663) gets a task for a call of a tool its server
// can run as one (resultType "task", under the server's name), and its
// outcome inline from tasks/get once it ended; tasks/cancel cancels it
// upstream. The upstream speaks 2025-11-25 tasks: the Manager speaks each
// server's own form.
func TestTasksExtensionPassedThrough(t *testing.T) {
	ts := taskserver.New()
	t.Cleanup(ts.Close)
	f := newFleetWith(t, map[string]client.ServerSpec{"jobs": {Dialer: ts.Dial}},
		[]client.Option{client.WithTasks(client.TaskOptions{Store: store.NewMemoryTaskStore()})})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	modern := func(method string, params map[string]any) map[string]any {
		t.Helper()
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": method, "params": params})
		resp := postAs(t, url, string(body), map[string]string{"MCP-Protocol-Version": "2026-07-28"})
		var r struct {
			Result map[string]any `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil {
			t.Fatalf("%s: %v %+v", method, err, r.Error)
		}
		return r.Result
	}
	created := modern("tools/call", map[string]any{"name": "jobs__work", "arguments": map[string]any{"job": "x"}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !strings.HasPrefix(id, "jobs/") || created["status"] != "working" {
		t.Fatalf("the call: %v", created)
	}
	taskserver.Await(t, testCtx(t), ts.Created(), "task x created")
	if got := modern("tasks/get", map[string]any{"taskId": id}); got["status"] != "working" || got["result"] != nil {
		t.Fatalf("tasks/get while it works: %v", got)
	}
	ts.Release("x")
	task := f.m.Tasks()[0]
	select {
	case <-task.Done():
	case <-testCtx(t).Done():
		t.Fatal("the task never ended")
	}
	got := modern("tasks/get", map[string]any{"taskId": id})
	res, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || res == nil || !strings.Contains(fmt.Sprint(res["content"]), "done x") {
		t.Fatalf("tasks/get once it ended: %v", got)
	}

	created = modern("tools/call", map[string]any{"name": "jobs__work", "arguments": map[string]any{"job": "y"}})
	taskserver.Await(t, testCtx(t), ts.Created(), "task y created")
	if got := modern("tasks/cancel", map[string]any{"taskId": created["taskId"]}); got["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v", got)
	}
	taskserver.Await(t, testCtx(t), ts.Cancelled(), "task y cancelled upstream")
}
