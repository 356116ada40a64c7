package toolsearch

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// serverStats are the servers' words: for each term, how many tools of
// each server hold it.
type serverStats struct {
	tools map[string]int            // server -> tools
	held  map[string]map[string]int // term -> server -> tools holding it
}

func statsOf(x *Index) *serverStats {
	st := &serverStats{tools: map[string]int{}, held: map[string]map[string]int{}}
	for i := range x.docs {
		d := &x.docs[i]
		if d.qualified == "" {
			continue
		}
		st.tools[d.server]++
		for _, dt := range d.terms {
			term := x.terms[dt.term]
			m := st.held[term]
			if m == nil {
				m = map[string]int{}
				st.held[term] = m
			}
			m[d.server]++
		}
	}
	return st
}

// serverShare is, per server, the share of the query's concepts the
// server's tools hold (weighted by the concepts' idf over servers).
func (st *serverStats) serverShare(x *Index, text string, k float64) map[string]float64 {
	terms := x.voc.queryTerms(text, x.synonymWeight, &x.lexWeights, nil, nil, nil)
	ns := float64(len(st.tools))
	out := map[string]float64{}
	var best float64
	for start := 0; start < len(terms); {
		c := terms[start].concept
		end := start + 1
		for end < len(terms) && terms[end].concept == c {
			end++
		}
		per := map[string]float64{}
		most := 0.0
		for _, qt := range terms[start:end] {
			m := st.held[qt.term]
			if len(m) == 0 {
				continue
			}
			idf := float64(qt.weight) * math.Log(1+(ns-float64(len(m))+0.5)/(float64(len(m))+0.5))
			most = max(most, idf)
			for s, n := range m {
				p := float64(n) / float64(st.tools[s])
				per[s] = max(per[s], idf*p/(p+k))
			}
		}
		best += most
		for s, v := range per {
			out[s] += v
		}
		start = end
	}
	if best > 0 {
		for s := range out {
			out[s] /= best
		}
	}
	return out
}

func serverRerank(x *Index, st *serverStats, queries []toolcorpus.Query, lambda, k float64) (r [3]float64) {
	for _, q := range queries {
		hits, _ := x.Search(Query{Text: q.Text, K: -1})
		share := st.serverShare(x, q.Text, k)
		type c struct {
			name string
			s    float64
		}
		cs := make([]c, len(hits))
		for i, h := range hits {
			cs[i] = c{h.Qualified, h.Match + lambda*share[h.Tool.Server()]}
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
	n := float64(len(queries))
	return [3]float64{r[0] / n, r[1] / n, r[2] / n}
}

func TestTuneServerEvidence(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	x := New()
	x.Sync(b.v)
	st := statsOf(x)
	for _, k := range []float64{0.05, 0.2, 1} {
		for _, l := range []float64{0, 0.1, 0.2, 0.3, 0.5} {
			q := quality{serverRerank(x, st, b.users, l, k), serverRerank(x, st, b.check, l, k), serverRerank(x, st, b.project, l, k)}
			t.Logf("k %.2f lambda %.2f %s", k, l, q)
		}
	}
}
