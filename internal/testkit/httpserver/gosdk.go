package httpserver

import (
	"context"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDK is one incarnation of an official Go SDK server.
type goSDK struct {
	server *mcp.Server
	h      *mcp.StreamableHTTPHandler
}

type echoArgs struct {
	Message string `json:"message"`
}

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func newGoSDK(stateless bool) *goSDK {
	s := mcp.NewServer(&mcp.Implementation{Name: "httpserver-gosdk", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the message back."},
		func(ctx context.Context, req *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			text := strconv.FormatFloat(in.A+in.B, 'f', -1, 64)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
	return &goSDK{server: s, h: h}
}

func (g *goSDK) handler() http.Handler { return g.h }

func (g *goSDK) addTool(name string) {
	mcp.AddTool(g.server, &mcp.Tool{Name: name, Description: "Added at runtime."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
}

func (g *goSDK) shutdown(ctx context.Context) {
	for ss := range g.server.Sessions() {
		_ = ss.Close()
	}
}
