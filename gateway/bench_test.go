package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// BenchmarkCall is the gateway's overhead on one call: the same tool call
// (echo, one string argument) on the same kind of server (the fault
// server, a Go child over stdio), made
//
//   - impl=direct: with mcp-go's client straight to the server, with no
//     client info and no capabilities;
//   - impl=host: the same, by a client that says what a host says in every
//     2026-07-28 request's _meta and the Manager the gateway uses says too:
//     a client info (the Manager's), and sampling, elicitation (form and
//     URL) and roots, which the gateway's Manager declares to forward them;
//   - impl=manager: with the Manager the gateway calls through;
//   - impl=gateway: through the gateway, from the moment the downstream
//     request's bytes are read (mcp-go's server dispatching it to the
//     gateway's handler, the Manager's call over stdio, the result encoded);
//   - impl=gateway-http: the same by an mcp-go client over streamable HTTP
//     on loopback, which adds the downstream hop the direct call does not
//     make (a client of the gateway pays two hops where a direct client pays
//     one).
//
// Besides wall time each reports cpu-ns/op, the CPU time of the benchmark's
// process per call (the server child's is not in it): on a shared machine
// it is the steadier measure.
func BenchmarkCall(b *testing.B) {
	inv := faultserver.Command(faultserver.ModeNormal)
	args := map[string]any{"text": "hello"}
	b.Run("impl=direct", func(b *testing.B) {
		ctx := context.Background()
		c, err := mcpclient.NewStdioMCPClient(inv.Path, inv.EnvList(), inv.Args...)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "echo", args
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
		cputime.Report(b, cpu)
	})
	b.Run("impl=host", func(b *testing.B) {
		ctx := context.Background()
		h := hostHandlers{}
		c := mcpclient.NewClient(transport.NewStdio(inv.Path, inv.EnvList(), inv.Args...),
			mcpclient.WithSamplingHandler(h), mcpclient.WithRootsHandler(h), mcpclient.WithElicitationHandler(h),
			mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}}))
		defer c.Close()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ClientInfo = mcp.Implementation{Name: "mcpfleet", Version: "0.1.0"}
		if _, err := c.Initialize(ctx, init); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
			b.Fatal(err)
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "echo", args
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
		cputime.Report(b, cpu)
	})
	spec := client.ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}}
	b.Run("impl=manager", func(b *testing.B) {
		f := newFleet(b, map[string]client.ServerSpec{"f": spec})
		ctx := context.Background()
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			if res, err := f.m.CallTool(ctx, "f", "echo", args); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
		cputime.Report(b, cpu)
	})
	b.Run("impl=gateway", func(b *testing.B) {
		f := newFleet(b, map[string]client.ServerSpec{"f": spec}, gateway.WithClientLimits(-1, -1))
		msg := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hello"}}}`)
		ctx := context.Background()
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			resp := f.g.Server().HandleMessage(ctx, msg)
			if _, ok := resp.(mcp.JSONRPCResponse); !ok {
				b.Fatalf("%#v", resp)
			}
		}
		cputime.Report(b, cpu)
	})
	b.Run("impl=gateway-http", func(b *testing.B) {
		f := newFleet(b, map[string]client.ServerSpec{"f": spec}, gateway.WithClientLimits(-1, -1))
		c := dial(b, f.serveHTTP(b, gateway.HTTPOptions{}), "")
		toolNames(b, c)
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "f__echo", args
		ctx := context.Background()
		b.ReportAllocs()
		cpu := cputime.Process()
		for b.Loop() {
			if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
		cputime.Report(b, cpu)
	})
}

// BenchmarkSessions is the per-call cost as the gateway holds more: calls
// spread over every downstream session (mcp-go clients over streamable
// HTTP, each a session of its own) and every upstream (in-process mcp-go
// servers), made in parallel. The cost of a call should not grow with the
// sessions and upstreams held.
func BenchmarkSessions(b *testing.B) {
	for _, size := range []struct{ sessions, upstreams int }{{1, 1}, {100, 20}} {
		b.Run(fmt.Sprintf("sessions=%d/upstreams=%d", size.sessions, size.upstreams), func(b *testing.B) {
			servers := map[string]client.ServerSpec{}
			for i := range size.upstreams {
				servers[fmt.Sprintf("u%d", i)] = client.ServerSpec{Dialer: client.InProcess(upstream.New(fmt.Sprintf("u%d", i)).MCPServer)}
			}
			// The sessions are one client's (one address): no limit and no
			// cap, the benchmark is of the calls.
			f := newFleet(b, servers, gateway.WithClientLimits(-1, -1), gateway.WithSessionCaps(-1, -1, -1))
			url := f.serveHTTP(b, gateway.HTTPOptions{})
			clients := make([]*mcpclient.Client, size.sessions)
			for i := range clients {
				clients[i] = dialQuiet(b, url)
			}
			var next atomic.Int64
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := mcp.CallToolRequest{}
				for pb.Next() {
					n := int(next.Add(1))
					req.Params.Name = fmt.Sprintf("u%d__echo", n%size.upstreams)
					req.Params.Arguments = map[string]any{"text": "x"}
					if res, err := clients[n%size.sessions].CallTool(ctx, req); err != nil || res.IsError {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// dialQuiet is dial for benchmarks: a session (2025-11-25) without the
// notification stream, with its own connections.
func dialQuiet(b *testing.B, url string) *mcpclient.Client {
	tr, err := transport.NewStreamableHTTP(url, transport.WithLogger(slog.New(slog.DiscardHandler)),
		transport.WithHTTPTimeout(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"))
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// hostHandlers are impl=host's handlers of a server's requests, there to
// declare the capabilities; the benchmark's server sends none.
type hostHandlers struct{}

func (hostHandlers) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("not in this benchmark")
}

func (hostHandlers) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{}, nil
}

func (hostHandlers) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errors.New("not in this benchmark")
}
