package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// files is a server with a read-only tool and a destructive one.
func files() *server.MCPServer {
	srv := server.NewMCPServer("files", "1.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("read", mcp.WithString("path"), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("contents of " + r.GetString("path", "")), nil
		})
	srv.AddTool(mcp.NewTool("delete", mcp.WithString("path"), mcp.WithDestructiveHintAnnotation(true)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("deleted " + r.GetString("path", "")), nil
		})
	return srv
}

// errNotApproved is the host's refusal.
var errNotApproved = errors.New("not approved by the user")

// An approval prompt: a tool that does not declare readOnlyHint runs only
// if the user approves the call. The interceptor looks the tool's
// annotations up in the View, and asks an approver, which here stands in
// for the user: it approves deleting under /tmp/ only.
func ExampleWithInterceptor() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	approve := func(ctx context.Context, server, tool string, args any) bool {
		fmt.Printf("  asking the user: %s %s %v?\n", server, tool, args)
		path, _ := args.(map[string]any)["path"].(string)
		return strings.HasPrefix(path, "/tmp/")
	}

	var m *client.Manager
	approval := func(ctx context.Context, c *client.Call, next client.Invoker) (any, error) {
		if c.Method() != string(mcp.MethodToolsCall) || readOnly(m, c.Server(), c.Name()) {
			return next(ctx, c)
		}
		if !approve(ctx, c.Server(), c.Name(), c.Arguments) {
			return nil, errNotApproved
		}
		return next(ctx, c)
	}
	m = client.New(client.WithInterceptor(approval))
	defer m.Close()
	if err := m.Add(ctx, "files", client.ServerSpec{Dialer: client.InProcess(files())}); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "files", lifecycle.Connected); err != nil {
		panic(err)
	}

	for _, call := range []struct{ tool, path string }{
		{"read", "/etc/hosts"}, {"delete", "/tmp/old"}, {"delete", "/etc/hosts"},
	} {
		fmt.Println(call.tool, call.path)
		res, err := m.CallTool(ctx, "files", call.tool, map[string]any{"path": call.path})
		switch {
		case errors.Is(err, errNotApproved):
			fmt.Println("  refused:", err)
		case err != nil:
			panic(err)
		default:
			fmt.Println(" ", res.Content[0].(mcp.TextContent).Text)
		}
	}
	st, _ := m.Status("files")
	fmt.Println("files is", st.State)
	// Output:
	// read /etc/hosts
	//   contents of /etc/hosts
	// delete /tmp/old
	//   asking the user: files delete map[path:/tmp/old]?
	//   deleted /tmp/old
	// delete /etc/hosts
	//   asking the user: files delete map[path:/etc/hosts]?
	//   refused: mcpfleet: server "files": call tool delete: refused by an interceptor: not approved by the user
	// files is Connected
}

// readOnly reports whether server's published catalog declares tool
// read-only. A tool it does not list (not published yet, or gone) is not.
func readOnly(m *client.Manager, server, tool string) bool {
	cat, ok := m.View().Catalog(server)
	if !ok {
		return false
	}
	for _, t := range cat.Tools() {
		if t.Name == tool {
			ro := t.Annotations.ReadOnlyHint
			return ro != nil && *ro
		}
	}
	return false
}
