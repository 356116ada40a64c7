package llm

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// Fleet is what the adapters need of a fleet: its current View and calls
// by qualified name. *client.Manager is one; a test or a gateway may
// provide another.
type Fleet interface {
	View() *snapshot.View
	Call(ctx context.Context, qualifiedTool string, args any, opts ...client.CallOption) (*mcp.CallToolResult, error)
}

// Searcher answers tool searches: a *toolsearch.Index, or a
// *client.ToolSearch that keeps one in step with a Manager.
type Searcher interface {
	Search(q toolsearch.Query) ([]toolsearch.Hit, error)
}

var (
	_ Fleet    = (*client.Manager)(nil)
	_ Searcher = (*toolsearch.Index)(nil)
	_ Searcher = (*client.ToolSearch)(nil)
)
