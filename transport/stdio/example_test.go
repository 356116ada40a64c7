package stdio_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/faultserver"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// ExampleDial starts a server process, speaks MCP to it through an mcp-go
// client built on the Conn's transport, and closes it. The server here is
// the test binary re-executed as a fault-free MCP server; in a host it is
// the command from the server's configuration.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	inv := faultserver.Command(faultserver.ModeNormal)
	conn, err := stdio.Dial(ctx, stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env})
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer conn.Close(context.Background())

	c := mcpclient.NewClient(conn.Transport())
	if err := c.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	var initReq mcp.InitializeRequest
	initReq.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "1.0"}
	if _, err := c.Initialize(ctx, initReq); err != nil {
		// A server that died before answering: Err says why.
		fmt.Println("initialize:", err, conn.Err())
		return
	}

	var call mcp.CallToolRequest
	call.Params.Name = "echo"
	call.Params.Arguments = map[string]any{"text": "hello"}
	res, err := c.CallTool(ctx, call)
	if err != nil {
		fmt.Println("call:", err)
		return
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)

	// Close ends the process (stdin EOF first, then signals) and reaps it.
	if err := conn.Close(ctx); err != nil {
		fmt.Println("close:", err)
	}
	<-conn.Done()
	var exit *stdio.ExitError
	if errors.As(conn.Err(), &exit) {
		fmt.Println("closed by us:", exit.Closed, "exit status:", exit.Code)
	}
	// Output:
	// hello
	// closed by us: true exit status: 0
}
