package catalog

import (
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// Tool is one tool in the View: the server's tool under its qualified name.
type Tool struct {
	// Qualified is the name the host shows the model; see Naming.Qualify.
	Qualified string
	// Server is the server that offers the tool.
	Server string
	// Tool is the tool as the server sent it, the catalog's own (sealed
	// catalogs are immutable, so the View shares their tools rather than
	// copying them): do not modify it. Tool.Name is the wire name, the one
	// to send in tools/call.
	Tool *mcp.Tool
}

// Quarantine is a tool left out of the View because another tool got its
// qualified name first. It stays listed here, so that status can say why a
// tool is missing, and it is promoted automatically once the name is free.
type Quarantine struct {
	// Server is the server whose tool was left out.
	Server string
	// Tool is that tool's wire name.
	Tool string
	// Qualified is the name it would have had.
	Qualified string
	// Holder is the server whose tool holds the name. It can be Server
	// itself when one server lists two tools that qualify alike.
	Holder string
}

// View is the aggregated catalog of every published server at one moment.
// It is immutable and replaced whole on every change, so a reader can use one
// View for a whole turn of a conversation and see a consistent set of tools
// however the servers change meanwhile.
//
// A View shares its contents with the Views before and after it: they are
// persistent maps in which a change copies only what it touches (see
// Publisher). The slices it returns are built from them once, by the first
// reader that asks, and are then shared by every reader: they must not be
// modified. Sharing them is what keeps reads free of allocations with
// thousands of tools.
type View struct {
	version     uint64
	hash        string
	index       toolIndex            // tools by qualified name, for lookups
	tools       *listing[Tool]       // sorted by Qualified
	catalogs    *listing[*Catalog]   // sorted by Server
	quarantined *listing[Quarantine] // sorted by Qualified, then claim order
	changed     chan struct{}        // closed when the next View is published
}

// Version is the number of published changes before this View: 0 for the
// empty View a Publisher starts with, one more for every View after it.
func (v *View) Version() uint64 { return v.version }

// Hash is a content hash of the View: the hex sha256 of the separator and
// of two sums modulo 2^256, one of a sha256 per published server (its name,
// tool prefix, catalog Hash and server info) and one of a sha256 per
// qualified name with quarantined tools (the name, and the server and wire
// name of each quarantined tool in promotion order). Equal hashes mean the
// same tools under the same names, whatever order the servers were
// published in, so a host can cache what it derives from a View (a rendered
// tool list for the model, say) by hash and reuse it across versions that
// went back and forth. The sums are what let each change update the hash at
// the cost of that change.
func (v *View) Hash() string { return v.hash }

// NumTools returns how many tools the View holds. Constant time.
func (v *View) NumTools() int { return v.tools.m.len() }

// Tools returns every tool in the View, sorted by qualified name. It is the
// View's own slice, shared by every reader: do not modify it. The first call
// on a View builds it, in O(tools) and one allocation, unless an earlier
// View with the same tools built it already; every later call is constant
// time and allocates nothing. A Tool is small (its definition is the
// catalog's), so a loop over the slice reads it in order, in one array.
func (v *View) Tools() []Tool {
	// listing.values spelled out, with the cheapest atomic load: this way
	// Tools fits the inliner's budget, which saves a call per ToolAt.
	if l := v.tools; atomic.LoadUint32(&l.built) != 0 {
		return l.vals
	}
	return v.tools.build()
}

// Tool returns the tool with the given qualified name. Quarantined tools are
// not found. Constant time (a hash and a few indexings), no allocation.
func (v *View) Tool(qualified string) (Tool, bool) {
	if t := v.index.get(qualified); t != nil {
		return *t, true
	}
	return Tool{}, false
}

// ToolRef is Tool without the copy: a pointer to the View's own tool, which
// the caller must not modify.
func (v *View) ToolRef(qualified string) (*Tool, bool) {
	t := v.index.get(qualified)
	return t, t != nil
}

// Catalog returns the published catalog of server. While a server reconnects
// its last good catalog stays published, so ok is true until the manager
// unpublishes it. O(log servers), no allocation.
func (v *View) Catalog(server string) (*Catalog, bool) {
	return v.catalogs.m.get(server)
}

// Catalogs returns every published catalog, sorted by server. It is the View's
// own slice: do not modify it. Like Tools, it is built on the first call.
func (v *View) Catalogs() []*Catalog { return v.catalogs.values() }

// Quarantined returns the tools left out because of a name collision, sorted
// by qualified name and then by the order they would be promoted in. It is the
// View's own slice: do not modify it. Like Tools, it is built on the first call.
func (v *View) Quarantined() []Quarantine { return v.quarantined.values() }

// Changed returns a channel that is closed when a newer View replaces this
// one. A waiter selects on it with its context, then loads the new View from
// the Publisher; the channel carries no value, so a waiter that misses one
// version never misses the latest.
func (v *View) Changed() <-chan struct{} { return v.changed }
