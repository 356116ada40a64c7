package taskserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startTask starts a task of tool on c, as the Manager does (mcp-go's
// CallTool cannot take the answer), and returns its id.
func startTask(ctx context.Context, c *mcpclient.Client, tool, job string) (string, error) {
	resp, err := c.GetTransport().SendRequest(ctx, mcptransport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("start-" + job), Method: string(mcp.MethodToolsCall),
		Params: map[string]any{"name": tool, "arguments": map[string]any{"job": job}, "task": map[string]any{}},
	})
	if err != nil {
		return "", err
	}
	if resp.Error != nil {
		return "", resp.Error.AsError()
	}
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil {
		return "", err
	}
	return created.Task.TaskId, nil
}

func connect(ctx context.Context, t *testing.T, url string) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// Over HTTP the server speaks 2025-11-25 with no sessions: a task one client
// started is another's to poll and collect; a restart forgets it.
func TestServerHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s := taskserver.New()
	defer s.Close()
	hs := taskserver.StartHTTP(t, s)
	a, b := connect(ctx, t, hs.URL()), connect(ctx, t, hs.URL())
	if v := a.ProtocolVersion(); v != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Fatalf("protocol %q", v)
	}
	id, err := startTask(ctx, a, taskserver.ToolWork, "x")
	if err != nil {
		t.Fatal(err)
	}
	if got := taskserver.Await(t, ctx, s.Created(), "the task"); got != id {
		t.Fatalf("created %s, want %s", got, id)
	}
	taskserver.Await(t, ctx, s.Started(), "the job")
	s.Release("x")
	res, err := b.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("result from another client: %+v %v", res, err)
	}
	s.Restart()
	if _, err := b.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}}); err == nil {
		t.Fatal("a restarted server still knows the task")
	}
}

// The extension server's own methods: a task for a client that declares
// the extension, tasks/get of an unknown task is invalid params, and
// tasks/result is not a method of the extension.
func TestExtWire(t *testing.T) {
	e := taskserver.NewExt(time.Second)
	defer e.Close()
	hs := taskserver.StartHTTP(t, e)
	post := func(body map[string]any) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(hs.URL(), "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	meta := map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{
		"extensions": map[string]any{taskserver.ExtensionID: map[string]any{}}}}
	code, out := post(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": taskserver.ExtWork, "arguments": map[string]any{"job": "j"}, "_meta": meta}})
	res, _ := out["result"].(map[string]any)
	if code != http.StatusOK || res["resultType"] != "task" || res["status"] != "working" || res["requestState"] == nil {
		t.Fatalf("%d %v", code, out)
	}
	e.Release("j")
	code, out = post(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
		"params": map[string]any{"taskId": res["taskId"], "requestState": res["requestState"]}})
	got, _ := out["result"].(map[string]any)
	if code != http.StatusOK || got["status"] != "completed" || got["result"] == nil || got["resultType"] != "complete" {
		t.Fatalf("%d %v", code, out)
	}
	if n := e.BadRequestStates(); n != 0 {
		t.Fatalf("%d bad request states", n)
	}
	for _, c := range []struct {
		method string
		status int
		code   float64
	}{{"tasks/get", http.StatusBadRequest, mcp.INVALID_PARAMS}, {"tasks/result", http.StatusNotFound, mcp.METHOD_NOT_FOUND}} {
		status, out := post(map[string]any{"jsonrpc": "2.0", "id": 3, "method": c.method, "params": map[string]any{"taskId": "nonesuch"}})
		errObj, _ := out["error"].(map[string]any)
		if status != c.status || errObj["code"] != c.code {
			t.Errorf("%s: %d %v", c.method, status, out)
		}
	}
}

// Example starts a task on the server in process and collects its result,
// with mcp-go's own client.
func Example() {
	ctx := context.Background()
	s := taskserver.New()
	defer s.Close()
	conn, err := s.Dial(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := mcpclient.NewClient(conn.Transport())
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := startTask(ctx, c, taskserver.ToolWork, "demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Release("demo")
	res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(init.ProtocolVersion, res.Content[0].(mcp.TextContent).Text)
	// Output: 2025-11-25 done demo
}
