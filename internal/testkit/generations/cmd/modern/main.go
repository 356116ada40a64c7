// Command modern is an MCP server on mcp-go v1.2.1 told to speak only
// protocol 2026-07-28 (server/discover; no initialize handshake, which it
// refuses), for the fleet of every protocol generation
// (internal/testkit/generations): no released server speaks only that
// generation. It serves stdio, or Streamable HTTP at /mcp on 127.0.0.1
// and the port in PORT when it is set. Tools: echo (answers
// "echo: <message>"), grow (adds a tool, announced with
// notifications/tools/list_changed) and crash (answers, then exits with
// status 3).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	hooks := &server.Hooks{}
	hooks.AddOnRequestInitialization(func(_ context.Context, _ any, message any) error {
		raw, ok := message.(json.RawMessage)
		if !ok {
			return nil
		}
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Method == string(mcp.MethodInitialize) {
			return errors.New("this server speaks only protocol " + mcp.ProtocolVersion20260728)
		}
		return nil
	})
	s := server.NewMCPServer("generations-modern", "1.2.1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	echo := func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + req.GetString("message", "")), nil
	}
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message", mcp.Required())), echo)
	var grown atomic.Int64
	s.AddTool(mcp.NewTool("grow"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(mcp.NewTool(fmt.Sprintf("grown-%d", grown.Add(1))), echo)
		return mcp.NewToolResultText("grown"), nil
	})
	s.AddTool(mcp.NewTool("crash"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		time.AfterFunc(50*time.Millisecond, func() { os.Exit(3) })
		return mcp.NewToolResultText("crashing"), nil
	})
	port := os.Getenv("PORT")
	if port == "" {
		if err := server.ServeStdio(s); err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728)))
	fmt.Println("generations server listening on port", port)
	log.Fatal(http.Serve(ln, mux))
}
