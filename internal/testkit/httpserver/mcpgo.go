package httpserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcpGo is one incarnation of an mcp-go server.
type mcpGo struct {
	mcp        *server.MCPServer
	streamable *server.StreamableHTTPServer // nil for SSE
	sse        *server.SSEServer            // nil for streamable HTTP
}

func newMCPGo(kind Kind) *mcpGo {
	s := server.NewMCPServer("httpserver-mcpgo", "1.0.0", server.WithToolCapabilities(true))
	if kind == MCPGoReadOnly {
		addReadOnlyTools(s)
	} else {
		AddMCPGoTools(s)
	}
	m := &mcpGo{mcp: s}
	switch kind {
	case MCPGoSSE:
		m.sse = server.NewSSEServer(s)
	case MCPGoStateful, MCPGoReadOnly:
		m.streamable = server.NewStreamableHTTPServer(s, server.WithStateful(true))
	default:
		m.streamable = server.NewStreamableHTTPServer(s)
	}
	return m
}

// AddMCPGoTools registers the test tools on an mcp-go server: echo
// (message → message) and add (a, b → their sum as text).
func AddMCPGoTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Echoes the message back."),
		mcp.WithString("message", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msg, err := req.RequireString("message")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(msg), nil
	})
	s.AddTool(mcp.NewTool("add",
		mcp.WithDescription("Adds two numbers."),
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, errA := req.RequireFloat("a")
		b, errB := req.RequireFloat("b")
		if errA != nil || errB != nil {
			return mcp.NewToolResultError(fmt.Sprint("bad arguments: ", errA, errB)), nil
		}
		return mcp.NewToolResultText(strconv.FormatFloat(a+b, 'f', -1, 64)), nil
	})
}

func (m *mcpGo) handler() http.Handler {
	if m.sse != nil {
		return m.sse
	}
	return m.streamable
}

func (m *mcpGo) addTool(name string) {
	m.mcp.AddTool(mcp.NewTool(name, mcp.WithDescription("Added at runtime.")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name), nil
		})
}

func (m *mcpGo) shutdown(ctx context.Context) {
	if m.sse != nil {
		m.sse.CloseSessions()
		return
	}
	_ = m.streamable.Shutdown(ctx)
}
