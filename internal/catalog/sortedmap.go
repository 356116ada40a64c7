package catalog

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// sortedMap is a persistent map from strings to V, kept in key order: a B+
// tree whose edits copy only the nodes on the paths to the keys they change
// and share every other node with the map they were made from. A View keeps
// its tools, catalogs and quarantined tools in sortedMaps, so that the next
// View costs the size of a change times the height of the tree (4 levels
// hold a million keys), not a copy of everything. The zero sortedMap is
// empty; a sortedMap is never modified once built.
type sortedMap[V any] struct {
	root *mapNode[V]
}

// Node fill bounds. Every node but the root holds minFill to maxFill keys;
// smaller nodes make an edit copy less, larger ones make the tree shallower.
const (
	maxFill = 32
	minFill = maxFill / 4
)

// mapNode is a leaf (vals set) or an inner node (kids set). Immutable.
type mapNode[V any] struct {
	keys []string      // leaf: its keys; inner: the smallest key under each kid
	vals []V           // leaf only, parallel to keys
	kids []*mapNode[V] // inner only, parallel to keys
	size int           // keys in the leaves under the node
}

func (n *mapNode[V]) leaf() bool { return n.kids == nil }

// underfull reports whether n holds too few keys or kids to stand alone
// below a parent.
func (n *mapNode[V]) underfull() bool { return len(n.keys) < minFill }

// mapEdit sets key to val, or deletes key when del is set.
type mapEdit[V any] struct {
	key string
	val V
	del bool
}

// len is the number of keys. Constant time.
func (m sortedMap[V]) len() int {
	if m.root == nil {
		return 0
	}
	return m.root.size
}

// get returns the value of key. O(log n), no allocation.
func (m sortedMap[V]) get(key string) (V, bool) {
	n := m.root
	if n == nil {
		var zero V
		return zero, false
	}
	for !n.leaf() {
		// The last kid whose smallest key is not above key.
		i, found := slices.BinarySearch(n.keys, key)
		if !found {
			i--
		}
		if i < 0 {
			var zero V
			return zero, false
		}
		n = n.kids[i]
	}
	i, found := slices.BinarySearch(n.keys, key)
	if !found {
		var zero V
		return zero, false
	}
	return n.vals[i], true
}

// appendValues appends every value to dst in key order.
func (m sortedMap[V]) appendValues(dst []V) []V {
	if m.root == nil {
		return dst
	}
	return m.root.appendValues(dst)
}

func (n *mapNode[V]) appendValues(dst []V) []V {
	if n.leaf() {
		return append(dst, n.vals...)
	}
	for _, k := range n.kids {
		dst = k.appendValues(dst)
	}
	return dst
}

// apply returns m with edits applied; m is unchanged. edits must be sorted
// by key, one per key. Deleting an absent key is no error.
func (m sortedMap[V]) apply(edits []mapEdit[V]) sortedMap[V] {
	if len(edits) == 0 {
		return m
	}
	var nodes []*mapNode[V]
	if m.root == nil {
		nodes = splitLeaf(mergeLeaf(nil, nil, edits))
	} else {
		nodes = m.root.apply(edits)
	}
	// A root that split grows a level; one left with a single kid sheds one.
	for len(nodes) > 1 {
		nodes = splitInner(nodes)
	}
	if len(nodes) == 0 {
		return sortedMap[V]{}
	}
	root := nodes[0]
	for !root.leaf() && len(root.kids) == 1 {
		root = root.kids[0]
	}
	return sortedMap[V]{root}
}

// apply returns the nodes that replace n once edits (all of them n's to
// make) are applied: none if n ends up empty, several if it overflowed, all
// at n's height. A returned node may be underfull; n's parent fixes that.
func (n *mapNode[V]) apply(edits []mapEdit[V]) []*mapNode[V] {
	if n.leaf() {
		return splitLeaf(mergeLeaf(n.keys, n.vals, edits))
	}
	kids := make([]*mapNode[V], 0, len(n.kids)+1)
	for i, kid := range n.kids {
		// The edits for kid are those below the next kid's smallest key;
		// the first kid also takes those below its own.
		mine := len(edits)
		if i+1 < len(n.kids) {
			mine, _ = slices.BinarySearchFunc(edits, n.keys[i+1], func(e mapEdit[V], k string) int {
				return strings.Compare(e.key, k)
			})
		}
		if mine == 0 {
			kids = append(kids, kid)
			continue
		}
		kids = append(kids, kid.apply(edits[:mine])...)
		edits = edits[mine:]
	}
	return splitInner(rebalance(kids))
}

// rebalance merges every underfull node in kids, which are siblings, with a
// neighbour. kids is the caller's own slice and is reused.
func rebalance[V any](kids []*mapNode[V]) []*mapNode[V] {
	for i := 0; i < len(kids); i++ {
		if len(kids) == 1 || !kids[i].underfull() {
			continue
		}
		j := i // merge kids[j] and kids[j+1]
		if j+1 == len(kids) {
			j--
		}
		kids = slices.Replace(kids, j, j+2, join(kids[j], kids[j+1])...)
		i = j - 1 // the merged node may still be underfull
	}
	return kids
}

// join returns the contents of siblings a and b as one node, or two when
// they do not fit in one.
func join[V any](a, b *mapNode[V]) []*mapNode[V] {
	keys := slices.Concat(a.keys, b.keys)
	if a.leaf() {
		return splitLeaf(keys, slices.Concat(a.vals, b.vals))
	}
	return splitInner(slices.Concat(a.kids, b.kids))
}

// mergeLeaf returns a leaf's keys and values with edits applied, as new slices.
func mergeLeaf[V any](keys []string, vals []V, edits []mapEdit[V]) ([]string, []V) {
	outK := make([]string, 0, len(keys)+len(edits))
	outV := make([]V, 0, len(keys)+len(edits))
	i := 0
	for _, e := range edits {
		for i < len(keys) && keys[i] < e.key {
			outK, outV = append(outK, keys[i]), append(outV, vals[i])
			i++
		}
		if i < len(keys) && keys[i] == e.key {
			i++ // replaced or deleted
		}
		if !e.del {
			outK, outV = append(outK, e.key), append(outV, e.val)
		}
	}
	return append(outK, keys[i:]...), append(outV, vals[i:]...)
}

// splitLeaf makes leaves of keys and vals: none if empty, else as few as
// hold them, evenly filled. Leaves of a split get arrays of their own, so
// that one that outlives its siblings does not keep theirs alive.
func splitLeaf[V any](keys []string, vals []V) []*mapNode[V] {
	parts := (len(keys) + maxFill - 1) / maxFill
	if parts == 1 {
		return []*mapNode[V]{{keys: keys, vals: vals, size: len(keys)}}
	}
	out := make([]*mapNode[V], parts)
	for p := range parts {
		lo, hi := p*len(keys)/parts, (p+1)*len(keys)/parts
		out[p] = &mapNode[V]{keys: slices.Clone(keys[lo:hi]), vals: slices.Clone(vals[lo:hi]), size: hi - lo}
	}
	return out
}

// splitInner makes inner nodes over kids: none if empty, else as few as
// hold them, evenly filled, with arrays of their own when there are several
// (as splitLeaf does).
func splitInner[V any](kids []*mapNode[V]) []*mapNode[V] {
	parts := (len(kids) + maxFill - 1) / maxFill
	out := make([]*mapNode[V], parts)
	for p := range parts {
		lo, hi := p*len(kids)/parts, (p+1)*len(kids)/parts
		n := &mapNode[V]{keys: make([]string, hi-lo), kids: kids[lo:hi:hi]}
		if parts > 1 {
			n.kids = slices.Clone(n.kids)
		}
		for i, k := range n.kids {
			n.keys[i] = k.keys[0]
			n.size += k.size
		}
		out[p] = n
	}
	return out
}

// listing is a sortedMap and, built on first use, its values in key order:
// what a View walks. Views whose map did not change share one listing, so
// its values are built at most once for all of them. The build is O(n) and
// allocates once; every later read is an atomic load.
type listing[V any] struct {
	m     sortedMap[V]
	built uint32     // atomic: 1 once vals is set and final, to read without mu
	mu    sync.Mutex // serializes the build
	vals  []V
}

// values returns the values in key order, the listing's own slice.
func (l *listing[V]) values() []V {
	if atomic.LoadUint32(&l.built) != 0 {
		return l.vals
	}
	return l.build()
}

func (l *listing[V]) build() []V {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.built == 0 {
		l.vals = l.m.appendValues(make([]V, 0, l.m.len()))
		atomic.StoreUint32(&l.built, 1)
	}
	return l.vals
}
