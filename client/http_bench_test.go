package client

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver/process"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// BenchmarkHTTPRestart measures the time from a server restart on the same
// port (the new server listens) to the end of the host's first successful
// call, against the official Go SDK's stateful server (sessions, a GET
// stream, the Manager on the initialize handshake after -32022). The
// metric is the median, in ms-to-call; ns/op is the whole stop/restart cycle.
//
//   - path=stream: the notification stream's loss moved the slot to
//     Reconnecting, and a redial was refused, before the restart (the normal
//     case: a restart takes longer than noticing); the call waits for the
//     next scheduled redial, so the reconnect policy's backoff dominates.
//   - path=stale: the stream's loss is hidden from the Manager (a server
//     without a stream); the call meets the stale session, the runtime is
//     replaced and the call retried.
//   - path=immediate: the call is issued right after a restart that took
//     microseconds, racing the stream's loss; failed/op counts the calls
//     that got an error (a POST on a keep-alive connection to the dead
//     server: outcome unknown).
//
// policy=default is lifecycle's default reconnect policy: the connection
// answered calls, so its loss starts a fresh budget with the fast ramp, and
// the first call after the restart pulls the next redial forward.
// policy=no-ramp turns the ramp off (FastInterval < 0), which leaves the
// pull-forward alone to find the server.
func BenchmarkHTTPRestart(b *testing.B) {
	for _, p := range []struct {
		name   string
		policy lifecycle.Policy
	}{{"default", lifecycle.Policy{}}, {"no-ramp", lifecycle.Policy{FastInterval: -1}}} {
		for _, path := range []string{"stream", "stale", "immediate"} {
			b.Run("policy="+p.name+"/path="+path, func(b *testing.B) {
				benchRestart(b, p.policy, path)
			})
		}
	}
}

func benchRestart(b *testing.B, policy lifecycle.Policy, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv := httpserver.Start(b, httpserver.GoSDKStateful)
	m := New(WithPolicy(policy), WithTimeouts(Timeouts{Ready: 10 * time.Second}))
	defer m.Close()
	spec := ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}}
	d := &blindDialer{spec: mcphttp.Spec{URL: srv.URL()}, legacy: true}
	if path == "stale" {
		spec = ServerSpec{Dialer: d.dial}
	}
	if err := m.Add(ctx, "s", spec); err != nil {
		b.Fatal(err)
	}
	if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"message": "hi"}
	if _, err := m.CallTool(ctx, "s", "echo", args); err != nil {
		b.Fatal(err)
	}
	events, unsubscribe := m.Events(1024)
	defer unsubscribe()
	var (
		took    []time.Duration
		failed  int
		lastErr error
	)
	for b.Loop() {
		drainHTTPEvents(events)
		srv.Stop()
		switch path {
		case "stream":
			awaitHTTPRetry(ctx, b, events)
		case "stale":
			d.awaitDead(ctx, b)
		}
		srv.Restart(b)
		start := time.Now()
		_, err := m.CallTool(ctx, "s", "echo", args)
		if err != nil {
			if path != "immediate" {
				b.Fatalf("first call after the restart: %v", err)
			}
			failed++
			lastErr = err
			if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
				b.Fatal(err)
			}
			continue
		}
		took = append(took, time.Since(start))
	}
	if len(took) > 0 {
		slices.Sort(took)
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(ms(took[len(took)/2]), "ms-to-call")
		b.ReportMetric(ms(took[len(took)*9/10]), "p90-ms-to-call")
	}
	if path == "immediate" {
		b.ReportMetric(float64(failed)/float64(b.N), "failed/op")
		if lastErr != nil {
			b.Logf("%d of %d immediate calls failed; the last: %v", failed, b.N, lastErr)
		}
	}
}

// drainHTTPEvents empties events without waiting.
func drainHTTPEvents(events <-chan Event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

// awaitHTTPRetry waits for a redial to fail: the server is noticed down.
func awaitHTTPRetry(ctx context.Context, b *testing.B, events <-chan Event) {
	for {
		select {
		case e := <-events:
			if e.Kind == EventRetry {
				return
			}
		case <-ctx.Done():
			b.Fatal("no failed redial")
		}
	}
}

// BenchmarkHTTPCallTool compares a tools/call through the Manager over
// streamable HTTP with the same call on a plain mcp-go streamable HTTP
// client, against the same mcp-go server on 127.0.0.1. Compare the two with
// benchstat -col /impl. Besides wall time it reports cpu-ns/op, the CPU
// time of the whole process (client and server) per call, which a machine
// shared with other work disturbs far less than wall time.
func BenchmarkHTTPCallTool(b *testing.B) {
	ctx := context.Background()
	srv := httpserver.Start(b, httpserver.MCPGo)
	args := map[string]any{"message": "hello"}

	b.Run("impl=raw", func(b *testing.B) {
		tr, err := mcptransport.NewStreamableHTTP(srv.URL())
		if err != nil {
			b.Fatal(err)
		}
		c := mcpclient.NewClient(tr)
		defer c.Close()
		BenchRawCallTool(b, c, args, nil)
	})

	// The Manager's transport without the Manager: an mcp-go client on an
	// HTTP Conn with its notification stream open, to tell the Manager's
	// own cost from the stream's.
	b.Run("impl=conn", func(b *testing.B) {
		conn, err := mcphttp.Dial(ctx, mcphttp.Spec{URL: srv.URL()}, mcphttp.WithLogger(nil))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		BenchRawCallTool(b, mcpclient.NewClient(conn.Transport()), args,
			func(c *mcpclient.Client) error { return conn.Ready(ctx, c) })
	})

	b.Run("impl=manager", func(b *testing.B) {
		BenchManagerCallTool(b, ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}}, args)
	})
}

// BenchmarkHTTPCallToolServers compares a tools/call through the Manager
// with the same call on a plain mcp-go streamable HTTP client, against
// servers that answer with SSE (the official Go SDK's handler, stateful
// and stateless) and with JSON (mcp-go's), by 1 and 16 callers at once,
// with every limit of the Manager on (its defaults). The server runs in a
// process of its own, so that B/op and allocs/op are the client's alone.
// Compare with benchstat -col /impl.
func BenchmarkHTTPCallToolServers(b *testing.B) {
	args := map[string]any{"message": "hello"}
	for _, kind := range []httpserver.Kind{httpserver.GoSDKStateful, httpserver.GoSDKStateless, httpserver.MCPGo} {
		b.Run("server="+kind.String(), func(b *testing.B) {
			srv := process.Start(b, kind)
			for _, callers := range []int{1, 16} {
				b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
					b.Run("impl=raw", func(b *testing.B) {
						tr, err := mcptransport.NewStreamableHTTP(srv.URL())
						if err != nil {
							b.Fatal(err)
						}
						var copts []mcpclient.ClientOption
						if kind == httpserver.GoSDKStateful {
							// It rejects 2026-07-28 at the first real request;
							// the Manager finds that out at its first dial.
							copts = append(copts, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
						}
						c := mcpclient.NewClient(tr, copts...)
						defer c.Close()
						benchRawCallToolParallel(b, c, args, callers)
					})
					b.Run("impl=manager", func(b *testing.B) {
						m := New()
						defer m.Close()
						if err := m.Add(context.Background(), "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}}); err != nil {
							b.Fatal(err)
						}
						if err := m.WaitFor(context.Background(), "s", lifecycle.Connected); err != nil {
							b.Fatal(err)
						}
						benchParallel(b, callers, func() error {
							_, err := m.CallTool(context.Background(), "s", "echo", args)
							return err
						})
					})
				})
			}
		})
	}
}

// benchRawCallToolParallel initializes c and times calls of "echo" on it
// by callers goroutines.
func benchRawCallToolParallel(b *testing.B, c *mcpclient.Client, args any, callers int) {
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = defaultOptions().clientInfo
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	// As a host does, and the Manager: mcp-go keeps the tools it listed
	// and derives a call's headers from the tool's schema on 2026-07-28.
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		b.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = args
	benchParallel(b, callers, func() error {
		_, err := c.CallTool(ctx, req)
		return err
	})
}

// benchParallel times call made by callers goroutines at once (one: on the
// benchmark's own goroutine), reporting allocations and the process's CPU
// time per call.
func benchParallel(b *testing.B, callers int, call func() error) {
	if callers <= 1 {
		benchLoop(b, call)
		return
	}
	b.ReportAllocs()
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	cpu := processCPUTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(processCPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}
