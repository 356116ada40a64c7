package catalog

import (
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestPublishCostsWhatChanged holds a publish and an unpublish in a fleet
// of 2,000 servers × 10 tools to the size of the change. The next View
// shares every tool of the other servers with the View before; what the
// change copied is the paths to its 11 names in the name index and the
// sorted tools, and to its server in the catalogs: about 30 nodes of under
// a thousand entries, where rebuilding the View writes 22,000 (20,000 tools
// and 2,000 catalogs). A fleet a tenth the size has as many paths, each a
// level shorter at most: the cost grows with the logarithm of the fleet.
func TestPublishCostsWhatChanged(t *testing.T) {
	small := publishCost(t, 200)
	large := publishCost(t, 2000)
	t.Logf("200 servers: %+v", small)
	t.Logf("2,000 servers: %+v", large)
	for _, c := range []struct {
		op           string
		small, large copied
	}{{"publish", small.publish, large.publish}, {"unpublish", small.unpublish, large.unpublish}} {
		if c.large.nodes > 48 || c.large.entries > 2200 {
			t.Errorf("%s in 2,000 servers copied %d nodes of %d entries in all", c.op, c.large.nodes, c.large.entries)
		}
		// One more level in the two trees, for each of 11 names and the
		// root: 24 nodes.
		if c.large.nodes > c.small.nodes+24 {
			t.Errorf("%s copied %d nodes in 2,000 servers, %d in 200: grows with the fleet", c.op, c.large.nodes, c.small.nodes)
		}
	}
}

// copied is what one change allocated in a View's persistent structures:
// nodes the View before does not share, and the entries (keys or slots)
// they hold.
type copied struct{ nodes, entries int }

type fleetCost struct{ publish, unpublish copied }

// publishCost builds a fleet of servers × 10 tools and measures a publish
// of one server's changed catalog (one tool more), then its unpublish. It
// fails t if either touches a tool of another server, or if the change
// builds the View's sorted slices, which are the first walker's to build.
func publishCost(t *testing.T, servers int) fleetCost {
	t.Helper()
	p := NewPublisher(Naming{})
	// One sealed catalog whose copies serve every server: a catalog's hash
	// does not cover its server's name, so they are all sealed.
	template := &Catalog{Generation: 1}
	for i := range 10 {
		template.Tools = append(template.Tools, tool(fmt.Sprintf("tool_%d", i), "a tool", "query"))
	}
	template.Seal()
	for s := range servers {
		c := *template
		c.Server = fmt.Sprintf("server%05d", s)
		mustPublish(t, p, &c, "")
	}
	mid := fmt.Sprintf("server%05d", servers/2)
	changed := template.WithTools(append([]mcp.Tool{tool("extra", "")}, template.Tools...))
	changed.Server = mid

	var cost fleetCost
	before := p.View()
	before.Tools() // the walk the next View must not redo for the others' tools
	mustPublish(t, p, changed, "")
	after := p.View()
	if after.tools.vals != nil || after.catalogs.vals != nil {
		t.Fatal("publish built the View's sorted slices")
	}
	cost.publish = viewCopied(before, after)
	checkOnlyServerTouched(t, before, after, mid)

	if _, ok := p.Unpublish(mid, 1); !ok {
		t.Fatal("unpublish ignored")
	}
	final := p.View()
	cost.unpublish = viewCopied(after, final)
	checkOnlyServerTouched(t, after, final, mid)
	return cost
}

// checkOnlyServerTouched fails t unless every tool of next not of server
// is the very tool prev holds, the same publication's: shared, not rebuilt.
func checkOnlyServerTouched(t *testing.T, prev, next *View, server string) {
	t.Helper()
	for _, tl := range next.Tools() {
		if tl.Server == server {
			continue
		}
		old, _ := prev.ToolRef(tl.Qualified)
		if cur, _ := next.ToolRef(tl.Qualified); old != cur || old.Tool != tl.Tool {
			t.Fatalf("%s of %s was rebuilt by a change of %s", tl.Qualified, tl.Server, server)
		}
	}
}

// viewCopied counts the nodes of next's persistent structures that prev
// does not share.
func viewCopied(prev, next *View) copied {
	var c copied
	c.add(indexCopied(prev.index.root, next.index.root))
	c.add(mapCopied(prev.tools.m.root, next.tools.m.root))
	c.add(mapCopied(prev.catalogs.m.root, next.catalogs.m.root))
	c.add(mapCopied(prev.quarantined.m.root, next.quarantined.m.root))
	return c
}

func (c *copied) add(d copied) { c.nodes += d.nodes; c.entries += d.entries }

func mapCopied[V any](prev, next *mapNode[V]) copied {
	shared := map[*mapNode[V]]bool{}
	var mark func(n *mapNode[V])
	mark = func(n *mapNode[V]) {
		if n != nil {
			shared[n] = true
			for _, k := range n.kids {
				mark(k)
			}
		}
	}
	mark(prev)
	var c copied
	var count func(n *mapNode[V])
	count = func(n *mapNode[V]) {
		if n == nil || shared[n] {
			return
		}
		c.nodes++
		c.entries += len(n.keys)
		for _, k := range n.kids {
			count(k)
		}
	}
	count(next)
	return c
}

func indexCopied(prev, next *indexNode) copied {
	shared := map[*indexNode]bool{}
	var mark func(n *indexNode)
	mark = func(n *indexNode) {
		if n != nil {
			shared[n] = true
			for _, s := range n.slots {
				mark(s.kid)
			}
		}
	}
	mark(prev)
	var c copied
	var count func(n *indexNode)
	count = func(n *indexNode) {
		if n == nil || shared[n] {
			return
		}
		c.nodes++
		c.entries += len(n.slots)
		for _, s := range n.slots {
			count(s.kid)
		}
	}
	count(next)
	return c
}
