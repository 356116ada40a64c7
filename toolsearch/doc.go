// Package toolsearch finds tools in a fleet's catalog for a task, so that a
// host with hundreds of tools can hand its model the few that matter.
//
// An [Index] holds every tool of a [snapshot.View] under its qualified name
// and answers a [Query] in one of three modes: BM25 ranking over the tool's
// name (split on case, '_', '-' and '.'), server, title, description and
// parameter names and descriptions, each field with its own weight (the
// default mode); the exact name; or a regular expression over the names. A
// query can keep to some servers and to tools whose annotations promise
// something (read-only, not destructive, idempotent, closed-world).
// Answers are deterministic: the same tools and the same query give the
// same hits in the same order, ties broken by qualified name.
//
// The index follows catalog changes by the tool: [Index.Apply] takes the
// names a change touched (a catalog event's [snapshot.Diff]) and costs that
// many tools whatever the size of the fleet; [Index.Sync] compares a whole
// View, for a start or after events were lost. The client package's
// ToolSearch keeps an Index in step with a Manager.
//
// [Index.Select] makes a tool budget: at most N tools for a task, the
// host's pinned tools first, then the best hits, under per-server caps, in
// an order that depends only on the chosen set (so a provider's prompt
// cache keeps hitting).
//
// The package reads snapshot and mcp-go types only, and takes no lock a
// Manager holds.
package toolsearch
