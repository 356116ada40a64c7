package toolsearch

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// coordRerank: score times (concepts held / concepts known)^gamma.
func coordRerank(x *Index, queries []toolcorpus.Query, gamma float64, argsToo bool, weighted ...bool) (r [3]float64) {
	n := float32(len(x.byName))
	for _, q := range queries {
		hits, _ := x.Search(Query{Text: q.Text, K: -1})
		terms := x.voc.queryTerms(q.Text, x.synonymWeight, &x.lexWeights, nil, nil, nil)
		var concepts [][]int32
		var cw []float64
		for start := 0; start < len(terms); {
			c := terms[start].concept
			end := start + 1
			for end < len(terms) && terms[end].concept == c {
				end++
			}
			var ids []int32
			w := 0.0
			for _, qt := range terms[start:end] {
				if tid, ok := x.termID[qt.term]; ok {
					ids = append(ids, tid)
					w = max(w, float64(qt.weight*idf(n, float32(len(x.postings[tid])))))
				}
			}
			if len(ids) > 0 && (argsToo || !terms[start].arg) {
				concepts = append(concepts, ids)
				if len(weighted) == 0 {
					w = 1
				}
				cw = append(cw, w)
			}
			start = end
		}
		type c struct {
			name string
			s    float64
		}
		cs := make([]c, len(hits))
		for i, h := range hits {
			d := &x.docs[x.byName[h.Qualified]]
			held, all := 0.0, 0.0
			for ci, ids := range concepts {
				all += cw[ci]
				for _, id := range ids {
					if _, ok := slices.BinarySearchFunc(d.terms, id, func(a docTerm, b int32) int { return int(a.term - b) }); ok {
						held += cw[ci]
						break
					}
				}
			}
			co := 1.0
			if all > 0 {
				co = held / all
			}
			cs[i] = c{h.Qualified, h.Score * math.Pow(co, gamma)}
		}
		slices.SortStableFunc(cs, func(a, b c) int {
			switch {
			case a.s > b.s:
				return -1
			case a.s < b.s:
				return 1
			}
			return 0
		})
		rank := slices.IndexFunc(cs, func(h c) bool { return q.Right(h.name) }) + 1
		if rank > 10 {
			rank = 0
		}
		if rank > 0 {
			r[2] += 1 / float64(rank)
			if rank <= 5 {
				r[1]++
			}
			if rank == 1 {
				r[0]++
			}
		}
	}
	nq := float64(len(queries))
	return [3]float64{r[0] / nq, r[1] / nq, r[2] / nq}
}

func TestTuneCoord(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	x := New()
	x.Sync(b.v)
	mt := New()
	if err := mt.Put(toolcorpus.MetaToolServer, b.mtTools...); err != nil {
		t.Fatal(err)
	}
	for _, g := range []float64{0.1, 0.25, 0.5, 1} {
		q := quality{coordRerank(x, b.users, g, false, true), coordRerank(x, b.check, g, false, true), coordRerank(x, b.project, g, false, true), coordRerank(mt, b.mtQueries, g, false, true)}
		t.Logf("idf-weighted gamma %.2f %s", g, q)
	}
	for _, args := range []bool{false} {
		for _, g := range []float64{0, 0.25, 0.5, 1, 2} {
			q := quality{coordRerank(x, b.users, g, args), coordRerank(x, b.check, g, args), coordRerank(x, b.project, g, args), coordRerank(mt, b.mtQueries, g, args)}
			t.Logf("args %v gamma %.2f %s", args, g, q)
		}
	}
}

func TestCoordFlips(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	mt := New()
	if err := mt.Put(toolcorpus.MetaToolServer, b.mtTools...); err != nil {
		t.Fatal(err)
	}
	lost, won := 0, 0
	for _, q := range b.mtQueries {
		a := coordRerank(mt, []toolcorpus.Query{q}, 0, false)
		c := coordRerank(mt, []toolcorpus.Query{q}, 0.25, false)
		if a[1] > c[1] {
			lost++
			if lost <= 15 {
				hits, _ := mt.Search(Query{Text: q.Text, K: 3})
				t.Logf("lost %q want %v top %v", q.Text, q.Want, names(hits))
			}
		}
		if a[1] < c[1] {
			won++
		}
	}
	t.Logf("lost %d won %d", lost, won)
}

