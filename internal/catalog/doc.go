// Package catalog holds what MCP servers offered, as immutable values that
// readers share without locks. It is the manager's side of package
// snapshot, which gives hosts read-only access to the same values.
//
// A [Catalog] is everything one server offered at one fetch (tools, prompts,
// resources, resource templates, server info), bound to the generation of the
// runtime that fetched it. A [Publisher] keeps the catalog of every server and
// aggregates them into a [View]: all tools under qualified names that LLM
// provider APIs accept, with a version, a content hash and a channel that
// closes when a newer View replaces it. Readers load the current View with one
// atomic load and never lock; writers serialize on the Publisher's mutex and
// swap in a new View whole, as grpc-go's pickerWrapper does. A new View shares
// with the one before it everything the change did not touch (its maps are
// persistent: a B+ tree in name order and a hash trie for lookups), so a
// publish costs the size of the server it changes, not of the fleet.
//
// Generations make late results harmless: a publish carrying an older
// generation than the one last published for that server, or one not newer
// than the one last unpublished, is ignored, so a refresh that finishes after
// its runtime was replaced or disabled can never overwrite the newer catalog or
// resurrect an unpublished one.
//
// The package is pure: no I/O, no goroutines, nothing of mcpfleet imported.
package catalog
