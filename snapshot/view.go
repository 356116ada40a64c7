package snapshot

import (
	"iter"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// Tool is one tool in the View: a read-only handle on the server's tool
// under its qualified name. It is one pointer, so iterating a View costs
// nothing per tool; Definition copies the tool out when it is needed. The
// zero Tool is empty.
type Tool struct {
	t *catalog.Tool
}

// Qualified is the name the host shows the model.
func (t Tool) Qualified() string {
	if t.t == nil {
		return ""
	}
	return t.t.Qualified
}

// Server is the server that offers the tool.
func (t Tool) Server() string {
	if t.t == nil {
		return ""
	}
	return t.t.Server
}

// Name is the tool's own name on its server, the one it is called by.
func (t Tool) Name() string {
	if t.t == nil {
		return ""
	}
	return t.t.Tool.Name
}

// Definition returns the tool as the server sent it (description, schemas,
// annotations). It is a copy; the maps inside it, such as the input
// schema's properties, are shared with every reader and must not be
// modified.
func (t Tool) Definition() mcp.Tool {
	if t.t == nil {
		return mcp.Tool{}
	}
	return *t.t.Tool
}

// Quarantine is a tool left out of the View because another tool got its
// qualified name first. It stays listed, so that status can say why a tool
// is missing, and it is promoted automatically once the name is free. Its
// fields: Server, the server whose tool was left out; Tool, that tool's
// wire name; Qualified, the name it would have had; Holder, the server
// whose tool holds the name (Server itself when one server lists two
// tools that qualify alike).
type Quarantine = catalog.Quarantine

// View is the aggregated catalog of every published server at one moment.
// It is immutable and replaced whole on every change, so a host can use one
// View for a whole turn of a conversation and see a consistent set of tools
// however the servers change meanwhile. The manager's View method returns
// the current one.
type View catalog.View

func (v *View) in() *catalog.View { return (*catalog.View)(v) }

// Version is the number of published changes before this View: 0 for the
// empty View a manager starts with, one more for every View after it.
func (v *View) Version() uint64 { return v.in().Version() }

// Hash is a content hash of the View: the hex sha256 of the separator and
// of two sums modulo 2^256, one of a sha256 per server (its name, tool
// prefix, catalog hash and server info) and one of a sha256 per qualified
// name with quarantined tools (the name and its quarantined tools in
// promotion order). Equal hashes mean the same tools under the same names,
// whatever order the servers were published in, so a host can cache what it
// derives from a View (a rendered tool list for the model, say) by hash and
// reuse it across versions that went back and forth.
func (v *View) Hash() string { return v.in().Hash() }

// Changed returns a channel that is closed when a newer View replaces this
// one. A waiter selects on it with its context, then loads the new View
// from the manager; the channel carries no value, so a waiter that misses
// one version never misses the latest.
func (v *View) Changed() <-chan struct{} { return v.in().Changed() }

// Tool returns the tool with the given qualified name. Quarantined tools
// are not found. No allocation.
func (v *View) Tool(qualified string) (Tool, bool) {
	t, ok := v.in().ToolRef(qualified)
	return Tool{t: t}, ok
}

// NumTools returns how many tools the View holds.
func (v *View) NumTools() int { return v.in().NumTools() }

// ToolAt returns the i-th tool in qualified-name order, 0 <= i <
// NumTools(). With NumTools it walks the View in constant time per tool
// and without allocating; only the first ToolAt on a new View lays its
// tools out in order, once for all readers (O(tools), one allocation).
func (v *View) ToolAt(i int) Tool { return Tool{t: &v.in().Tools()[i]} }

// Tools yields every tool in the View, sorted by qualified name. The
// iterator costs a few small allocations per walk; a loop over ToolAt costs
// none.
func (v *View) Tools() iter.Seq[Tool] {
	tools := v.in().Tools()
	return func(yield func(Tool) bool) {
		for i := range tools {
			if !yield(Tool{t: &tools[i]}) {
				return
			}
		}
	}
}

// Catalog returns the published catalog of server. While a server
// reconnects its last good catalog stays published, so ok is true until the
// manager unpublishes it (when the server is disabled, fails for good, or
// is removed). O(log servers), no allocation.
func (v *View) Catalog(server string) (Catalog, bool) {
	c, ok := v.in().Catalog(server)
	return Catalog{c: c}, ok
}

// Catalogs yields every published catalog, sorted by server.
func (v *View) Catalogs() iter.Seq[Catalog] {
	catalogs := v.in().Catalogs()
	return func(yield func(Catalog) bool) {
		for _, c := range catalogs {
			if !yield(Catalog{c: c}) {
				return
			}
		}
	}
}

// Quarantined returns the tools left out because of a name collision,
// sorted by qualified name and then by the order they would be promoted
// in. The slice is the caller's.
func (v *View) Quarantined() []Quarantine {
	return slices.Clone(v.in().Quarantined())
}
