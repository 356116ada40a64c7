package client_test

import (
	"context"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func benchServer() *server.MCPServer {
	srv := server.NewMCPServer("bench", "1.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(r.GetString("text", "")), nil
		})
	return srv
}

// BenchmarkCallTool compares a call through the Manager with the same call
// on a raw mcp-go in-process client of the same server, and through a
// Manager with one pass-through interceptor. Compare them with benchstat
// (see BENCHMARKS.md).
func BenchmarkCallTool(b *testing.B) {
	args := map[string]any{"text": "hello"}
	srv := benchServer()

	b.Run("impl=raw", func(b *testing.B) {
		c, err := mcpclient.NewInProcessClient(srv)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		client.BenchRawCallTool(b, c, args, nil)
	})

	b.Run("impl=manager", func(b *testing.B) {
		client.BenchManagerCallTool(b, client.ServerSpec{Dialer: client.InProcess(srv)}, args)
	})

	// The same with one interceptor that passes every request on: the
	// cost of the chain itself (see BENCHMARKS.md).
	b.Run("impl=intercepted", func(b *testing.B) {
		pass := func(ctx context.Context, c *client.Call, next client.Invoker) (any, error) { return next(ctx, c) }
		client.BenchManagerCallTool(b, client.ServerSpec{Dialer: client.InProcess(srv)}, args, client.WithInterceptor(pass))
	})
}

// BenchmarkView reads the aggregated catalog through the Manager, for
// fleets of 10 and 1,000 servers of 10 tools each: getting the View and
// looking a tool up is one atomic load and one map lookup, the same at
// either size, and nothing allocates; walking every tool is linear in the
// tools and allocates nothing either.
func BenchmarkView(b *testing.B) {
	ctx := context.Background()
	srv := server.NewMCPServer("many", "1.0", server.WithToolCapabilities(false))
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		srv.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	for _, n := range []int{10, 1000} {
		m := client.New()
		for i := range n {
			name := "s" + itoa(i)
			if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
				b.Fatal(err)
			}
			if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
				b.Fatal(err)
			}
		}
		if got := m.View().NumTools(); got != 10*n {
			b.Fatalf("%d tools in the view, want %d", got, 10*n)
		}
		want := "s" + itoa(n-1) + "__j"
		b.Run("op=lookup/servers="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := m.View().Tool(want); !ok {
					b.Fatal("tool not found")
				}
			}
		})
		b.Run("op=walk/servers="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			var sink int
			for b.Loop() {
				v := m.View()
				for i := range v.NumTools() {
					sink += len(v.ToolAt(i).Qualified())
				}
			}
			_ = sink
		})
		m.Close()
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var buf [20]byte
	n := len(buf)
	for ; i > 0; i /= 10 {
		n--
		buf[n] = byte('0' + i%10)
	}
	return string(buf[n:])
}
