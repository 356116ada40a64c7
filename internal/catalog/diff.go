package catalog

// Diff is what one Publish or Unpublish changed for one server. It is
// snapshot.Diff, whose doc says what each field means.
type Diff struct {
	Server                                                     string
	Added, Removed                                             []string
	Changed                                                    []string
	PromptsChanged, ResourcesChanged, ResourceTemplatesChanged bool
	InfoChanged                                                bool
	Quarantined                                                []Quarantine
	Promoted                                                   []Quarantine
}

// Empty reports whether nothing changed; an empty Diff comes with no new View
// version.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 &&
		!d.PromptsChanged && !d.ResourcesChanged && !d.ResourceTemplatesChanged &&
		!d.InfoChanged && len(d.Quarantined) == 0 && len(d.Promoted) == 0
}
