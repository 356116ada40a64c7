package catalog

import (
	"fmt"
	"testing"
)

// TestClear: one View for the whole fleet, each published server's tools
// reported removed (quarantined ones included), generations forgotten.
func TestClear(t *testing.T) {
	p := NewPublisher(Naming{})
	mustPublish(t, p, cat("a", 1, "x", "y"), "shared")
	mustPublish(t, p, cat("b", 3, "x"), "shared") // quarantined behind a's
	mustPublish(t, p, cat("c", 1, "z"), "")
	p.Unpublish("c", 2)
	before := p.View()
	if len(before.Quarantined()) != 1 {
		t.Fatalf("quarantined: %v", before.Quarantined())
	}

	diffs := p.Clear()
	v := p.View()
	if v.Version() != before.Version()+1 || v.NumTools() != 0 || len(v.Catalogs()) != 0 || len(v.Quarantined()) != 0 {
		t.Fatalf("after Clear: version %d (was %d), %d tools, %d catalogs, %d quarantined",
			v.Version(), before.Version(), v.NumTools(), len(v.Catalogs()), len(v.Quarantined()))
	}
	select {
	case <-before.Changed():
	default:
		t.Error("the View before Clear was not told it changed")
	}
	if got, want := fmt.Sprint(diffs["a"].Removed, diffs["b"].Removed, len(diffs)), "[shared__x shared__y] [shared__x] 2"; got != want {
		t.Errorf("diffs: %s, want %s", got, want)
	}
	if v.Hash() != NewPublisher(Naming{}).View().Hash() {
		t.Error("an empty View after Clear hashes unlike a new Publisher's")
	}
	// Generations are forgotten: a new slot's first runtime publishes.
	mustPublish(t, p, cat("b", 1, "x"), "shared")

	// Nothing published: nothing to report, no new View.
	q := NewPublisher(Naming{})
	if d := q.Clear(); len(d) != 0 || q.View().Version() != 0 {
		t.Errorf("Clear of an empty Publisher: %v, version %d", d, q.View().Version())
	}
}
