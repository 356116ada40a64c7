package snapshot

import (
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// published returns the host's View of a publisher holding two servers whose
// tools collide once, and the publisher's own View of the same moment.
func published(t *testing.T) (*View, *catalog.View) {
	t.Helper()
	p := catalog.NewPublisher(catalog.Naming{})
	for _, c := range []*catalog.Catalog{
		{Server: "a", Generation: 1, Tools: []mcp.Tool{mcp.NewTool("x"), mcp.NewTool("y")},
			Prompts: []mcp.Prompt{mcp.NewPrompt("p")}, Instructions: "be brief"},
		{Server: "b", Generation: 2, Tools: []mcp.Tool{mcp.NewTool("z")}},
	} {
		if _, ok := p.Publish(c.Seal(), ""); !ok {
			t.Fatalf("publish %s ignored", c.Server)
		}
	}
	// b's second tool takes the prefix of a: "a__x" is a's, so it waits.
	b2 := &catalog.Catalog{Server: "b", Generation: 2, Tools: []mcp.Tool{mcp.NewTool("z"), mcp.NewTool("x")}}
	if _, ok := p.Publish(b2.Seal(), "a"); !ok {
		t.Fatal("publish b again ignored")
	}
	return (*View)(p.View()), p.View()
}

func TestViewReadsWhatThePublisherHolds(t *testing.T) {
	v, in := published(t)
	if v.Version() != in.Version() || v.Hash() != in.Hash() || v.Changed() != in.Changed() {
		t.Fatal("version, hash or Changed differ from the publisher's View")
	}
	var names []string
	for tl := range v.Tools() {
		names = append(names, tl.Qualified())
	}
	if want := []string{"a__x", "a__y", "a__z"}; !slices.Equal(names, want) || v.NumTools() != len(want) {
		t.Fatalf("tools %v (NumTools %d), want %v", names, v.NumTools(), want)
	}
	for i, n := range names {
		if got := v.ToolAt(i).Qualified(); got != n {
			t.Fatalf("ToolAt(%d) = %s, Tools yielded %s", i, got, n)
		}
	}
	if tl, ok := v.Tool("a__z"); !ok || tl.Server() != "b" || tl.Name() != "z" || tl.Definition().Name != "z" {
		t.Fatalf("Tool(a__z) = %+v, %v", tl, ok)
	}
	if q := v.Quarantined(); len(q) != 1 || q[0] != (Quarantine{Server: "b", Tool: "x", Qualified: "a__x", Holder: "a"}) {
		t.Fatalf("Quarantined = %+v", q)
	}
	c, ok := v.Catalog("a")
	if !ok || c.Server() != "a" || c.Generation() != 1 || c.NumTools() != 2 || len(c.Prompts()) != 1 ||
		c.Instructions() != "be brief" || c.Hash() == "" {
		t.Fatalf("Catalog(a) = %+v, %v", c, ok)
	}
	var servers []string
	for c := range v.Catalogs() {
		servers = append(servers, c.Server())
	}
	if !slices.Equal(servers, []string{"a", "b"}) {
		t.Fatalf("Catalogs: %v", servers)
	}
	if _, ok := v.Catalog("nope"); ok {
		t.Fatal("Catalog of an unknown server found")
	}
	var zero Catalog
	if zero.Server() != "" || zero.Tools() != nil || zero.NumTools() != 0 || zero.Hash() != "" {
		t.Fatal("the zero Catalog is not empty")
	}
	var none Tool
	if none.Qualified() != "" || none.Server() != "" || none.Name() != "" || none.Definition().Name != "" {
		t.Fatal("the zero Tool is not empty")
	}
}

// A host that edits what it was given changes nothing another reader sees.
func TestReadersCannotChangeWhatOthersSee(t *testing.T) {
	v, in := published(t)
	c, _ := v.Catalog("a")
	tools := c.Tools()
	tools[0].Name = "hijacked"
	prompts := c.Prompts()
	prompts[0].Name = "hijacked"
	q := v.Quarantined()
	q[0].Holder = "hijacked"
	tl, _ := v.Tool("a__x")
	def := tl.Definition()
	def.Name = "hijacked"

	again, _ := v.Catalog("a")
	if again.Tools()[0].Name != "x" || again.Prompts()[0].Name != "p" {
		t.Fatal("a catalog's lists changed under another reader")
	}
	if v.Quarantined()[0].Holder != "a" {
		t.Fatal("the quarantine list changed under another reader")
	}
	if got, _ := v.Tool("a__x"); got.Name() != "x" || got.Definition().Name != "x" {
		t.Fatalf("the View's tool changed under another reader: %+v", got)
	}
	if in.Tools()[0].Qualified != "a__x" {
		t.Fatal("the publisher's View changed")
	}
}

// The reads a host does per request cost no allocation.
func TestLookupsDoNotAllocate(t *testing.T) {
	v, _ := published(t)
	for name, f := range map[string]func(){
		"Tool":     func() { _, _ = v.Tool("a__y") },
		"Catalog":  func() { _, _ = v.Catalog("b") },
		"NumTools": func() { _ = v.NumTools() },
		"ToolAt": func() {
			n := 0
			for i := range v.NumTools() {
				n += len(v.ToolAt(i).Qualified())
			}
			if n == 0 {
				panic("no tools")
			}
		},
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}
