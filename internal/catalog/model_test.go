package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// model is the Publisher as its documentation describes it, computed the
// slow, obvious way: every change rebuilds the whole View from every
// server's claims, as the Publisher itself did before issue 12.
// TestPublisherAgainstModel holds the Publisher to it.
type model struct {
	naming  Naming
	servers map[string]*modelServer
	floors  map[string]floor
	seq     uint64
	version uint64
	// What the current View shows. A change with an empty Diff makes no
	// View, so the View can lag behind servers (a prefix change of a
	// server without tools, say).
	tools       []Tool // sorted by Qualified
	quarantined []Quarantine
	catalogs    map[string]*Catalog
	viewContent string
}

type modelServer struct {
	cat    *Catalog
	prefix string
	seqs   map[string]uint64 // qualified name → claim age
}

func (m *model) qualified(s *modelServer, i int) string {
	return m.naming.Qualify(s.prefix, s.cat.Tools[i].Name)
}

func (m *model) publish(c *Catalog, prefix string) (Diff, bool) {
	if c == nil || c.Server == "" {
		return Diff{}, false
	}
	if f, ok := m.floors[c.Server]; ok && (c.Generation < f.gen || c.Generation == f.gen && !f.published) {
		return Diff{Server: c.Server}, false
	}
	m.floors[c.Server] = floor{gen: c.Generation, published: true}
	c = c.sealed()
	if prefix == "" {
		prefix = c.Server
	}
	old := m.servers[c.Server]
	if old != nil && old.prefix == prefix && old.cat.Hash == c.Hash && old.cat.seal.meta == c.seal.meta {
		return Diff{Server: c.Server}, true
	}
	cur := &modelServer{cat: c, prefix: prefix, seqs: map[string]uint64{}}
	fresh := m.seq + 1
	for i := range c.Tools {
		q := m.qualified(cur, i)
		if _, ok := cur.seqs[q]; ok {
			continue
		}
		if old != nil {
			if s, ok := old.seqs[q]; ok {
				cur.seqs[q] = s
				continue
			}
		}
		cur.seqs[q] = fresh
		m.seq = fresh
	}
	m.servers[c.Server] = cur
	return m.rebuild(c.Server, old, cur), true
}

func (m *model) unpublish(server string, gen uint64) (Diff, bool) {
	if f, ok := m.floors[server]; ok && gen < f.gen {
		return Diff{Server: server}, false
	}
	m.floors[server] = floor{gen: gen}
	old := m.servers[server]
	if old == nil {
		return Diff{Server: server}, true
	}
	delete(m.servers, server)
	return m.rebuild(server, old, nil), true
}

func (m *model) forget(server string) {
	delete(m.floors, server)
	if old := m.servers[server]; old != nil {
		delete(m.servers, server)
		m.rebuild(server, old, nil)
	}
}

// rebuild recomputes the View after server went from old to cur and
// returns the Diff.
func (m *model) rebuild(server string, old, cur *modelServer) Diff {
	type claim struct {
		q, server string
		seq       uint64
		idx       int
		tool      *mcp.Tool
	}
	var claims []claim
	for name, s := range m.servers {
		for i := range s.cat.Tools {
			q := m.qualified(s, i)
			claims = append(claims, claim{q, name, s.seqs[q], i, &s.cat.Tools[i]})
		}
	}
	slices.SortFunc(claims, func(a, b claim) int {
		return cmp.Or(strings.Compare(a.q, b.q), cmp.Compare(a.seq, b.seq), strings.Compare(a.server, b.server),
			strings.Compare(a.tool.Name, b.tool.Name), cmp.Compare(a.idx, b.idx))
	})
	var tools []Tool
	var quarantined []Quarantine
	for i, c := range claims {
		if i > 0 && claims[i-1].q == c.q {
			quarantined = append(quarantined, Quarantine{Server: c.server, Tool: c.tool.Name, Qualified: c.q, Holder: tools[len(tools)-1].Server})
			continue
		}
		tools = append(tools, Tool{Qualified: c.q, Server: c.server, Tool: c.tool})
	}

	d := m.diffTools(server, old, cur)
	inQueue := func(list []Quarantine, q Quarantine) bool {
		return slices.ContainsFunc(list, func(e Quarantine) bool {
			return e.Server == q.Server && e.Tool == q.Tool && e.Qualified == q.Qualified
		})
	}
	for _, q := range quarantined {
		if !inQueue(m.quarantined, q) {
			d.Quarantined = append(d.Quarantined, q)
		}
	}
	for _, q := range m.quarantined {
		i, ok := slices.BinarySearchFunc(tools, q.Qualified, func(t Tool, s string) int { return strings.Compare(t.Qualified, s) })
		if !inQueue(quarantined, q) && ok && tools[i].Server == q.Server && tools[i].Tool.Name == q.Tool {
			d.Promoted = append(d.Promoted, q)
		}
	}
	if !d.Empty() {
		m.version++
		m.tools, m.quarantined = tools, quarantined
		m.catalogs = map[string]*Catalog{}
		for name, s := range m.servers {
			m.catalogs[name] = s.cat
		}
		m.viewContent = m.content()
	}
	return d
}

// diffTools is the Diff of server's lists and info, quarantines aside.
func (m *model) diffTools(server string, old, cur *modelServer) Diff {
	d := Diff{Server: server}
	digests := func(s *modelServer) map[string][]digest {
		out := map[string][]digest{}
		if s != nil {
			for i := range s.cat.Tools {
				q := m.qualified(s, i)
				out[q] = append(out[q], s.cat.seal.tools[i])
			}
		}
		return out
	}
	before, after := digests(old), digests(cur)
	for q, db := range before {
		if da, ok := after[q]; !ok {
			d.Removed = append(d.Removed, q)
		} else if !slices.Equal(da, db) {
			d.Changed = append(d.Changed, q)
		}
	}
	for q := range after {
		if _, ok := before[q]; !ok {
			d.Added = append(d.Added, q)
		}
	}
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	slices.Sort(d.Changed)
	switch {
	case old == nil || cur == nil:
		s := cmp.Or(old, cur)
		d.PromptsChanged = len(s.cat.Prompts) > 0
		d.ResourcesChanged = len(s.cat.Resources) > 0
		d.ResourceTemplatesChanged = len(s.cat.ResourceTemplates) > 0
		d.InfoChanged = true
	default:
		d.PromptsChanged = old.cat.seal.prompts != cur.cat.seal.prompts
		d.ResourcesChanged = old.cat.seal.resources != cur.cat.seal.resources
		d.ResourceTemplatesChanged = old.cat.seal.templates != cur.cat.seal.templates
		d.InfoChanged = old.cat.seal.meta != cur.cat.seal.meta
	}
	return d
}

// content is everything the View hash stands for, written out: equal
// contents must give equal hashes and different ones different hashes.
// It describes the servers now, which the View shows after a non-empty
// Diff.
func (m *model) content() string {
	b := appendStr(nil, m.naming.SeparatorOrDefault())
	for _, name := range slices.Sorted(maps.Keys(m.servers)) {
		s := m.servers[name]
		b = appendStr(appendStr(appendStr(b, name), s.prefix), s.cat.Hash)
		b = append(b, s.cat.seal.meta[:]...)
	}
	b = appendStr(b, "quarantined")
	for _, q := range m.quarantined {
		b = appendStr(appendStr(appendStr(b, q.Server), q.Tool), q.Qualified)
	}
	return string(b)
}

// TestPublisherAgainstModel runs random publishes (with colliding prefixes,
// duplicate and renamed tools, changed descriptions, prompts and server
// info, late and repeated generations), unpublishes and forgets on a
// Publisher and on the model, and checks after each that the Diff, the
// acceptance and the View (version, tools, lookups, catalogs, quarantined
// tools, Changed) are the model's, and that the View hash is equal exactly
// when the content is.
func TestPublisherAgainstModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			// A few servers make collisions common; many make the View's
			// maps several levels deep.
			servers, steps := 8, 600
			if seed >= 4 {
				servers, steps = 100, 250
			}
			naming := Naming{}
			if seed%2 == 1 {
				naming.Separator = "_"
			}
			p := NewPublisher(naming)
			m := &model{naming: naming, servers: map[string]*modelServer{}, floors: map[string]floor{}}
			m.viewContent = m.content()
			hashOf, contentOf := map[string]string{}, map[string]string{}
			gens := map[string]uint64{}
			wireNames := []string{"t", "u", "v", "dup", "a.b", "a/b", "x__t", "t_"}
			prefixes := []string{"", "", "x", "x", "y", "x__"}

			for step := range steps {
				server := fmt.Sprintf("s%d", rng.IntN(servers))
				gen := gens[server] + uint64(rng.IntN(3)) - 1 + 1 // the floor, one below or one above
				if gen == 0 {
					gen = 1
				}
				before := p.View()
				var op string
				var got, want Diff
				var gotOK, wantOK bool
				switch r := rng.IntN(20); {
				case r < 14:
					c := &Catalog{Server: server, Generation: gen, ServerInfo: mcp.Implementation{Name: server, Version: fmt.Sprint(rng.IntN(2))}}
					for range rng.IntN(5) {
						name := wireNames[rng.IntN(len(wireNames))]
						c.Tools = append(c.Tools, tool(name, fmt.Sprintf("does %s, v%d", name, rng.IntN(2)), "x"))
					}
					if rng.IntN(4) == 0 {
						c.Prompts = []mcp.Prompt{mcp.NewPrompt(fmt.Sprint("p", rng.IntN(2)))}
					}
					prefix := prefixes[rng.IntN(len(prefixes))]
					op = fmt.Sprintf("publish %s gen %d prefix %q tools %v", server, gen, prefix, toolNames(c))
					c.Seal()
					got, gotOK = p.Publish(c, prefix)
					want, wantOK = m.publish(c, prefix)
				case r < 19:
					op = fmt.Sprintf("unpublish %s gen %d", server, gen)
					got, gotOK = p.Unpublish(server, gen)
					want, wantOK = m.unpublish(server, gen)
				default:
					op = "forget " + server
					p.Forget(server)
					m.forget(server)
					gotOK, wantOK = true, true
					delete(gens, server)
				}
				if g, ok := p.Generation(server); ok {
					gens[server] = g
				}
				if gotOK != wantOK || !sameDiff(got, want) {
					t.Fatalf("step %d, %s:\n got %v %+v\nwant %v %+v", step, op, gotOK, got, wantOK, want)
				}
				v := p.View()
				if v.Version() != m.version {
					t.Fatalf("step %d, %s: version %d, want %d", step, op, v.Version(), m.version)
				}
				if (v != before) != (v.Version() != before.Version()) || isClosed(before.Changed()) != (v != before) || isClosed(v.Changed()) {
					t.Fatalf("step %d, %s: View replaced %v, version %d → %d, Changed closed %v", step, op, v != before, before.Version(), v.Version(), isClosed(before.Changed()))
				}
				checkViewMatches(t, fmt.Sprintf("step %d, %s", step, op), v, m)

				content := m.viewContent
				if h, ok := hashOf[content]; ok && h != v.Hash() {
					t.Fatalf("step %d, %s: same content, new hash", step, op)
				}
				if c, ok := contentOf[v.Hash()]; ok && c != content {
					t.Fatalf("step %d, %s: same hash for\n%s\nand\n%s", step, op, c, content)
				}
				hashOf[content], contentOf[v.Hash()] = v.Hash(), content
			}
		})
	}
}

func toolNames(c *Catalog) []string {
	var out []string
	for _, t := range c.Tools {
		out = append(out, t.Name)
	}
	return out
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sameDiff compares Diffs, a nil list equal to an empty one.
func sameDiff(a, b Diff) bool {
	norm := func(d Diff) Diff {
		for _, l := range []*[]string{&d.Added, &d.Removed, &d.Changed} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if len(d.Quarantined) == 0 {
			d.Quarantined = nil
		}
		if len(d.Promoted) == 0 {
			d.Promoted = nil
		}
		return d
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// checkViewMatches fails t unless v lists the model's tools, catalogs and
// quarantined tools, and finds each tool by name and no other.
func checkViewMatches(t *testing.T, step string, v *View, m *model) {
	t.Helper()
	tools := v.Tools()
	if len(tools) != len(m.tools) || v.NumTools() != len(m.tools) {
		t.Fatalf("%s: %d tools (NumTools %d), want %d", step, len(tools), v.NumTools(), len(m.tools))
	}
	for i, tl := range tools {
		w := m.tools[i]
		if tl.Qualified != w.Qualified || tl.Server != w.Server || tl.Tool != w.Tool {
			t.Fatalf("%s: tool %d = %s of %s (%q), want %s of %s (%q)", step, i, tl.Qualified, tl.Server, tl.Tool.Description, w.Qualified, w.Server, w.Tool.Description)
		}
		if ref, ok := v.ToolRef(tl.Qualified); !ok || *ref != tl {
			t.Fatalf("%s: ToolRef(%s) is not the listed tool", step, tl.Qualified)
		}
	}
	for _, q := range m.quarantined {
		if tl, ok := v.Tool(q.Qualified); !ok || tl.Server != q.Holder {
			t.Fatalf("%s: %s held by %q, want %q", step, q.Qualified, tl.Server, q.Holder)
		}
	}
	if _, ok := v.Tool("absent__name"); ok {
		t.Fatalf("%s: found an absent name", step)
	}
	if got := v.Quarantined(); !slices.Equal(got, m.quarantined) && len(got)+len(m.quarantined) > 0 {
		t.Fatalf("%s: quarantined\n %+v\nwant\n %+v", step, got, m.quarantined)
	}
	cats := v.Catalogs()
	names := slices.Sorted(maps.Keys(m.catalogs))
	if len(cats) != len(names) {
		t.Fatalf("%s: %d catalogs, want %d", step, len(cats), len(names))
	}
	for i, name := range names {
		c, ok := v.Catalog(name)
		if cats[i] != m.catalogs[name] || !ok || c != cats[i] {
			t.Fatalf("%s: catalog of %s is not the published one", step, name)
		}
	}
}
