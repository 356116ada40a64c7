// Package snapshot is what a host reads of the servers' offerings: the
// aggregated [View] of every published server, each server's [Catalog], and
// the [Diff] a catalog event carries. Every value is read-only: a View is
// immutable and replaced whole on every change, its getters return copies
// (or iterate without handing out the View's own slices), so no reader can
// change what another sees.
//
// A View holds every tool under a qualified name that LLM provider APIs
// accept (^[a-zA-Z0-9_-]{1,64}$): the server's name (or its ToolPrefix),
// the manager's separator ("__" unless set), and the tool's own name. A name
// that would break the rule takes a short form: the same text with every
// other character replaced by '_', cut to leave room, then '-' and 12 hex
// digits of a sha256 of the prefix and the tool. The short form is the same
// in every process, so a host can cache it. When two tools qualify alike,
// the first to claim the name keeps it and the other is listed in
// [View.Quarantined] until the name is free.
//
// Readers load the current View from the manager with one atomic load and
// never lock; a lookup by qualified name is a hash lookup with no allocation.
// A catalog fetched by a runtime that has since been replaced can never
// overwrite a newer one: publication is bound to the runtime's generation.
package snapshot
