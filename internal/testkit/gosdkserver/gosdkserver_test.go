package gosdkserver_test

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
)

func TestMain(m *testing.M) {
	gosdkserver.Main() // serves and exits when re-executed as the server
	goleak.VerifyTestMain(m)
}

// Example talks to the Go SDK server with an mcp-go client over stdio.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inv := gosdkserver.Command()
	env := make([]string, 0, len(inv.Env))
	for k, v := range inv.Env {
		env = append(env, k+"="+v)
	}
	cl := mcpclient.NewClient(transport.NewStdio(inv.Path, env, inv.Args...))
	if err := cl.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer cl.Close()
	var initReq mcp.InitializeRequest
	initReq.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "test"}
	res, err := cl.Initialize(ctx, initReq)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.ServerInfo.Name)
	var req mcp.CallToolRequest
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "hello"}
	out, err := cl.CallTool(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Content[0].(mcp.TextContent).Text)
	// Output:
	// mcpfleet-gosdkserver
	// hello
}
