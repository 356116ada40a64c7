package toolsearch

import (
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// prfRerank: the terms of the top m hits' names and titles (by idf, the
// query's own left out) are a second query, added at beta.
func prfRerank(x *Index, queries []toolcorpus.Query, m, e int, beta float64, fields []field) (r [3]float64) {
	n := float32(len(x.byName))
	for _, q := range queries {
		hits, _ := x.Search(Query{Text: q.Text, K: -1})
		qterms := map[string]bool{}
		for _, qt := range x.voc.queryTerms(q.Text, x.synonymWeight, &x.lexWeights, nil, nil, nil) {
			qterms[qt.term] = true
		}
		weight := map[int32]float64{}
		for i := 0; i < m && i < len(hits); i++ {
			d := &x.docs[x.byName[hits[i].Qualified]]
			for _, dt := range d.terms {
				p := x.postings[dt.term][dt.pos]
				in := false
				for _, f := range fields {
					in = in || p.tf[f] > 0
				}
				if !in || qterms[x.terms[dt.term]] {
					continue
				}
				weight[dt.term] += hits[i].Match * float64(idf(n, float32(len(x.postings[dt.term]))))
			}
		}
		type tw struct {
			t int32
			w float64
		}
		var tws []tw
		for t, w := range weight {
			tws = append(tws, tw{t, w})
		}
		sort.Slice(tws, func(i, j int) bool {
			if tws[i].w != tws[j].w {
				return tws[i].w > tws[j].w
			}
			return tws[i].t < tws[j].t
		})
		if len(tws) > e {
			tws = tws[:e]
		}
		var norm float64
		for _, t := range tws {
			norm += t.w
		}
		type c struct {
			name string
			s    float64
		}
		cs := make([]c, len(hits))
		for i, h := range hits {
			d := &x.docs[x.byName[h.Qualified]]
			add := 0.0
			for _, t := range tws {
				if _, ok := slices.BinarySearchFunc(d.terms, t.t, func(a docTerm, b int32) int { return int(a.term - b) }); ok {
					add += t.w
				}
			}
			if norm > 0 {
				add /= norm
			}
			cs[i] = c{h.Qualified, h.Match + beta*add}
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

func TestTunePRF(t *testing.T) {
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
	for _, fs := range [][]field{{fieldName, fieldTitle}, {fieldName, fieldTitle, fieldDesc}} {
		for _, m := range []int{1, 3} {
			for _, e := range []int{5, 20} {
				for _, beta := range []float64{0, 0.05, 0.1, 0.2} {
					q := quality{prfRerank(x, b.users, m, e, beta, fs), prfRerank(x, b.check, m, e, beta, fs), prfRerank(x, b.project, m, e, beta, fs), prfRerank(mt, b.mtQueries, m, e, beta, fs)}
					t.Logf("fields %d m %d e %2d beta %.2f %s", len(fs), m, e, beta, q)
				}
			}
		}
	}
}
