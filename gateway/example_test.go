package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// The fleet served as one MCP server over streamable HTTP, and an MCP
// client of it: the tools of every server under qualified names.
func Example() {
	ctx := context.Background()
	notes := server.NewMCPServer("notes", "1.0")
	notes.AddTool(mcp.NewTool("lookup", mcp.WithString("q")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("found " + req.GetString("q", "")), nil
	})

	fw := gateway.NewForwarder() // the servers' sampling and elicitation go to the caller
	m := client.New(fw.ClientOptions()...)
	defer m.Close()
	_ = m.Add(ctx, "notes", client.ServerSpec{Dialer: client.InProcess(notes)})
	_ = m.WaitFor(ctx, "notes", lifecycle.Connected)

	g := gateway.New(m, gateway.WithForwarder(fw))
	defer g.Close()
	h := g.HTTPHandler(gateway.HTTPOptions{})
	defer h.Shutdown(ctx)
	ts := httptest.NewServer(h)
	defer ts.Close()

	c, _ := mcpclient.NewStreamableHttpClient(ts.URL + "/mcp")
	defer c.Close()
	_ = c.Start(ctx)
	_, _ = c.Initialize(ctx, mcp.InitializeRequest{})
	tools, _ := c.ListTools(ctx, mcp.ListToolsRequest{})
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "notes__lookup", map[string]any{"q": "mcpfleet"}
	res, _ := c.CallTool(ctx, req)
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// notes__lookup
	// found mcpfleet
}
