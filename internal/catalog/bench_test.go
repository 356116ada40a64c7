package catalog

import (
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

const benchServers, benchToolsPerServer = 1000, 10

// fleet returns a Publisher with benchServers servers of benchToolsPerServer
// tools each, and the catalogs it published.
func fleet(b *testing.B) (*Publisher, []*Catalog) {
	b.Helper()
	p := NewPublisher(Naming{})
	cats := make([]*Catalog, benchServers)
	for s := range benchServers {
		c := &Catalog{Server: fmt.Sprintf("server%04d", s), Generation: 1}
		for i := range benchToolsPerServer {
			c.Tools = append(c.Tools, tool(fmt.Sprintf("tool_%d", i), "a tool that does a thing", "query", "limit"))
		}
		cats[s] = c.Seal()
		if _, ok := p.Publish(cats[s], ""); !ok {
			b.Fatal("publish ignored")
		}
	}
	return p, cats
}

// BenchmarkViewTools loads the View and walks all 10,000 tools, as a host does
// to render them for the model. Loading and getting the slice are constant
// time; the walk is the reader's own loop. Zero allocations.
func BenchmarkViewTools(b *testing.B) {
	p, _ := fleet(b)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		tools := p.View().Tools()
		for i := range tools { // by index: a Tool is ~450 bytes, not worth copying
			n += len(tools[i].Qualified)
		}
	}
	if n == 0 {
		b.Fatal("no tools")
	}
}

// BenchmarkView is the per-request cost of reading: one atomic load.
func BenchmarkView(b *testing.B) {
	p, _ := fleet(b)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n += len(p.View().Tools())
	}
	_ = n
}

// BenchmarkViewTool looks a tool up by qualified name, as Call does.
func BenchmarkViewTool(b *testing.B) {
	p, _ := fleet(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := p.View().Tool("server0500__tool_5"); !ok {
			b.Fatal("not found")
		}
	}
}

// BenchmarkPublish republishes one server's changed catalog into a fleet of
// 1,000 servers × 10 tools: the View rebuild is O(total tools), which is what
// this measures. The catalogs are sealed beforehand, as the fetching
// goroutine does outside the Publisher's lock.
func BenchmarkPublish(b *testing.B) {
	p, cats := fleet(b)
	alt := make([]*Catalog, len(cats))
	for i, c := range cats {
		alt[i] = c.WithTools(append([]mcp.Tool{tool("extra", "")}, c.Tools...))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := i % len(cats)
		c := cats[s]
		if (i/len(cats))%2 == 0 {
			c = alt[s]
		}
		if d, ok := p.Publish(c, ""); !ok || d.Empty() {
			b.Fatal("publish made no change")
		}
		i++
	}
}

// BenchmarkPublishUnchanged is a reconnect that fetched the same catalog:
// the hash comparison short-circuits and no View is built.
func BenchmarkPublishUnchanged(b *testing.B) {
	p, cats := fleet(b)
	b.ReportAllocs()
	for b.Loop() {
		if d, ok := p.Publish(cats[500], ""); !ok || !d.Empty() {
			b.Fatal("unexpected change")
		}
	}
}

// BenchmarkSeal is the cost of hashing one 10-tool catalog, paid by the
// goroutine that fetched it.
func BenchmarkSeal(b *testing.B) {
	_, cats := fleet(b)
	b.ReportAllocs()
	for b.Loop() {
		cp := *cats[0]
		cp.Seal()
	}
}
