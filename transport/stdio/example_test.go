package stdio_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
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

// A Registry ties children to a state file: if the host is killed before
// it closes them, the next OpenRegistry on the file ends them. Here the
// host closes its child, so the file lists nothing and Close removes it.
func ExampleOpenRegistry() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "mcpfleet-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	reg, err := stdio.OpenRegistry(filepath.Join(dir, "children.json"))
	if err != nil {
		// ErrRegistryInUse: another running host owns the file.
		fmt.Println(err)
		return
	}
	defer reg.Close()
	fmt.Printf("ended at open: %+v\n", reg.Swept())

	inv := faultserver.Command(faultserver.ModeNormal)
	conn, err := stdio.Dial(ctx, stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}, stdio.WithRegistry(reg))
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... speak MCP over conn.Transport() ...
	if err := conn.Close(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ended at open: {Listed:0 Killed:0 Failed:0}
}
