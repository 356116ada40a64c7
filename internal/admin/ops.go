package admin

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Call calls tool ("server__tool" as the View names it, or "server/tool")
// with args on m, reporting progress to progress (which may be nil).
func Call(ctx context.Context, m *client.Manager, tool string, args json.RawMessage, progress func(ProgressReport)) (*mcp.CallToolResult, error) {
	var opts []client.CallOption
	if progress != nil {
		opts = append(opts, client.WithProgress(func(p mcp.ProgressNotification) {
			progress(ProgressReport{Progress: p.Params.Progress, Total: p.Params.Total, Message: p.Params.Message})
		}))
	}
	var a any
	if len(args) > 0 {
		a = args
	}
	if srvName, name, ok := strings.Cut(tool, "/"); ok {
		return m.CallTool(ctx, srvName, name, a, opts...)
	}
	return m.Call(ctx, tool, a, opts...)
}

// Authorize runs the loopback OAuth flow of server name on m
// (client.Manager.AuthorizeLoopback), once the server's first connection
// attempt has ended: an authorization completed while that attempt is
// under way is not seen by it, which would leave the server waiting for
// another.
func Authorize(ctx context.Context, m *client.Manager, name string, open func(url string) error) error {
	statuses, _, events, cancel := m.Watch(0)
	state := lifecycle.Disconnected
	for _, st := range statuses {
		if st.Name == name {
			state = st.State
		}
	}
	for state == lifecycle.Connecting {
		select {
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				state = lifecycle.Closed
			} else if ev.Kind == client.EventState && ev.Server == name {
				state = ev.To
			}
		}
	}
	cancel()
	return m.AuthorizeLoopback(ctx, name, open)
}
