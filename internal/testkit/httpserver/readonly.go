package httpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// addReadOnlyTools registers the tools of AddMCPGoTools declaring
// readOnlyHint, for MCPGoReadOnly.
func addReadOnlyTools(s *server.MCPServer) {
	tmp := server.NewMCPServer("tmp", "1")
	AddMCPGoTools(tmp)
	for _, t := range tmp.ListTools() {
		tool := t.Tool
		tool.Annotations.ReadOnlyHint = mcp.ToBoolPtr(true)
		h := t.Handler
		s.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) { return h(ctx, req) })
	}
}
