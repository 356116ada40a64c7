package snapshot_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// A View is every published server's tools at one moment: immutable,
// read without a lock, never touching the network. Hold one for a whole
// turn of a conversation; Changed says when a newer one is out.
func ExampleView() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := server.NewMCPServer("notes", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("find", mcp.WithDescription("Finds a note."), mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(""), nil
		})
	m := client.New()
	defer m.Close()
	if err := m.Add(ctx, "notes", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "notes", lifecycle.Connected); err != nil {
		panic(err)
	}

	var v *snapshot.View = m.View()
	for t := range v.Tools() {
		def := t.Definition()
		fmt.Printf("%s (%s's %s): %s\n", t.Qualified(), t.Server(), t.Name(), def.Description)
	}
	c, _ := v.Catalog("notes")
	fmt.Println("server:", c.ServerInfo().Name, "generation", c.Generation())
	// Output:
	// notes__find (notes's find): Finds a note.
	// server: notes generation 1
}
