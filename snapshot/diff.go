package snapshot

import "github.com/mcpfleet/mcpfleet/internal/catalog"

// Diff is what one catalog change did to one server's tools, for the
// manager's catalog event (client.Event.Diff). Tool names are qualified
// names, sorted. Its fields:
//
//   - Server: the server whose catalog was published or removed.
//   - Added, Removed: the server's qualified tool names that appeared or
//     disappeared, quarantined ones included: they describe the server's
//     catalog, and Quarantined says which of them the View leaves out.
//   - Changed: qualified names present before and after whose tool
//     differs in any way the server can express (input or output schema,
//     description, title, annotations, icons, _meta); property order is no
//     difference.
//   - PromptsChanged, ResourcesChanged, ResourceTemplatesChanged: whether
//     those lists differ (as sets, see Catalog.Hash). Hosts rarely show
//     these per item, so they are flags rather than name lists.
//   - InfoChanged: a change of server info, capabilities or instructions,
//     the one change that moves the View's version without touching a
//     list.
//   - Quarantined: the tools this change left out of the View because
//     another tool already held their qualified name, and that were not
//     quarantined before. They are always the server's own: a publish
//     never takes a name from a tool that holds it.
//   - Promoted: tools, of this server or any other, that were quarantined
//     and entered the View because this change freed their qualified name.
//
// Empty reports whether nothing changed; an empty Diff comes with no new
// View version. It is the Publisher's own type (the one definition; a
// catalog event carries it as the Publisher made it).
type Diff = catalog.Diff
