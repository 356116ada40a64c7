package catalog

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortedMapAgainstMap applies random batches of edits, small and large,
// to a sortedMap and to a Go map, and checks after each batch that the
// sortedMap holds what the Go map does, in order, that the tree is
// balanced, and that every earlier version is unchanged: edits share nodes,
// they never modify them.
func TestSortedMapAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type version struct {
		m    sortedMap[int]
		want map[string]int
	}
	var versions []version
	m, want := sortedMap[int]{}, map[string]int{}
	for round := range 150 {
		// Mostly small batches, now and then a bulk load or a mass delete,
		// over a key space that makes both inserts and deletes common.
		size := 1 + rng.IntN(12)
		switch round % 50 {
		case 10:
			size = 3000
		case 30:
			size = 2500
		}
		keyspace := 4000
		byKey := map[string]mapEdit[int]{}
		for range size {
			k := fmt.Sprintf("k%05d", rng.IntN(keyspace))
			e := mapEdit[int]{key: k, val: rng.Int(), del: rng.IntN(3) == 0}
			if round%50 == 30 {
				e.del = true
			}
			byKey[k] = e
		}
		edits := slices.SortedFunc(maps.Values(byKey), func(a, b mapEdit[int]) int {
			return strings.Compare(a.key, b.key)
		})
		m = m.apply(edits)
		for _, e := range edits {
			if e.del {
				delete(want, e.key)
			} else {
				want[e.key] = e.val
			}
		}
		checkSortedMap(t, m, want)
		versions = append(versions, version{m, maps.Clone(want)})
	}
	for i, v := range versions {
		if !sortedMapHolds(v.m, v.want) {
			t.Fatalf("version %d changed after later edits", i)
		}
	}
	// Deleting everything leaves the empty map.
	var all []mapEdit[int]
	for _, k := range slices.Sorted(maps.Keys(want)) {
		all = append(all, mapEdit[int]{key: k, del: true})
	}
	if m = m.apply(all); m.root != nil || m.len() != 0 {
		t.Fatalf("after deleting every key: %d keys", m.len())
	}
}

// checkSortedMap fails t unless m holds exactly want and is a valid B+ tree.
func checkSortedMap(t *testing.T, m sortedMap[int], want map[string]int) {
	t.Helper()
	if !sortedMapHolds(m, want) {
		t.Fatalf("map holds %d keys, want %d, or values differ", m.len(), len(want))
	}
	for k, v := range want {
		if got, ok := m.get(k); !ok || got != v {
			t.Fatalf("get(%q) = %d, %v; want %d", k, got, ok, v)
		}
	}
	for _, k := range []string{"", "k", "k99999", "k00000x"} {
		if _, ok := m.get(k); ok {
			t.Fatalf("get(%q) found an absent key", k)
		}
	}
	if m.root == nil {
		return
	}
	leafDepth := -1
	var walk func(n *mapNode[int], depth int, root bool) (first string, size int)
	walk = func(n *mapNode[int], depth int, root bool) (string, int) {
		if len(n.keys) == 0 || len(n.keys) > maxFill || !root && n.underfull() {
			t.Fatalf("node of %d keys at depth %d", len(n.keys), depth)
		}
		if !slices.IsSorted(n.keys) {
			t.Fatalf("node keys out of order at depth %d", depth)
		}
		if n.leaf() {
			if leafDepth < 0 {
				leafDepth = depth
			} else if leafDepth != depth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
			if len(n.vals) != len(n.keys) || n.size != len(n.keys) {
				t.Fatalf("leaf of %d keys, %d values, size %d", len(n.keys), len(n.vals), n.size)
			}
			return n.keys[0], n.size
		}
		if root && len(n.kids) < 2 {
			t.Fatal("inner root with one kid")
		}
		size := 0
		for i, k := range n.kids {
			first, s := walk(k, depth+1, false)
			if first != n.keys[i] {
				t.Fatalf("inner key %q for a kid starting at %q", n.keys[i], first)
			}
			size += s
		}
		if size != n.size {
			t.Fatalf("inner size %d, kids hold %d", n.size, size)
		}
		return n.keys[0], size
	}
	walk(m.root, 0, true)
}

// sortedMapHolds reports whether m's keys and values, in order, are want's.
func sortedMapHolds(m sortedMap[int], want map[string]int) bool {
	keys := slices.Sorted(maps.Keys(want))
	vals := m.appendValues(nil)
	if m.len() != len(keys) || len(vals) != len(keys) {
		return false
	}
	for i, k := range keys {
		if vals[i] != want[k] {
			return false
		}
	}
	return true
}

// TestListingBuiltOnce checks that a listing's values are built on first
// use and shared afterwards, without allocating.
func TestListingBuiltOnce(t *testing.T) {
	l := &listing[int]{m: sortedMap[int]{}.apply([]mapEdit[int]{{key: "a", val: 1}, {key: "b", val: 2}})}
	if l.vals != nil {
		t.Fatal("values built before use")
	}
	first := l.values()
	if !slices.Equal(first, []int{1, 2}) {
		t.Fatalf("values = %v", first)
	}
	if allocs := testing.AllocsPerRun(10, func() { _ = l.values() }); allocs != 0 {
		t.Fatalf("values allocates %v times once built", allocs)
	}
	if &l.values()[0] != &first[0] {
		t.Fatal("values rebuilt")
	}
}
