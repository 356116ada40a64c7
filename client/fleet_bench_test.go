package client_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport/stdio"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
)

// fleetMax is the largest fleet the fleet benchmarks build. 10,000 servers
// take tens of seconds a run, so make bench stops at 1,000; BENCHMARKS.md
// gives the command for 10,000.
var fleetMax = flag.Int("fleet.max", 1000, "largest fleet of the BenchmarkFleet… benchmarks (100, 1000 or 10000)")

// fleetSizes are the fleet sizes up to -fleet.max.
func fleetSizes() []int {
	var out []int
	for _, n := range []int{100, 1000, 10000} {
		if n <= *fleetMax {
			out = append(out, n)
		}
	}
	return out
}

// fleetToolNames are the ten tools of every server of a fleet.
var fleetToolNames = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}

// fleetServers returns n mcp-go servers with ten tools each.
func fleetServers(n int) []*server.MCPServer {
	out := make([]*server.MCPServer, n)
	for i := range out {
		srv := server.NewMCPServer("fleet"+itoa(i), "1.0", server.WithToolCapabilities(false))
		for _, t := range fleetToolNames {
			srv.AddTool(mcp.NewTool(t, mcp.WithDescription("tool "+t), mcp.WithString("text")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("ok"), nil
				})
		}
		out[i] = srv
	}
	return out
}

// rawFleet connects a raw mcp-go in-process client to each server, one
// after another, as a host without the Manager would: Start, Initialize,
// ListTools. It keeps each client and its tools, as such a host would to
// use them (the Manager keeps them in its View).
type rawHost struct {
	clients []*mcpclient.Client
	tools   []*mcp.ListToolsResult
}

func rawFleet(tb testing.TB, srvs []*server.MCPServer) *rawHost {
	ctx := context.Background()
	h := &rawHost{clients: make([]*mcpclient.Client, len(srvs)), tools: make([]*mcp.ListToolsResult, len(srvs))}
	for i, srv := range srvs {
		c, err := mcpclient.NewInProcessClient(srv)
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			tb.Fatal(err)
		}
		var init mcp.InitializeRequest
		init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1.0"}
		if _, err := c.Initialize(ctx, init); err != nil {
			tb.Fatal(err)
		}
		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			tb.Fatal(err)
		}
		h.clients[i], h.tools[i] = c, tools
	}
	return h
}

func closeRaw(h *rawHost) {
	for _, c := range h.clients {
		c.Close()
	}
}

// managerFleet adds every server to m and returns once the View holds every
// server's tools.
func managerFleet(tb testing.TB, m *client.Manager, srvs []*server.MCPServer) {
	ctx := context.Background()
	for i, srv := range srvs {
		if err := m.Add(ctx, "s"+itoa(i), client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
			tb.Fatal(err)
		}
	}
	want := len(srvs) * len(fleetToolNames)
	for {
		v := m.View()
		if v.NumTools() == want {
			return
		}
		<-v.Changed()
	}
}

// settled returns the number of goroutines once it stops falling (the
// connect loops end just after their server is published) and the memory
// in use after a full collection: live heap and goroutine stacks.
func settled() (goroutines int, heap, stack uint64) {
	goroutines = runtime.NumGoroutine()
	for still := 0; still < 5; {
		time.Sleep(2 * time.Millisecond)
		if g := runtime.NumGoroutine(); g < goroutines {
			goroutines, still = g, 0
		} else {
			still++
		}
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return goroutines, ms.HeapAlloc, ms.StackInuse
}

// fleetMetrics accumulates what a connected fleet holds, per server.
type fleetMetrics struct {
	runs                    int
	heap, stack, goroutines float64
	cpu                     time.Duration // process CPU time while timed
	g0                      int
	h0, s0                  uint64
}

// before takes the process's measure before a fleet is built.
func (f *fleetMetrics) before() { f.g0, f.h0, f.s0 = settled() }

// after adds what the fleet of n servers holds beyond it.
func (f *fleetMetrics) after(n int) {
	g, h, s := settled()
	f.runs++
	f.heap += (float64(h) - float64(f.h0)) / float64(n)
	f.stack += (float64(s) - float64(f.s0)) / float64(n)
	f.goroutines += float64(g-f.g0) / float64(n)
}

func (f *fleetMetrics) report(b *testing.B) {
	if f.runs == 0 {
		return
	}
	r := float64(f.runs)
	b.ReportMetric(f.heap/r, "heap-B/server")
	b.ReportMetric(f.stack/r, "stack-B/server")
	b.ReportMetric((f.heap+f.stack)/r, "mem-B/server")
	b.ReportMetric(f.goroutines/r, "goroutines/server")
	b.ReportMetric(float64(f.cpu)/r, "cpu-ns/op")
}

// BenchmarkFleetConnect connects N in-process servers (ten tools each)
// until every tool is in hand: through the Manager (Add each, then wait
// until the View holds every tool) and with raw mcp-go clients connected
// one after another (Start, Initialize, ListTools, keeping the tools). It
// also reports what the connected fleet holds per server beyond what the
// process held before: live heap plus goroutine stacks (the servers
// themselves were built before), and goroutines, once the fleet settled.
// Compare with benchstat -col /impl.
func BenchmarkFleetConnect(b *testing.B) {
	for _, n := range fleetSizes() {
		srvs := fleetServers(n)
		b.Run("servers="+itoa(n), func(b *testing.B) {
			b.Run("impl=raw", func(b *testing.B) {
				var fm fleetMetrics
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					fm.before()
					b.StartTimer()
					cpu := client.ProcessCPUTime()
					clients := rawFleet(b, srvs)
					fm.cpu += client.ProcessCPUTime() - cpu
					b.StopTimer()
					fm.after(n)
					closeRaw(clients)
					b.StartTimer()
				}
				fm.report(b)
			})
			b.Run("impl=manager", func(b *testing.B) {
				var fm fleetMetrics
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					fm.before()
					b.StartTimer()
					cpu := client.ProcessCPUTime()
					m := client.New()
					managerFleet(b, m, srvs)
					fm.cpu += client.ProcessCPUTime() - cpu
					b.StopTimer()
					fm.after(n)
					if err := m.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				fm.report(b)
			})
		})
	}
}

// BenchmarkFleetClose closes a fleet of 1,000 connected in-process servers:
// Manager.Close against closing the raw mcp-go clients one after another.
// close-ns/op is the close alone; ns/op also counts building the fleet,
// which keeps the number of iterations (each a fleet) small.
func BenchmarkFleetClose(b *testing.B) {
	const n = 1000
	srvs := fleetServers(n)
	b.Run("servers="+itoa(n), func(b *testing.B) {
		b.Run("impl=raw", func(b *testing.B) {
			var took time.Duration
			for i := 0; i < b.N; i++ {
				clients := rawFleet(b, srvs)
				start := time.Now()
				closeRaw(clients)
				took += time.Since(start)
			}
			b.ReportMetric(float64(took)/float64(b.N), "close-ns/op")
		})
		b.Run("impl=manager", func(b *testing.B) {
			var took time.Duration
			for i := 0; i < b.N; i++ {
				m := client.New()
				managerFleet(b, m, srvs)
				start := time.Now()
				if err := m.Close(); err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
			}
			b.ReportMetric(float64(took)/float64(b.N), "close-ns/op")
		})
	})
}

// lazyConfig is a config of n lazy stdio servers: Apply adds them without
// dialling any.
func lazyConfig(tb testing.TB, n int) *client.Config {
	cfg := &client.Config{Source: "bench", Servers: make(map[string]client.ServerConfig, n)}
	for i := range n {
		cfg.Servers[fmt.Sprintf("s%05d", i)] = client.ServerConfig{Type: "stdio", ServerSpec: client.ServerSpec{
			Stdio: &stdio.Spec{Command: "mcp-server-" + itoa(i), Args: []string{"--port", itoa(i)}}, Lazy: true}}
	}
	return cfg
}

// BenchmarkFleetApply applies a config of N lazy servers: to an empty
// Manager (op=add: N adds), again (op=unchanged), and an empty config
// (op=remove: N removals).
func BenchmarkFleetApply(b *testing.B) {
	ctx := context.Background()
	empty := &client.Config{Source: "bench", Servers: map[string]client.ServerConfig{}}
	for _, n := range fleetSizes() {
		cfg := lazyConfig(b, n)
		apply := func(b *testing.B, m *client.Manager, cfg *client.Config) {
			if _, err := m.Apply(ctx, cfg); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("servers="+itoa(n)+"/op=add", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				m := client.New()
				b.StartTimer()
				apply(b, m, cfg)
				b.StopTimer()
				m.Close()
				b.StartTimer()
			}
		})
		b.Run("servers="+itoa(n)+"/op=unchanged", func(b *testing.B) {
			m := client.New()
			defer m.Close()
			apply(b, m, cfg)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				apply(b, m, cfg)
			}
		})
		b.Run("servers="+itoa(n)+"/op=remove", func(b *testing.B) {
			m := client.New()
			defer m.Close()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				apply(b, m, cfg)
				b.StartTimer()
				apply(b, m, empty)
			}
		})
	}
}

// BenchmarkFleetStatuses lists the statuses of a fleet of 1,000 lazy
// servers.
func BenchmarkFleetStatuses(b *testing.B) {
	ctx := context.Background()
	m := client.New()
	defer m.Close()
	if _, err := m.Apply(ctx, lazyConfig(b, 1000)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(m.Statuses()) != 1000 {
			b.Fatal("statuses missing")
		}
	}
}

// BenchmarkFleetCallTool is BenchmarkCallTool's call (the in-process echo)
// made with a fleet of other connected servers of ten tools each beside the
// one called, 1, 100, 1,000 (and with -fleet.max 10000, 10,000) servers in
// all: through a Manager that holds them all, and on a raw mcp-go client
// while the same number of raw clients are connected beside it (the same
// heap for the collector to go through), side by side. The call's overhead
// must not grow with the fleet.
func BenchmarkFleetCallTool(b *testing.B) {
	args := map[string]any{"text": "hello"}
	srv := benchServer()
	for _, n := range append([]int{1}, fleetSizes()...) {
		others := fleetServers(n - 1)
		b.Run("servers="+itoa(n), func(b *testing.B) {
			b.Run("impl=raw", func(b *testing.B) {
				fleet := rawFleet(b, others)
				defer closeRaw(fleet)
				c, err := mcpclient.NewInProcessClient(srv)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				client.BenchRawCallTool(b, c, args, nil)
			})
			b.Run("impl=manager", func(b *testing.B) {
				m := client.New()
				defer m.Close()
				managerFleet(b, m, others)
				if err := m.Add(context.Background(), "called", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
					b.Fatal(err)
				}
				client.BenchCallToolOn(b, m, "called", args)
			})
		})
	}
}
