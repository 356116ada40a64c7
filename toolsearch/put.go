package toolsearch

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// ErrFollowsView is returned by Put and RemoveServer on an index that
// follows a View (Sync or Apply filled it): its tools are the View's.
var ErrFollowsView = errors.New("mcpfleet: toolsearch: the index follows a View")

// own is an index's own catalog of the servers Put gave it: a publisher
// like a Manager's, so that its tools get the qualified names and the
// snapshot.Tool handles a Manager's View would give them.
type own struct {
	p    *catalog.Publisher
	gens map[string]uint64
}

// Put indexes the tools of server, replacing every tool the index held of
// it: the way to fill an index from plain tool definitions (name, title,
// description, input schema, annotations), without a Manager. Each tool
// is found under the qualified name a Manager would give it
// (server__tool). A Put that changes nothing costs a hash of the tools;
// one that changes some costs the server's tools, whatever the size of
// the index. The index keeps the tools: do not modify them afterwards.
//
// A tool without a name, or two tools of one name, make the whole Put
// fail, naming the server and the tool; the index is then unchanged. An
// index that follows a View (see Sync) refuses Put with ErrFollowsView.
func (x *Index) Put(server string, tools ...mcp.Tool) error {
	if server == "" {
		return fmt.Errorf("mcpfleet: toolsearch: put: the server has no name")
	}
	seen := make(map[string]bool, len(tools))
	for i, t := range tools {
		switch {
		case t.Name == "":
			return fmt.Errorf("mcpfleet: toolsearch: put %s: tool %d: no name", server, i)
		case seen[t.Name]:
			return fmt.Errorf("mcpfleet: toolsearch: put %s: tool %q: listed twice", server, t.Name)
		}
		seen[t.Name] = true
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.follows {
		return fmt.Errorf("put %s: %w", server, ErrFollowsView)
	}
	if x.own == nil {
		x.own = &own{p: catalog.NewPublisher(catalog.Naming{}), gens: map[string]uint64{}}
	}
	x.own.gens[server]++
	c := (&catalog.Catalog{Server: server, Generation: x.own.gens[server], Tools: slices.Clone(tools)}).Seal()
	d, _ := x.own.p.Publish(c, "")
	x.applyOwnLocked(d)
	return nil
}

// RemoveServer takes every tool of server out of an index that Put
// filled. It costs the server's tools. An index that follows a View
// refuses it with ErrFollowsView.
func (x *Index) RemoveServer(server string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.follows {
		return fmt.Errorf("remove %s: %w", server, ErrFollowsView)
	}
	if x.own == nil {
		return nil
	}
	gen, ok := x.own.gens[server]
	if !ok {
		return nil
	}
	d, _ := x.own.p.Unpublish(server, gen)
	x.own.p.Forget(server)
	delete(x.own.gens, server)
	x.applyOwnLocked(d)
	return nil
}

// applyOwnLocked indexes what one change of the index's own catalog
// touched.
func (x *Index) applyOwnLocked(d catalog.Diff) {
	names := slices.Concat(d.Added, d.Removed, d.Changed)
	for _, p := range d.Promoted {
		names = append(names, p.Qualified)
	}
	x.applyLocked((*snapshot.View)(x.own.p.View()), names)
}
