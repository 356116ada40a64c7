package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// WaitReady waits for the whole fleet before the first call, and says at
// once which server cannot come up, and why.
func ExampleManager_WaitReady() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	srv := server.NewMCPServer("notes", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("list"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("none"), nil
	})
	m := client.New()
	defer m.Close()
	_ = m.Add(ctx, "notes", client.ServerSpec{Dialer: client.InProcess(srv)})
	_ = m.Add(ctx, "typo", client.ServerSpec{Stdio: &stdio.Spec{Command: "mcpfleet-no-such-server"}})

	err := m.WaitReady(ctx)
	var se *client.ServerError
	if errors.As(err, &se) {
		fmt.Println("not ready:", se.Server)
		fmt.Println("permanently failed:", errors.Is(err, client.ErrPermanentlyFailed))
		fmt.Println("command not found:", errors.Is(err, stdio.ErrCommandNotFound))
	}
	// Output:
	// not ready: typo
	// permanently failed: true
	// command not found: true
}
