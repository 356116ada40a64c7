// Command gosdk110 is an MCP server on the official Go SDK v1.1.0, whose
// newest protocol is 2025-06-18, for the fleet of every protocol
// generation (internal/testkit/generations). It serves stdio, or
// Streamable HTTP at /mcp on 127.0.0.1 and the port in PORT when it is
// set. Tools: echo (answers "echo: <message>"), grow (adds a tool,
// announced with notifications/tools/list_changed) and crash (answers,
// then exits with status 3).
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Message string `json:"message"`
}

type none struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "generations-gosdk-1.1", Version: "1.1.0"}, nil)
	echo := func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return text("echo: " + in.Message), nil, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its message"}, echo)
	var grown atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds a tool"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: fmt.Sprintf("grown-%d", grown.Add(1)), Description: "A grown tool"}, echo)
		return text("grown"), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits after answering"}, func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
		time.AfterFunc(50*time.Millisecond, func() { os.Exit(3) })
		return text("crashing"), nil, nil
	})
	port := os.Getenv("PORT")
	if port == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	fmt.Println("generations server listening on port", port)
	log.Fatal(http.Serve(ln, mux))
}
