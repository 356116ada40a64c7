package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Any MCP server will do; this one runs in the same process.
	srv := server.NewMCPServer("greeter", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("greet", mcp.WithString("name")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("hello, " + r.GetString("name", "")), nil
		})

	m := client.New()
	defer m.Close()
	if err := m.Add(ctx, "greeter", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "greeter", lifecycle.Connected); err != nil {
		panic(err)
	}
	for t := range m.View().Tools() {
		fmt.Println("tool:", t.Qualified())
	}
	res, err := m.Call(ctx, "greeter__greet", map[string]any{"name": "fleet"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// tool: greeter__greet
	// hello, fleet
}
