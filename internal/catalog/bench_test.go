package catalog

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The fleets the benchmarks publish into: servers of benchToolsPerServer
// tools each. The file uses only the Publisher's API, so that the same
// benchmarks run on the code before and after a change.
var benchSizes = []int{100, 1000, 10000}

const benchToolsPerServer = 10

// benchFleet is a Publisher holding one catalog for each of its servers.
type benchFleet struct {
	p       *Publisher
	servers []benchServer
}

// benchServer is one server of a benchFleet and the two catalogs it
// alternates between: cats[1] has one tool more than cats[0].
type benchServer struct {
	name string
	gen  uint64
	cats [2]*Catalog // sealed, of generation gen
	cur  int         // the one published
}

// fleets holds the benchFleet of each size, built once per process and
// shared by the benchmarks: before issue 12 a publish cost O(total tools),
// and building 10,000 servers took minutes. Each benchmark leaves every
// server published, so the next finds the fleet at its size.
var fleets = map[int]*benchFleet{}

func fleetOf(b *testing.B, servers int) *benchFleet {
	b.Helper()
	if f, ok := fleets[servers]; ok {
		return f
	}
	f := &benchFleet{p: NewPublisher(Naming{}), servers: make([]benchServer, servers)}
	for s := range f.servers {
		c := &Catalog{Server: fmt.Sprintf("server%05d", s), Generation: 1}
		for i := range benchToolsPerServer {
			c.Tools = append(c.Tools, tool(fmt.Sprintf("tool_%d", i), "a tool that does a thing", "query", "limit"))
		}
		c.Seal()
		f.servers[s] = benchServer{name: c.Server, gen: 1, cats: [2]*Catalog{c, c.WithTools(append([]mcp.Tool{tool("extra", "")}, c.Tools...))}}
		if _, ok := f.p.Publish(c, ""); !ok {
			b.Fatal("publish ignored")
		}
	}
	fleets[servers] = f
	return f
}

// BenchmarkPublish publishes a changed catalog (one tool more or less) of
// one server into a fleet: a list_changed refresh, or a reconnect that
// found a new catalog. The catalogs are sealed beforehand, as the fetching
// goroutine does outside the Publisher's lock.
func BenchmarkPublish(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			f := fleetOf(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s := &f.servers[i%n]
				i++
				s.cur = 1 - s.cur
				if d, ok := f.p.Publish(s.cats[s.cur], ""); !ok || d.Empty() {
					b.Fatal("publish made no change")
				}
			}
		})
	}
}

// BenchmarkUnpublish takes one server's catalog out of a fleet, as when a
// server is disabled or fails for good. Publishing it back is not timed.
func BenchmarkUnpublish(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			f := fleetOf(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s := &f.servers[i%n]
				i++
				if d, ok := f.p.Unpublish(s.name, s.gen); !ok || d.Empty() {
					b.Fatal("unpublish made no change")
				}
				b.StopTimer()
				s.gen++
				for j, c := range s.cats {
					cp := *c // still sealed: the lists are the same
					cp.Generation = s.gen
					s.cats[j] = &cp
				}
				if _, ok := f.p.Publish(s.cats[s.cur], ""); !ok {
					b.Fatal("publish ignored")
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkPublishUnchanged is a reconnect that fetched the same catalog:
// the hash comparison short-circuits and no View is built.
func BenchmarkPublishUnchanged(b *testing.B) {
	f := fleetOf(b, 1000)
	s := &f.servers[500]
	b.ReportAllocs()
	for b.Loop() {
		if d, ok := f.p.Publish(s.cats[s.cur], ""); !ok || !d.Empty() {
			b.Fatal("unexpected change")
		}
	}
}

// BenchmarkViewTools loads the View and walks all 10,000 tools of 1,000
// servers, as a host does to render them for the model. Loading and getting
// the slice are constant time; the walk is the reader's own loop. Zero
// allocations.
func BenchmarkViewTools(b *testing.B) {
	p := fleetOf(b, 1000).p
	b.ReportAllocs()
	var n int
	for b.Loop() {
		tools := p.View().Tools()
		for i := range tools {
			n += len(tools[i].Qualified)
		}
	}
	if n == 0 {
		b.Fatal("no tools")
	}
}

// BenchmarkView is the per-request cost of reading: one atomic load.
func BenchmarkView(b *testing.B) {
	p := fleetOf(b, 1000).p
	b.ReportAllocs()
	var n uint64
	for b.Loop() {
		n += p.View().Version()
	}
	_ = n
}

// BenchmarkViewTool looks a tool up by qualified name, as Call does.
func BenchmarkViewTool(b *testing.B) {
	p := fleetOf(b, 1000).p
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := p.View().Tool("server00500__tool_5"); !ok {
			b.Fatal("not found")
		}
	}
}

// BenchmarkViewToolScattered looks up the 10,000 tools of 1,000 servers in
// a scattered order, as calls to many servers do: unlike BenchmarkViewTool,
// most lookups find little of the index in the CPU's caches.
func BenchmarkViewToolScattered(b *testing.B) {
	p := fleetOf(b, 1000).p
	var names []string
	for _, t := range p.View().Tools() {
		names = append(names, t.Qualified)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := p.View().Tool(names[i]); !ok {
			b.Fatal("not found")
		}
		i = (i + 7919) % len(names)
	}
}

// BenchmarkPublisherHeap reports the heap a Publisher holds per server
// with 1,000 servers of 10 tools published and its View walked once. The
// servers share one catalog's tools, so what is counted is the Publisher's
// own: its Views, indexes and claims. Run it with -benchtime 1x.
func BenchmarkPublisherHeap(b *testing.B) {
	template := fleetOf(b, 100).servers[0].cats[0]
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := NewPublisher(Naming{})
		for s := range 1000 {
			c := *template // still sealed: the lists are the same
			c.Server = fmt.Sprintf("server%05d", s)
			if _, ok := p.Publish(&c, ""); !ok {
				b.Fatal("publish ignored")
			}
		}
		p.View().Tools()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1000, "B/server")
		runtime.KeepAlive(p)
	}
}

// BenchmarkSeal is the cost of hashing one 10-tool catalog, paid by the
// goroutine that fetched it.
func BenchmarkSeal(b *testing.B) {
	c := fleetOf(b, 100).servers[0].cats[0]
	b.ReportAllocs()
	for b.Loop() {
		cp := *c
		cp.Seal()
	}
}
