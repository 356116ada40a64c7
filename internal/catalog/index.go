package catalog

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// toolIndex is a persistent map from qualified name to tool, for lookups:
// a hash array mapped trie (Bagwell), 64 ways per level. Like sortedMap, an
// edit copies only the path to its key and shares the rest; unlike it, a
// lookup costs one string hash and a few array indexings (three levels for
// ten thousand tools, four for a million) rather than a search. Lookups do
// not allocate. The zero toolIndex is empty; a toolIndex is never modified
// once built.
//
// Wide nodes make lookups shallow at the cost of larger copies per edit:
// lookups are per call, edits per publish.
type toolIndex struct {
	root *indexNode
}

const (
	indexBits = 6 // hash bits per level: 64 slots
	indexMask = 1<<indexBits - 1
)

// indexSeed hashes qualified names for every index. Hashes never leave the
// process, so one random seed serves all.
var indexSeed = maphash.MakeSeed()

// indexNode holds up to 64 slots, present ones only, in hash order. Below
// the last level (when the 64 hash bits are used up) a node is a collision
// list: tools whose names hash alike, in no order and with no bitmap.
type indexNode struct {
	bitmap uint64 // which of the 64 slots are present
	slots  []indexSlot
	owner  *batchOwner // the batch that created the node, free to edit it until it ends
}

// indexSlot is a tool or, when several tools share the slot's hash bits so
// far, a node one level down.
type indexSlot struct {
	tool *Tool
	kid  *indexNode
}

func hashName(name string) uint64 { return maphash.String(indexSeed, name) }

// get returns the tool named qualified, or nil.
func (x toolIndex) get(qualified string) *Tool {
	return x.root.get(qualified, hashName(qualified))
}

// get returns the tool named qualified, whose hash is h, from the trie
// rooted at n (nil: empty).
func (n *indexNode) get(qualified string, h uint64) *Tool {
	for shift := uint(0); shift < 64; shift += indexBits {
		if n == nil {
			return nil
		}
		bit := uint64(1) << (h >> shift & indexMask)
		if n.bitmap&bit == 0 {
			return nil
		}
		s := n.slots[bits.OnesCount64(n.bitmap&(bit-1))]
		if s.kid == nil {
			if s.tool.Qualified == qualified {
				return s.tool
			}
			return nil
		}
		n = s.kid
	}
	// The hash is used up: n is a collision list.
	for _, s := range n.slots {
		if s.tool.Qualified == qualified {
			return s.tool
		}
	}
	return nil
}

// indexBatch is a run of edits to a toolIndex that copies each node at
// most once: a node the batch created is edited in place, since no View
// can see it before the batch ends. A publish edits all its names in one
// batch, so the paths they share (the root, at least) are copied once.
type indexBatch struct {
	root  *indexNode
	owner *batchOwner
	hash  func(string) uint64 // hashName; tests force collisions with another
}

// batchOwner marks the nodes one indexBatch created. It has a size so that
// every batch's owner is a distinct pointer.
type batchOwner struct{ _ byte }

func (x toolIndex) batch() *indexBatch {
	return &indexBatch{root: x.root, owner: new(batchOwner), hash: hashName}
}

// set puts t under t.Qualified, replacing any tool of that name.
func (b *indexBatch) set(t *Tool) {
	b.root = b.root.with(t, b.hash(t.Qualified), 0, b)
}

// delete removes the tool named qualified, if any.
func (b *indexBatch) delete(qualified string) {
	if b.root != nil {
		b.root = b.root.without(qualified, b.hash(qualified), 0, b)
	}
}

// done ends the batch and returns the index it built; b must not be used
// again.
func (b *indexBatch) done() toolIndex {
	return toolIndex{b.root}
}

// mutable returns n itself if the batch owns it and it has room for extra
// more slots, else a copy that b owns and that has the room (an empty node
// for nil).
func (n *indexNode) mutable(b *indexBatch, extra int) *indexNode {
	if n == nil {
		return newIndexNode(b.owner, extra)
	}
	if n.owner == b.owner && cap(n.slots)-len(n.slots) >= extra {
		return n
	}
	out := newIndexNode(b.owner, len(n.slots)+extra)
	out.bitmap = n.bitmap
	out.slots = append(out.slots, n.slots...)
	return out
}

// newIndexNode returns an empty node with room for n slots, allocated with
// them in one block, so that a lookup misses the cache once per level
// rather than once for the node and once for its slots.
func newIndexNode(owner *batchOwner, n int) *indexNode {
	var out *indexNode
	switch {
	case n <= 1:
		out = indexBlock(func(s *[1]indexSlot) []indexSlot { return s[:0] })
	case n <= 2:
		out = indexBlock(func(s *[2]indexSlot) []indexSlot { return s[:0] })
	case n <= 4:
		out = indexBlock(func(s *[4]indexSlot) []indexSlot { return s[:0] })
	case n <= 8:
		out = indexBlock(func(s *[8]indexSlot) []indexSlot { return s[:0] })
	case n <= 16:
		out = indexBlock(func(s *[16]indexSlot) []indexSlot { return s[:0] })
	case n <= 32:
		out = indexBlock(func(s *[32]indexSlot) []indexSlot { return s[:0] })
	case n <= 1<<indexBits:
		out = indexBlock(func(s *[1 << indexBits]indexSlot) []indexSlot { return s[:0] })
	default: // a collision list, which has no bound
		out = &indexNode{slots: make([]indexSlot, 0, n)}
	}
	out.owner = owner
	return out
}

// indexBlock allocates a node and an array of slots A in one block; slots
// slices the array. Go has no generic array length, so each size class
// names its array type.
func indexBlock[A any](slots func(*A) []indexSlot) *indexNode {
	b := new(struct {
		indexNode
		s A
	})
	b.slots = slots(&b.s)
	return &b.indexNode
}

// with returns n (nil: empty) holding t, edited in place if b owns it, else
// copied; h is the hash of t.Qualified and shift the hash bits used above n.
func (n *indexNode) with(t *Tool, h uint64, shift uint, b *indexBatch) *indexNode {
	if shift >= 64 {
		out := n.mutable(b, 1)
		for i := range out.slots {
			if out.slots[i].tool.Qualified == t.Qualified {
				out.slots[i].tool = t
				return out
			}
		}
		out.slots = append(out.slots, indexSlot{tool: t})
		return out
	}
	bit := uint64(1) << (h >> shift & indexMask)
	if n == nil || n.bitmap&bit == 0 {
		out := n.mutable(b, 1)
		out.bitmap |= bit
		out.slots = slices.Insert(out.slots, bits.OnesCount64(out.bitmap&(bit-1)), indexSlot{tool: t})
		return out
	}
	out := n.mutable(b, 0)
	i := bits.OnesCount64(out.bitmap & (bit - 1))
	switch s := &out.slots[i]; {
	case s.kid != nil:
		s.kid = s.kid.with(t, h, shift+indexBits, b)
	case s.tool.Qualified == t.Qualified:
		s.tool = t
	default: // two names share these bits: both go a level down
		kid := (*indexNode)(nil).with(s.tool, b.hash(s.tool.Qualified), shift+indexBits, b)
		*s = indexSlot{kid: kid.with(t, h, shift+indexBits, b)}
	}
	return out
}

// without returns n without qualified: nil if that leaves it empty, n
// itself if it does not hold qualified, else n edited in place if b owns it
// or a copy.
func (n *indexNode) without(qualified string, h uint64, shift uint, b *indexBatch) *indexNode {
	if shift >= 64 {
		i := slices.IndexFunc(n.slots, func(s indexSlot) bool { return s.tool.Qualified == qualified })
		switch {
		case i < 0:
			return n
		case len(n.slots) == 1:
			return nil
		}
		out := n.mutable(b, 0)
		out.slots = slices.Delete(out.slots, i, i+1)
		return out
	}
	bit := uint64(1) << (h >> shift & indexMask)
	if n.bitmap&bit == 0 {
		return n
	}
	i := bits.OnesCount64(n.bitmap & (bit - 1))
	s := n.slots[i]
	var kid *indexNode
	if s.kid == nil {
		if s.tool.Qualified != qualified {
			return n
		}
	} else if kid = s.kid.without(qualified, h, shift+indexBits, b); kid == s.kid {
		return n
	}
	out := n.mutable(b, 0)
	switch {
	case kid == nil: // the tool, or a kid left empty
		out.bitmap &^= bit
		out.slots = slices.Delete(out.slots, i, i+1)
	case len(kid.slots) == 1 && kid.slots[0].kid == nil:
		// A kid left with one tool folds into its slot, so that the trie
		// stays as shallow as its contents need.
		out.slots[i] = kid.slots[0]
	default:
		out.slots[i].kid = kid
	}
	if len(out.slots) == 0 {
		return nil
	}
	return out
}
