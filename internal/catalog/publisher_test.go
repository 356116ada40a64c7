package catalog

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestGenerations(t *testing.T) {
	// op: "pub N" publishes a catalog of generation N whose single tool is
	// named after N, so the View shows which generation is published;
	// "unpub N" unpublishes at N; "forget".
	type step struct {
		op      string
		gen     uint64
		ok      bool
		wantGen uint64 // generation of the tool in the View; 0 = none published
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"older ignored after publish", []step{
			{"pub", 3, true, 3}, {"pub", 2, false, 3}, {"pub", 1, false, 3},
		}},
		{"same generation refresh accepted", []step{
			{"pub", 3, true, 3}, {"pub", 3, true, 3}, {"pub", 4, true, 4}, {"pub", 4, true, 4},
		}},
		{"older ignored after unpublish", []step{
			{"pub", 3, true, 3}, {"unpub", 3, true, 0}, {"pub", 2, false, 0}, {"pub", 3, false, 0}, {"pub", 4, true, 4},
		}},
		{"unpublish newer than published", []step{
			{"pub", 3, true, 3}, {"unpub", 5, true, 0}, {"pub", 4, false, 0}, {"pub", 5, false, 0}, {"pub", 6, true, 6},
		}},
		{"late unpublish of an old runtime ignored", []step{
			{"pub", 3, true, 3}, {"unpub", 2, false, 3}, {"pub", 3, true, 3},
		}},
		{"unpublish before any publish records the floor", []step{
			{"unpub", 2, true, 0}, {"pub", 1, false, 0}, {"pub", 2, false, 0}, {"pub", 3, true, 3},
		}},
		{"forget resets the floor", []step{
			{"pub", 9, true, 9}, {"forget", 0, true, 0}, {"pub", 1, true, 1},
		}},
		{"forget after unpublish resets the floor", []step{
			{"pub", 9, true, 9}, {"unpub", 9, true, 0}, {"forget", 0, true, 0}, {"pub", 1, true, 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPublisher(Naming{})
			for i, s := range tt.steps {
				var ok = true
				switch s.op {
				case "pub":
					_, ok = p.Publish(cat("s", s.gen, fmt.Sprintf("gen%d", s.gen)), "")
				case "unpub":
					_, ok = p.Unpublish("s", s.gen)
				case "forget":
					p.Forget("s")
				}
				if ok != s.ok {
					t.Fatalf("step %d %s %d: accepted=%v, want %v", i, s.op, s.gen, ok, s.ok)
				}
				v := p.View()
				c, published := v.Catalog("s")
				switch {
				case s.wantGen == 0 && published:
					t.Fatalf("step %d %s %d: catalog of gen %d published, want none", i, s.op, s.gen, c.Generation)
				case s.wantGen != 0 && !published:
					t.Fatalf("step %d %s %d: nothing published, want gen %d", i, s.op, s.gen, s.wantGen)
				case s.wantGen != 0:
					if _, ok := v.Tool(fmt.Sprintf("s__gen%d", s.wantGen)); !ok {
						t.Fatalf("step %d %s %d: tools %v, want gen %d's", i, s.op, s.gen, qualifiedNames(v), s.wantGen)
					}
				}
			}
		})
	}
}

func TestPublishRejectsBadInput(t *testing.T) {
	p := NewPublisher(Naming{})
	if _, ok := p.Publish(nil, ""); ok {
		t.Error("nil catalog accepted")
	}
	if _, ok := p.Publish(&Catalog{Generation: 1}, ""); ok {
		t.Error("catalog without server accepted")
	}
	if p.View().Version() != 0 {
		t.Error("bad input made a version")
	}
}

func TestDiff(t *testing.T) {
	base := []mcp.Tool{tool("keep", "same", "x"), tool("schema", "d", "x"), tool("desc", "old", "x"), tool("ann", "d", "x"), tool("gone", "d")}
	annotated := tool("ann", "d", "x")
	annotated.Annotations.ReadOnlyHint = mcp.ToBoolPtr(true)
	next := []mcp.Tool{tool("keep", "same", "x"), tool("schema", "d", "x", "y"), tool("desc", "new", "x"), annotated, tool("new", "d")}

	p := NewPublisher(Naming{})
	d := mustPublish(t, p, (&Catalog{Server: "s", Generation: 1, Tools: base, ServerInfo: mcp.Implementation{Name: "s", Version: "1"}}).Seal(), "")
	if want := []string{"s__ann", "s__desc", "s__gone", "s__keep", "s__schema"}; !slices.Equal(d.Added, want) || d.Removed != nil || d.Changed != nil || !d.InfoChanged {
		t.Fatalf("first publish diff = %+v", d)
	}

	tests := []struct {
		name                   string
		cat                    *Catalog
		prefix                 string
		added, removed, change []string
		prompts, resources     bool
	}{
		{name: "schema, description, annotations", cat: &Catalog{Server: "s", Generation: 1, Tools: next},
			added: []string{"s__new"}, removed: []string{"s__gone"}, change: []string{"s__ann", "s__desc", "s__schema"}},
		{name: "reordered is no change", cat: &Catalog{Server: "s", Generation: 2, Tools: []mcp.Tool{next[4], next[3], next[2], next[1], next[0]}}},
		{name: "prompts and resources only", cat: &Catalog{Server: "s", Generation: 2, Tools: next,
			Prompts: []mcp.Prompt{mcp.NewPrompt("p")}, Resources: []mcp.Resource{mcp.NewResource("u:", "r")}},
			prompts: true, resources: true},
		{name: "prefix change renames all", cat: &Catalog{Server: "s", Generation: 2, Tools: next[:2],
			Prompts: []mcp.Prompt{mcp.NewPrompt("p")}, Resources: []mcp.Resource{mcp.NewResource("u:", "r")}}, prefix: "gh",
			added: []string{"gh__keep", "gh__schema"}, removed: []string{"s__ann", "s__desc", "s__keep", "s__new", "s__schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cat.ServerInfo = mcp.Implementation{Name: "s", Version: "1"}
			d := mustPublish(t, p, tt.cat.Seal(), tt.prefix)
			if d.Server != "s" || !slices.Equal(d.Added, tt.added) || !slices.Equal(d.Removed, tt.removed) || !slices.Equal(d.Changed, tt.change) ||
				d.PromptsChanged != tt.prompts || d.ResourcesChanged != tt.resources || d.ResourceTemplatesChanged || d.InfoChanged {
				t.Fatalf("diff = %+v", d)
			}
		})
	}

	d, _ = p.Unpublish("s", 2)
	if want := []string{"gh__keep", "gh__schema"}; !slices.Equal(d.Removed, want) || d.Added != nil || !d.PromptsChanged || !d.ResourcesChanged || d.Empty() {
		t.Fatalf("unpublish diff = %+v", d)
	}
}

func TestVersionOnlyOnRealChange(t *testing.T) {
	p := NewPublisher(Naming{})
	steps := []struct {
		name    string
		do      func() (Diff, bool)
		version uint64
	}{
		{"first publish", func() (Diff, bool) { return p.Publish(cat("a", 1, "x"), "") }, 1},
		{"same content, same gen", func() (Diff, bool) { return p.Publish(cat("a", 1, "x"), "") }, 1},
		{"same content, new gen (reconnect)", func() (Diff, bool) { return p.Publish(cat("a", 2, "x"), "") }, 1},
		{"same content, explicit default prefix", func() (Diff, bool) { return p.Publish(cat("a", 2, "x"), "a") }, 1},
		{"ignored late publish", func() (Diff, bool) { return p.Publish(cat("a", 1, "y"), "") }, 1},
		{"tool change", func() (Diff, bool) { return p.Publish(cat("a", 2, "y"), "") }, 2},
		{"server info change", func() (Diff, bool) {
			c := cat("a", 2, "y")
			c.Instructions = "new"
			return p.Publish(c.Seal(), "")
		}, 3},
		{"unpublish of a never-published server", func() (Diff, bool) { return p.Unpublish("b", 1) }, 3},
		{"second server", func() (Diff, bool) { return p.Publish(cat("b", 2, "y"), "") }, 4},
		{"unpublish", func() (Diff, bool) { return p.Unpublish("b", 2) }, 5},
		{"unpublish again", func() (Diff, bool) { return p.Unpublish("b", 2) }, 5},
		{"forget of an unpublished server", func() (Diff, bool) { p.Forget("b"); return Diff{}, true }, 5},
		{"forget of a published server", func() (Diff, bool) { p.Forget("a"); return Diff{}, true }, 6},
	}
	for _, s := range steps {
		before := p.View()
		d, _ := s.do()
		after := p.View()
		if after.Version() != s.version {
			t.Fatalf("%s: version %d, want %d", s.name, after.Version(), s.version)
		}
		if changed := after != before; changed != (after.Version() != before.Version()) {
			t.Fatalf("%s: View replaced without a version bump or the reverse", s.name)
		}
		if after == before && !d.Empty() {
			t.Fatalf("%s: non-empty diff %+v without a new version", s.name, d)
		}
	}
	if p.View().Tools() != nil && len(p.View().Tools()) != 0 {
		t.Fatal("tools left after forgetting every server")
	}
}

func TestChangedClosesOnNextVersionOnly(t *testing.T) {
	p := NewPublisher(Naming{})
	v0 := p.View()
	isClosed := func(v *View) bool {
		select {
		case <-v.Changed():
			return true
		default:
			return false
		}
	}
	if isClosed(v0) {
		t.Fatal("initial View's Changed closed before any change")
	}
	mustPublish(t, p, cat("a", 1, "x"), "")
	v1 := p.View()
	if !isClosed(v0) || isClosed(v1) {
		t.Fatal("after publish: want v0 closed, v1 open")
	}
	mustPublish(t, p, cat("a", 2, "x"), "") // no change
	if p.View() != v1 || isClosed(v1) {
		t.Fatal("a publish without change closed Changed")
	}
	if _, ok := p.Publish(cat("a", 1, "z"), ""); ok || isClosed(v1) {
		t.Fatal("an ignored publish closed Changed")
	}
	p.Unpublish("a", 2)
	if !isClosed(v1) || isClosed(p.View()) {
		t.Fatal("after unpublish: want v1 closed, v2 open")
	}
}

func TestZeroPublisher(t *testing.T) {
	var p Publisher
	v := p.View()
	if v == nil || v.Version() != 0 || len(v.Tools()) != 0 || v.Hash() == "" {
		t.Fatalf("zero Publisher View = %+v", v)
	}
	mustPublish(t, &p, cat("a", 1, "x"), "")
	if _, ok := p.View().Tool("a__x"); !ok {
		t.Fatal("zero Publisher does not use the default separator")
	}
	if g, ok := p.Generation("a"); !ok || g != 1 {
		t.Fatalf("Generation = %d, %v", g, ok)
	}
}

func TestViewAccessors(t *testing.T) {
	p := NewPublisher(Naming{Separator: "-"})
	mustPublish(t, p, cat("zeta", 1, "b", "a"), "")
	mustPublish(t, p, cat("alpha", 4, "c"), "al")
	v := p.View()
	if got, want := qualifiedNames(v), []string{"al-c", "zeta-a", "zeta-b"}; !slices.Equal(got, want) {
		t.Fatalf("Tools = %v, want %v", got, want)
	}
	tl, ok := v.Tool("al-c")
	if !ok || tl.Server != "alpha" || tl.Tool.Name != "c" || tl.Tool.Description != "does c" {
		t.Fatalf("Tool(al-c) = %+v, %v", tl, ok)
	}
	if _, ok := v.Tool("alpha-c"); ok {
		t.Fatal("prefix override ignored")
	}
	if cs := v.Catalogs(); len(cs) != 2 || cs[0].Server != "alpha" || cs[1].Server != "zeta" {
		t.Fatalf("Catalogs not sorted by server")
	}
	if c, ok := v.Catalog("alpha"); !ok || c.Generation != 4 {
		t.Fatalf("Catalog(alpha) = %v, %v", c, ok)
	}
	if _, ok := v.Catalog("nope"); ok {
		t.Fatal("Catalog of an unknown server found")
	}
}

func TestViewHash(t *testing.T) {
	p := NewPublisher(Naming{})
	empty := p.View().Hash()
	mustPublish(t, p, cat("a", 1, "x"), "")
	h1 := p.View().Hash()
	mustPublish(t, p, cat("a", 1, "y"), "")
	h2 := p.View().Hash()
	mustPublish(t, p, cat("a", 2, "x"), "")
	if h1 == empty || h2 == h1 || p.View().Hash() != h1 {
		t.Fatalf("hashes empty=%s h1=%s h2=%s back=%s", empty, h1, h2, p.View().Hash())
	}
	mustPublish(t, p, cat("a", 2, "x"), "pre")
	if p.View().Hash() == h1 {
		t.Fatal("prefix change kept the View hash")
	}
	// Same content published in another order into another Publisher.
	q := NewPublisher(Naming{})
	mustPublish(t, q, cat("b", 1, "z"), "")
	mustPublish(t, q, cat("a", 5, "x"), "pre")
	mustPublish(t, p, cat("b", 1, "z"), "")
	if p.View().Hash() != q.View().Hash() {
		t.Fatal("View hash depends on publish order without a collision")
	}
	other := NewPublisher(Naming{Separator: "_"})
	mustPublish(t, other, cat("b", 1, "z"), "")
	mustPublish(t, other, cat("a", 5, "x"), "pre")
	if other.View().Hash() == q.View().Hash() {
		t.Fatal("View hash ignores the separator")
	}
}

func TestReadsDoNotAllocate(t *testing.T) {
	p := NewPublisher(Naming{})
	for i := range 50 {
		mustPublish(t, p, cat(fmt.Sprintf("s%02d", i), 1, "a", "b", "c"), "")
	}
	var sink int
	allocs := testing.AllocsPerRun(100, func() {
		v := p.View()
		for _, tl := range v.Tools() {
			sink += len(tl.Qualified)
		}
		if tl, ok := v.Tool("s07__b"); ok {
			sink += len(tl.Server)
		}
		if c, ok := v.Catalog("s31"); ok {
			sink += len(c.Tools)
		}
		sink += len(v.Catalogs()) + len(v.Quarantined()) + int(v.Version()) + len(v.Hash())
	})
	if allocs != 0 {
		t.Fatalf("reads allocate %v times", allocs)
	}
	_ = sink
}
