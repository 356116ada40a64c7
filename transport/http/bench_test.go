package http_test

import (
	"context"
	"net/http/httptest"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// BenchmarkCallTool compares a tools/call over a plain mcp-go Streamable
// HTTP client (raw) with one over a Conn (conn), against the same
// in-process mcp-go server. Compare the two with benchstat.
func BenchmarkCallTool(b *testing.B) {
	s := server.NewMCPServer("bench", "1.0.0")
	httpserver.AddMCPGoTools(s)
	streamable := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(streamable)
	defer func() {
		ts.CloseClientConnections()
		ts.Close()
		_ = streamable.Shutdown(context.Background())
	}()
	ctx := context.Background()
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "hello"}

	run := func(b *testing.B, c *mcpclient.Client) {
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.CallTool(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("raw", func(b *testing.B) {
		tr, err := transport.NewStreamableHTTP(ts.URL)
		if err != nil {
			b.Fatal(err)
		}
		c := mcpclient.NewClient(tr)
		defer c.Close()
		run(b, c)
	})
	b.Run("conn", func(b *testing.B) {
		conn, err := mcphttp.Dial(ctx, mcphttp.Spec{URL: ts.URL}, mcphttp.WithLogger(nil))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		c := mcpclient.NewClient(conn.Transport())
		run(b, c)
	})
}
