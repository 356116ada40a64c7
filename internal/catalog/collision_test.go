package catalog

import (
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestCollisionQuarantineAndPromotion(t *testing.T) {
	// Servers a, b and c all publish under the prefix "x", so their tools
	// "t" all qualify as x__t.
	p := NewPublisher(Naming{})
	type want struct {
		holder      string   // server of x__t in the View; "" = absent
		quarantined []string // servers with x__t quarantined, in promotion order
	}
	check := func(step string, w want) {
		t.Helper()
		v := p.View()
		tl, ok := v.Tool("x__t")
		switch {
		case w.holder == "" && ok:
			t.Fatalf("%s: x__t held by %s, want absent", step, tl.Server)
		case w.holder != "" && (!ok || tl.Server != w.holder):
			t.Fatalf("%s: x__t = %+v, %v; want held by %s", step, tl, ok, w.holder)
		}
		var got []string
		for _, q := range v.Quarantined() {
			if q.Qualified != "x__t" || q.Tool != "t" || q.Holder != w.holder {
				t.Fatalf("%s: quarantine entry %+v", step, q)
			}
			got = append(got, q.Server)
		}
		if !slices.Equal(got, w.quarantined) {
			t.Fatalf("%s: quarantined %v, want %v", step, got, w.quarantined)
		}
		// The rest of the View is unaffected: every server's other tool is there.
		for _, c := range v.Catalogs() {
			if _, ok := v.Tool("x__only_" + c.Server); !ok {
				t.Fatalf("%s: x__only_%s missing: %v", step, c.Server, qualifiedNames(v))
			}
		}
	}
	pub := func(server string, gen uint64, names ...string) Diff {
		t.Helper()
		return mustPublish(t, p, cat(server, gen, append(names, "only_"+server)...), "x")
	}

	pub("b", 1, "t")
	check("b first", want{"b", nil})

	d := pub("a", 1, "t")
	check("a second", want{"b", []string{"a"}})
	if len(d.Quarantined) != 1 || d.Quarantined[0] != (Quarantine{Server: "a", Tool: "t", Qualified: "x__t", Holder: "b"}) {
		t.Fatalf("newcomer's diff Quarantined = %+v", d.Quarantined)
	}
	if !slices.Contains(d.Added, "x__t") {
		t.Fatalf("Added describes the server's catalog, quarantined tools included: %+v", d)
	}

	pub("c", 1, "t")
	check("c third", want{"b", []string{"a", "c"}})

	// Refreshes and reconnects keep claims: the holder keeps its name, and a
	// quarantined server does not jump the queue by republishing.
	pub("b", 2, "t")
	pub("c", 2, "t")
	pub("a", 2, "t")
	check("everyone republished", want{"b", []string{"a", "c"}})
	if d := pub("c", 2, "t"); !d.Empty() {
		t.Fatalf("republish of the same content: %+v", d)
	}

	// The holder goes away: the oldest remaining claim is promoted.
	d, _ = p.Unpublish("b", 2)
	check("b unpublished", want{"a", []string{"c"}})
	if len(d.Promoted) != 1 || d.Promoted[0].Server != "a" || len(d.Quarantined) != 0 {
		t.Fatalf("unpublish diff = %+v", d)
	}

	// b comes back: it is now the newest claimant.
	pub("b", 3, "t")
	check("b back", want{"a", []string{"c", "b"}})

	// The holder drops the tool (but stays): promotion again.
	d = pub("a", 3)
	check("a dropped t", want{"c", []string{"b"}})
	if !slices.Equal(d.Removed, []string{"x__t"}) || len(d.Promoted) != 1 || d.Promoted[0].Server != "c" {
		t.Fatalf("drop diff = %+v", d)
	}

	// A prefix change ends the claim too.
	pub("c", 3, "t")
	mustPublish(t, p, cat("c", 3, "t", "only_c"), "y")
	if _, ok := p.View().Tool("y__t"); !ok {
		t.Fatal("y__t missing")
	}
	v := p.View()
	if tl, ok := v.Tool("x__t"); !ok || tl.Server != "b" || len(v.Quarantined()) != 0 {
		t.Fatalf("after c moved away: x__t = %+v, quarantined %+v", tl, v.Quarantined())
	}
}

func TestCollisionSimultaneousClaimsAreDeterministic(t *testing.T) {
	// Two servers whose tools collide only after a refresh of both: their
	// claims are made by different publishes, so the earlier publish wins,
	// and the outcome is the same in every run.
	for range 20 {
		p := NewPublisher(Naming{})
		mustPublish(t, p, cat("a", 1, "one"), "x")
		mustPublish(t, p, cat("b", 1, "two"), "x")
		mustPublish(t, p, cat("b", 1, "two", "t"), "x")
		mustPublish(t, p, cat("a", 1, "one", "t"), "x")
		if tl, _ := p.View().Tool("x__t"); tl.Server != "b" {
			t.Fatalf("x__t held by %q, want b (claimed it first)", tl.Server)
		}
	}
}

func TestCollisionWithinOneServer(t *testing.T) {
	// "a.b" and "a/b" sanitize alike but differ in hash; an exact
	// duplicate is a server bug and the second copy is quarantined with the
	// server itself as holder.
	p := NewPublisher(Naming{})
	c := &Catalog{Server: "s", Generation: 1, Tools: []mcp.Tool{tool("dup", "first"), tool("dup", "second"), tool("a.b", ""), tool("a/b", "")}}
	mustPublish(t, p, c.Seal(), "")
	v := p.View()
	if got := len(v.Tools()); got != 3 {
		t.Fatalf("%d tools: %v", got, qualifiedNames(v))
	}
	q := v.Quarantined()
	if len(q) != 1 || q[0].Server != "s" || q[0].Holder != "s" || q[0].Qualified != "s__dup" {
		t.Fatalf("Quarantined = %+v", q)
	}
	if tl, _ := v.Tool("s__dup"); tl.Tool.Description != "first" {
		t.Fatalf("the first listed duplicate should hold the name, got %q", tl.Tool.Description)
	}
}

func TestWireNamePreserved(t *testing.T) {
	p := NewPublisher(Naming{})
	long := "a_tool_name_that_goes_on_and_on_and_on_well_past_what_providers_accept"
	mustPublish(t, p, cat("srv", 1, "files/read", long), "")
	for _, tl := range p.View().Tools() {
		if !providerName.MatchString(tl.Qualified) {
			t.Fatalf("invalid qualified name %q", tl.Qualified)
		}
		if tl.Tool.Name != "files/read" && tl.Tool.Name != long {
			t.Fatalf("wire name rewritten: %q", tl.Tool.Name)
		}
		got, ok := p.View().Tool(tl.Qualified)
		if !ok || got.Tool.Name != tl.Tool.Name {
			t.Fatalf("Tool(%q) = %+v", tl.Qualified, got)
		}
	}
}
