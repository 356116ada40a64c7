package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A host shows its agent only the read tools of a server, then lets one
// more in at runtime; the server is not reconnected.
func ExampleManager_SetToolFilter() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	srv := server.NewMCPServer("repo", "1.0", server.WithToolCapabilities(true))
	for _, name := range []string{"get_issue", "list_issues", "create_issue", "delete_repo"} {
		srv.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}

	m := client.New()
	defer m.Close()
	spec := client.ServerSpec{Dialer: client.InProcess(srv),
		ToolFilter: client.ToolFilter{Allow: []string{"get_*", "list_*"}}}
	if err := m.Add(ctx, "repo", spec); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "repo", lifecycle.Connected); err != nil {
		panic(err)
	}
	show := func() {
		for t := range m.View().Tools() {
			fmt.Println("  ", t.Qualified())
		}
	}
	fmt.Println("read only:")
	show()
	_, err := m.Call(ctx, "repo__create_issue", nil)
	fmt.Println("create_issue is not found:", errors.Is(err, client.ErrToolNotFound))

	if err := m.SetToolFilter("repo", client.ToolFilter{Deny: []string{"delete_*"}}); err != nil {
		panic(err)
	}
	fmt.Println("all but delete_*:")
	show()
	st, _ := m.Status("repo")
	fmt.Println("generation:", st.Generation)
	// Output:
	// read only:
	//    repo__get_issue
	//    repo__list_issues
	// create_issue is not found: true
	// all but delete_*:
	//    repo__create_issue
	//    repo__get_issue
	//    repo__list_issues
	// generation: 1
}
