package http_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/frame"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// bigServer is an mcp-go server with echo and two tools that answer with
// a text of the asked size: "big" as a JSON body, "bigsse" as an SSE
// response (it sends a log notification first, which makes mcp-go's
// streamable server answer with a stream).
func bigServer() *server.MCPServer {
	s := server.NewMCPServer("big", "test", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("message", "")), nil
		})
	big := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Name == "bigsse" {
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "data": "making it big"})
		}
		return mcp.NewToolResultText(strings.Repeat("b", int(req.GetFloat("bytes", 0)))), nil
	}
	s.AddTool(mcp.NewTool("big", mcp.WithNumber("bytes", mcp.Required())), big)
	s.AddTool(mcp.NewTool("bigsse", mcp.WithNumber("bytes", mcp.Required())), big)
	return s
}

// An answer four times the limit fails its own request with the error that
// says so, the connection goes on serving, whether the answer came as a
// JSON body, as an SSE response, or on legacy SSE's event stream.
func TestAnswerOverTheSizeLimit(t *testing.T) {
	const limit = 256 << 10
	streamable := httptest.NewServer(server.NewStreamableHTTPServer(bigServer()))
	defer streamable.Close()
	sse := server.NewSSEServer(bigServer())
	sseServer := httptest.NewServer(sse)
	defer sseServer.Close()
	defer sse.Shutdown(context.Background())

	for _, tc := range []struct {
		name string
		spec mcphttp.Spec
		tool string
	}{
		{"streamable, JSON body", mcphttp.Spec{URL: streamable.URL}, "big"},
		{"streamable, SSE response", mcphttp.Spec{URL: streamable.URL}, "bigsse"},
		{"legacy SSE", mcphttp.Spec{URL: sseServer.URL + "/sse", Kind: mcphttp.SSE}, "big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			s := connect(ctx, t, tc.spec, mcphttp.WithMaxMessageBytes(limit))
			req := mcp.CallToolRequest{}
			req.Params.Name = tc.tool
			req.Params.Arguments = map[string]any{"bytes": 4 * limit}
			_, err := s.client.CallTool(ctx, req)
			var tl *frame.TooLarge
			if !errors.As(err, &tl) {
				t.Fatalf("call = %v, want a *frame.TooLarge", err)
			}
			if tl.Limit != limit || tl.Size <= limit {
				t.Fatalf("error %+v: want a size over the limit, and the limit", tl)
			}
			s.mustEcho(ctx, t, "still here")
			req.Params.Arguments = map[string]any{"bytes": limit / 2}
			if res, err := s.client.CallTool(ctx, req); err != nil || len(res.Content) != 1 {
				t.Fatalf("an answer under the limit: %v", err)
			}
			select {
			case <-s.conn.Done():
				t.Fatalf("the connection died: %v", s.conn.Err())
			default:
			}
		})
	}
}
