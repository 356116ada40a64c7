package catalog

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestToolIndexAgainstMap runs random batches of sets and deletes on a
// toolIndex and on a Go map, with the real hash and with hashes that
// collide on purpose (in their low bits, so names share deep paths, and in
// all 64, so names end in collision lists), and checks after each batch
// that the index finds exactly what the map holds and that earlier
// versions are unchanged.
func TestToolIndexAgainstMap(t *testing.T) {
	hashes := []struct {
		name string
		hash func(string) uint64
	}{
		{"maphash", hashName},
		{"low bits shared", func(s string) uint64 { return hashName(s) &^ (1<<40 - 1) }},
		{"eight values", func(s string) uint64 { return hashName(s) % 8 }},
	}
	for _, h := range hashes {
		t.Run(h.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			type version struct {
				x    toolIndex
				want map[string]*Tool
			}
			var versions []version
			x, want := toolIndex{}, map[string]*Tool{}
			for range 120 {
				b := x.batch()
				b.hash = h.hash
				for range 1 + rng.IntN(20) {
					name := fmt.Sprintf("s%d__t", rng.IntN(300))
					if rng.IntN(3) == 0 {
						b.delete(name)
						delete(want, name)
						continue
					}
					tl := &Tool{Qualified: name}
					b.set(tl)
					want[name] = tl
				}
				x = b.done()
				checkIndex(t, x, want, h.hash)
				cp := make(map[string]*Tool, len(want))
				for k, v := range want {
					cp[k] = v
				}
				versions = append(versions, version{x, cp})
			}
			for i, v := range versions {
				checkIndex(t, v.x, v.want, h.hash)
				if t.Failed() {
					t.Fatalf("version %d changed after later batches", i)
				}
			}
		})
	}
}

// checkIndex fails t unless x finds exactly the tools of want.
func checkIndex(t *testing.T, x toolIndex, want map[string]*Tool, hash func(string) uint64) {
	t.Helper()
	for name, tl := range want {
		if got := x.root.get(name, hash(name)); got != tl {
			t.Fatalf("get(%q) = %p, want %p", name, got, tl)
		}
	}
	for i := range 300 {
		name := fmt.Sprintf("s%d__t", i)
		if _, ok := want[name]; !ok && x.root.get(name, hash(name)) != nil {
			t.Fatalf("get(%q) found a deleted name", name)
		}
	}
	if n := countIndex(x.root, 0); n != len(want) {
		t.Fatalf("index holds %d tools, want %d", n, len(want))
	}
}

func countIndex(n *indexNode, shift uint) int {
	if n == nil {
		return 0
	}
	count := 0
	for _, s := range n.slots {
		if s.kid != nil {
			count += countIndex(s.kid, shift+indexBits)
		} else {
			count++
		}
	}
	return count
}
