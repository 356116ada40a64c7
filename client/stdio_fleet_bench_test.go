package client_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// BenchmarkStdioFleet starts 300 stdio servers (the official Go SDK's, as a
// program of its own built without the race detector), 8 dialling at once,
// until each has answered tools/list, then closes them all: through the
// Manager (Add, WaitFor Connected, Close), and with raw mcp-go clients over
// stdio.Dial, 8 goroutines dialling and every close at once, as Close does.
// It reports the two phases as connect-ms and close-ms. The children's own
// start-up is most of the cost; compare with benchstat -col /impl.
func BenchmarkStdioFleet(b *testing.B) {
	const n, limit = 300, 8
	inv, err := gosdkserver.Build(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	spec := stdio.Spec{Command: inv.Path}
	report := func(b *testing.B, connect, close time.Duration) {
		b.ReportMetric(float64(connect.Milliseconds())/float64(b.N), "connect-ms")
		b.ReportMetric(float64(close.Milliseconds())/float64(b.N), "close-ms")
		b.ReportMetric(0, "ns/op")
	}

	b.Run(fmt.Sprintf("impl=raw/servers=%d", n), func(b *testing.B) {
		var connect, closing time.Duration
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			conns := make([]*stdio.Conn, n)
			clients := make([]*mcpclient.Client, n)
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range limit {
				wg.Go(func() {
					for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
						c, err := stdio.Dial(ctx, spec)
						if err != nil {
							b.Error(err)
							return
						}
						conns[i] = c
						cl := mcpclient.NewClient(c.Transport())
						clients[i] = cl
						var req mcp.InitializeRequest
						req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "test"}
						if err := cl.Start(ctx); err != nil {
							b.Error(err)
							return
						}
						if _, err := cl.Initialize(ctx, req); err != nil {
							b.Error(err)
							return
						}
						if _, err := cl.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			connect += time.Since(start)
			start = time.Now()
			for i := range n {
				wg.Go(func() {
					if clients[i] != nil {
						_ = clients[i].Close()
					}
					if conns[i] != nil {
						_ = conns[i].Close(ctx)
					}
				})
			}
			wg.Wait()
			closing += time.Since(start)
			cancel()
		}
		report(b, connect, closing)
	})

	b.Run(fmt.Sprintf("impl=manager/servers=%d", n), func(b *testing.B) {
		var connect, closing time.Duration
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			m := client.New(client.WithMaxConcurrentDials(limit), client.WithTimeouts(client.Timeouts{IdleProbe: -1}))
			start := time.Now()
			for i := range n {
				if err := m.Add(ctx, fmt.Sprint(i), client.ServerSpec{Stdio: &spec}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				if err := m.WaitFor(ctx, fmt.Sprint(i), lifecycle.Connected); err != nil {
					b.Fatal(err)
				}
			}
			connect += time.Since(start)
			start = time.Now()
			if err := m.Close(); err != nil {
				b.Error(err)
			}
			closing += time.Since(start)
			cancel()
		}
		report(b, connect, closing)
	})
}
