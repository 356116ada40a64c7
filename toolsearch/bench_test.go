package toolsearch_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// latencies collects per-operation durations for percentiles.
type latencies []time.Duration

func (l *latencies) time(f func()) {
	start := time.Now()
	f()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkApplyOneServer is the index update for one server's change (a
// 10-tool server of the corpus flips between two versions of its catalog)
// in fleets of 100 and 10,000 servers: Apply costs the changed server's
// tools, so the two should match.
func BenchmarkApplyOneServer(b *testing.B) {
	servers, err := toolcorpus.Servers()
	if err != nil {
		b.Fatal(err)
	}
	var tools []mcp.Tool
	for _, s := range servers {
		tools = append(tools, s.Tools...)
	}
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			p := catalog.NewPublisher(catalog.Naming{})
			for i := range n {
				// Each server offers 10 tools of the corpus, a different
				// window for each, so the fleet's terms are the corpus's.
				start := (i * 10) % (len(tools) - 10)
				p.Publish(toolcorpus.Catalog(fmt.Sprintf("s%05d", i), 1, tools[start:start+10]), "")
			}
			x := toolsearch.New()
			x.Sync(toolcorpus.View(p))
			versions := [2][]mcp.Tool{tools[0:10], tools[10:20]}
			var gen uint64 = 1
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				gen++
				d, ok := p.Publish(toolcorpus.Catalog("s00000", gen, versions[i%2]), "")
				if !ok {
					b.Fatal("publish ignored")
				}
				v := toolcorpus.View(p)
				b.StartTimer()
				x.Apply(v, toolsearch.Touched(snapshot.Diff{Added: d.Added, Removed: d.Removed, Changed: d.Changed})...)
			}
		})
	}
}

// BenchmarkSync is a full Sync after one server changed, for comparison
// with Apply: it walks the whole View.
func BenchmarkSync(b *testing.B) {
	servers, err := toolcorpus.Servers()
	if err != nil {
		b.Fatal(err)
	}
	for _, copies := range []int{1, 25} {
		v := toolcorpus.View(toolcorpus.Publisher(servers, copies))
		b.Run(fmt.Sprintf("tools=%d", v.NumTools()), func(b *testing.B) {
			x := toolsearch.New()
			b.ReportAllocs()
			for b.Loop() {
				x.Sync(v)
			}
		})
	}
}

// BenchmarkPutOneServer is BenchmarkApplyOneServer for an index filled by
// Put: one 10-tool server flips between two versions of its tools in
// indexes of 100 and 10,000 servers. Put costs the server's tools, so the
// two should match.
func BenchmarkPutOneServer(b *testing.B) {
	servers, err := toolcorpus.Servers()
	if err != nil {
		b.Fatal(err)
	}
	var tools []mcp.Tool
	for _, s := range servers {
		tools = append(tools, s.Tools...)
	}
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			x := toolsearch.New()
			for i := range n {
				start := (i * 10) % (len(tools) - 10)
				if err := x.Put(fmt.Sprintf("s%05d", i), tools[start:start+10]...); err != nil {
					b.Fatal(err)
				}
			}
			versions := [2][]mcp.Tool{tools[0:10], tools[10:20]}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := x.Put("s00000", versions[i%2]...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
