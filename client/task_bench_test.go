package client

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
)

// The cost of polling open tasks (issue 27): 10,000 tasks on 100 servers
// (mcp-go's task server in process, 100 tasks each), all polled once per
// op: the Manager's clock moves one poll interval and every task is polled
// once (a tasks/get through the request pipeline, answered by the server).
// Reported per poll: wall and CPU time, bytes and allocations; and the
// heap the open tasks hold, the servers' share included.
func BenchmarkTaskPolling(b *testing.B) {
	const servers, perServer = 100, 100
	const total = servers * perServer
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	var polls atomic.Int64
	round := make(chan struct{}, 1)
	m := New(WithClock(clock), WithTasks(TaskOptions{Store: store.NewMemoryTaskStore()}), WithTimeouts(Timeouts{IdleProbe: -1}),
		WithMaxConcurrentDials(servers),
		func(o *options) {
			o.taskPolled = func(*Task) {
				if polls.Add(1)%total == 0 {
					round <- struct{}{}
				}
			}
		})
	defer m.Close()
	ctx := context.Background()
	var ts []*taskserver.Server
	for i := range servers {
		s := taskserver.New()
		defer s.Close()
		ts = append(ts, s)
		if err := m.Add(ctx, fmt.Sprint("s", i), ServerSpec{Dialer: s.Dial}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range servers {
		if err := m.WaitFor(ctx, fmt.Sprint("s", i), lifecycle.Connected); err != nil {
			b.Fatal(err)
		}
	}
	heap0 := heapInUse()
	var g errgroup.Group
	g.SetLimit(32)
	for i := range servers {
		for j := range perServer {
			g.Go(func() error {
				_, err := m.StartTask(ctx, fmt.Sprint("s", i), taskserver.ToolWork, map[string]any{"job": fmt.Sprint("j", j)})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	heapPerTask := float64(heapInUse()-heap0) / total

	b.Run("impl=raw", func(b *testing.B) {
		// mcp-go's own client, one per server, polling as many tasks of
		// its own (mcp-go's server shows a task to its session alone) with
		// tasks/get, as many at once per server as the Manager does.
		byServer := map[string][]string{}
		clients := make([]*mcpclient.Client, servers)
		for i, s := range ts {
			conn, err := s.Dial(ctx)
			if err != nil {
				b.Fatal(err)
			}
			c := mcpclient.NewClient(conn.Transport(), mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			clients[i] = c
			for j := range perServer {
				resp, err := c.GetTransport().SendRequest(ctx, mcptransport.JSONRPCRequest{
					JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(fmt.Sprint("raw-", j)), Method: string(mcp.MethodToolsCall),
					Params: map[string]any{"name": taskserver.ToolWork, "arguments": map[string]any{"job": "raw"}, "task": map[string]any{}},
				})
				if err != nil || resp.Error != nil {
					b.Fatal(err, resp)
				}
				var created mcp.CreateTaskResult
				if err := json.Unmarshal(resp.Result, &created); err != nil {
					b.Fatal(err)
				}
				byServer[fmt.Sprint("s", i)] = append(byServer[fmt.Sprint("s", i)], created.Task.TaskId)
			}
		}
		benchPollRounds(b, total, func() {
			var g errgroup.Group
			for i, c := range clients {
				ids := byServer[fmt.Sprint("s", i)]
				for w := range DefaultTaskPollConcurrency {
					g.Go(func() error {
						for k := w; k < len(ids); k += DefaultTaskPollConcurrency {
							if _, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: ids[k]}}); err != nil {
								return err
							}
						}
						return nil
					})
				}
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("impl=manager", func(b *testing.B) {
		benchPollRounds(b, total, func() {
			clock.Advance(DefaultTaskPollInterval)
			<-round
		})
		b.ReportMetric(heapPerTask, "heap-B/task")
	})
}

// benchPollRounds times rounds of total polls each, and reports per poll:
// wall and CPU time, allocations and bytes.
func benchPollRounds(b *testing.B, total int, round func()) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu := processCPUTime()
	start := time.Now()
	rounds := 0
	for b.Loop() {
		round()
		rounds++
	}
	wall := time.Since(start)
	cpu = processCPUTime() - cpu
	runtime.ReadMemStats(&ms1)
	n := float64(rounds * total)
	b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/poll")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/poll")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/poll")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/poll")
	b.ReportMetric(0, "ns/op")
}

// The memory of an open task handle on its own: a Manager loads 10,000
// open tasks from its store, with none of their servers added (so nothing
// is polled), and the heap it then holds is divided among them.
func BenchmarkTaskHandles(b *testing.B) {
	const total = 10_000
	st := store.NewMemoryTaskStore()
	ctx := context.Background()
	for i := range total {
		if err := st.SaveTask(ctx, store.TaskRecord{Server: fmt.Sprint("s", i%100), TaskID: fmt.Sprintf("%032x", i),
			Tool: "work", Protocol: TaskProtocolCore, Status: "working", Started: time.Unix(1_000_000, 0),
			TTL: time.Hour, PollInterval: time.Second}); err != nil {
			b.Fatal(err)
		}
	}
	var perTask float64
	for b.Loop() {
		h0 := heapInUse()
		m := New(WithTasks(TaskOptions{Store: st}), WithTimeouts(Timeouts{IdleProbe: -1}))
		if n := len(m.Tasks()); n != total {
			b.Fatalf("%d tasks", n)
		}
		perTask = float64(heapInUse()-h0) / total
		_ = m.Close()
	}
	b.ReportMetric(perTask, "heap-B/task")
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
