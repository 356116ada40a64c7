package http_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// Example dials a Streamable HTTP server, runs the handshake the way the
// Manager does (NewClient, Start, Initialize, Ready) and calls a tool.
func Example() {
	s := server.NewMCPServer("example", "1.0.0")
	httpserver.AddMCPGoTools(s)
	streamable := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(streamable)
	defer func() {
		ts.CloseClientConnections()
		ts.Close()
		_ = streamable.Shutdown(context.Background())
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := mcphttp.Dial(ctx, mcphttp.Spec{URL: ts.URL, Timeout: 5 * time.Second})
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer conn.Close(ctx)

	c := mcpclient.NewClient(conn.Transport())
	if err := c.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		fmt.Println("initialize:", err)
		return
	}
	if err := conn.Ready(ctx, c); err != nil { // opens the notification stream
		fmt.Println("ready:", err)
		return
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "hello"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		fmt.Println("call:", err)
		return
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)

	select {
	case <-conn.Done():
		fmt.Println("dead:", conn.Err())
	default:
		fmt.Println("alive")
	}
	// Output:
	// hello
	// alive
}
