package snapshot

// Diff is what one catalog change did to one server's tools, for the
// manager's catalog event. Tool names are qualified names, sorted.
type Diff struct {
	// Server is the server whose catalog was published or removed.
	Server string
	// Added and Removed are the server's qualified tool names that appeared
	// or disappeared, quarantined ones included: they describe the server's
	// catalog, and Quarantined says which of them the View leaves out.
	Added, Removed []string
	// Changed are qualified names present before and after whose tool
	// differs in any way the server can express: input or output schema,
	// description, title, annotations, icons, _meta. Property order is not
	// a difference.
	Changed []string
	// PromptsChanged, ResourcesChanged and ResourceTemplatesChanged report
	// whether those lists differ (as sets, see Catalog.Hash). Hosts rarely
	// show these per item, so they are flags rather than name lists.
	PromptsChanged, ResourcesChanged, ResourceTemplatesChanged bool
	// InfoChanged reports a change of server info, capabilities or
	// instructions; it is the one change that moves the View's version
	// without touching a list.
	InfoChanged bool
	// Quarantined are the tools that this change left out of the View
	// because another tool already held their qualified name, and that were
	// not quarantined before. They are always the server's own: a publish
	// never takes a name from a tool that holds it.
	Quarantined []Quarantine
	// Promoted are tools, of this server or any other, that were quarantined
	// and entered the View because this change freed their qualified name.
	Promoted []Quarantine
}

// Empty reports whether nothing changed; an empty Diff comes with no new View
// version.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 &&
		!d.PromptsChanged && !d.ResourcesChanged && !d.ResourceTemplatesChanged &&
		!d.InfoChanged && len(d.Quarantined) == 0 && len(d.Promoted) == 0
}
