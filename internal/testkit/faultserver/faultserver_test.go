package faultserver_test

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

func TestMain(m *testing.M) {
	faultserver.Main() // serves and exits when re-executed as the server
	goleak.VerifyTestMain(m)
}

// start runs the server in mode over mcp-go's own stdio transport, so the
// server is checked independently of our transport.
func start(ctx context.Context, mode string, env ...string) (*mcpclient.Client, error) {
	inv := faultserver.Command(mode, env...)
	cl := mcpclient.NewClient(transport.NewStdio(inv.Path, inv.EnvList(), inv.Args...))
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	var req mcp.InitializeRequest
	req.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "test"}
	if _, err := cl.Initialize(ctx, req); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

func call(ctx context.Context, cl *mcpclient.Client, tool string, args map[string]any) (string, error) {
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	return res.Content[0].(mcp.TextContent).Text, nil
}

// Example runs the fault server in the mode that crashes after N calls:
// the first call is answered, the second kills it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := start(ctx, faultserver.ModeCrashAfter, faultserver.EnvN+"=1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	fmt.Println(call(ctx, cl, "add", map[string]any{"a": 1, "b": 2}))
	_, err = call(ctx, cl, "echo", map[string]any{"text": "never answered"})
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// transport error: transport closed
}

func TestTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := start(ctx, faultserver.ModeNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if out, err := call(ctx, cl, "sleep", map[string]any{"ms": 1}); err != nil || out != "slept" {
		t.Errorf("sleep = %q, %v", out, err)
	}
	if out, err := call(ctx, cl, "echo", map[string]any{"text": "x"}); err != nil || out != "x" {
		t.Errorf("echo = %q, %v", out, err)
	}
	// A call whose context ends fails then, whatever the server does.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := call(short, cl, "sleep", map[string]any{"ms": 60_000}); err == nil {
		t.Error("sleep outlived its context")
	}
}
