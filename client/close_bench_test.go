package client_test

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// closeChildren is the fleet of BenchmarkCloseIgnoringEOF; 0 skips it.
// It starts that many processes (and on Linux as many guards), which a
// plain go test -bench . should not.
var closeChildren = flag.Int("close.children", 0, "stdio children of BenchmarkCloseIgnoringEOF (1000 for BENCHMARKS.md; 0 skips it)")

// BenchmarkCloseIgnoringEOF closes n stdio servers that keep running after
// their stdin closes and end on SIGTERM (faultserver.ModeIgnoreEOF, this
// test binary re-executed), every one connected: through the Manager
// (Add, WaitFor Connected, Close), and, for the floor, with raw mcp-go
// clients over stdio.Dial closed all at once. Each child takes the close
// grace (stdio.DefaultCloseGrace) and then SIGTERM, so the whole fleet can
// close in about one grace. It reports Close's time as close-ms; the
// connects are not timed. Opt-in, since it starts n processes:
//
//	go test -run '^$' -bench '^BenchmarkCloseIgnoringEOF$' -benchtime 1x -count 3 ./client/ -args -close.children 1000
func BenchmarkCloseIgnoringEOF(b *testing.B) {
	n := *closeChildren
	if n <= 0 {
		b.Skip("opt-in: -close.children N starts N processes")
	}
	const dials = 8
	inv := faultserver.Command(faultserver.ModeIgnoreEOF)
	spec := stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}
	report := func(b *testing.B, closing time.Duration) {
		b.ReportMetric(float64(closing.Milliseconds())/float64(b.N), "close-ms")
		b.ReportMetric(0, "ns/op")
	}

	b.Run(fmt.Sprintf("impl=raw/children=%d", n), func(b *testing.B) {
		var closing time.Duration
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			conns := make([]*stdio.Conn, n)
			clients := make([]*mcpclient.Client, n)
			var next atomic.Int64
			var wg sync.WaitGroup
			for range dials {
				wg.Go(func() {
					for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
						c, err := stdio.Dial(ctx, spec)
						if err != nil {
							b.Error(err)
							return
						}
						conns[i] = c
						clients[i] = mcpclient.NewClient(c.Transport())
						var req mcp.InitializeRequest
						req.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "test"}
						if err := clients[i].Start(ctx); err != nil {
							b.Error(err)
							return
						}
						if _, err := clients[i].Initialize(ctx, req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			start := time.Now()
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
		report(b, closing)
	})

	b.Run(fmt.Sprintf("impl=manager/children=%d", n), func(b *testing.B) {
		var closing time.Duration
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			m := client.New(client.WithMaxConcurrentDials(dials), client.WithTimeouts(client.Timeouts{IdleProbe: -1, Ready: 10 * time.Minute, Dial: 10 * time.Minute}))
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
			start := time.Now()
			if err := m.Close(); err != nil {
				b.Error(err)
			}
			closing += time.Since(start)
			cancel()
		}
		report(b, closing)
	})
}
