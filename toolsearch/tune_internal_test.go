package toolsearch

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// tuneSets are what the first two passes tuned on: the project's first
// queries and the tuning half of the user queries and of the no-answer
// queries. The other half is tuning data since the third pass (which
// reads it in tune_third_internal_test.go); the held-out set
// (heldout.json) is never read.
func tuneSets(t testing.TB) (project, users []toolcorpus.Query, none []string) {
	t.Helper()
	project, err := toolcorpus.Queries()
	if err != nil {
		t.Fatal(err)
	}
	all, err := toolcorpus.Users()
	if err != nil {
		t.Fatal(err)
	}
	noAnswer, err := toolcorpus.NoAnswer()
	if err != nil {
		t.Fatal(err)
	}
	return project, toolcorpus.Split(all, toolcorpus.Tuning), toolcorpus.SplitTexts(noAnswer, toolcorpus.Tuning)
}

// recall returns recall@5 and the mean reciprocal rank (first 10 hits).
func recall(x *Index, queries []toolcorpus.Query) (r5, mrr float64) {
	for _, q := range queries {
		hits, _ := x.Search(Query{Text: q.Text, K: 10})
		rank := slices.IndexFunc(hits, func(h Hit) bool { return q.Right(h.Qualified) }) + 1
		if rank > 0 {
			mrr += 1 / float64(rank)
			if rank <= 5 {
				r5++
			}
		}
	}
	n := float64(len(queries))
	return r5 / n, mrr / n
}

// TestTune searches the ranking's parameters on the tuning half of the
// user queries, with the project's queries as a check, and prints the
// best. It reads no held-out query. Run it with
//
//	TOOLSEARCH_TUNE=1 go test -run TestTune -v ./toolsearch/
func TestTune(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	project, users, _ := tuneSets(t)
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	v := toolcorpus.View(toolcorpus.Publisher(servers, 1))
	type result struct {
		desc             string
		r5, mrr, pr5, pm float64
	}
	var results []result
	for _, name := range []float64{2, 3, 4} {
		for _, title := range []float64{1, 2} {
			for _, desc := range []float64{0.5, 1, 1.5} {
				for _, params := range []float64{0.3, 0.7} {
					for _, server := range []float64{0.5, 1.5, 3} {
						for _, k1 := range []float64{0.8, 1.2, 1.8} {
							for _, b := range []float64{0.5, 0.75, 0.9} {
								for _, syn := range []float32{0.4, 0.6, 0.8} {
									w := Weights{Name: name, Server: server, Title: title, Description: desc, Params: params, ParamDescriptions: params / 2}
									x := New(WithWeights(w), WithBM25(k1, b))
									x.synonymWeight = syn
									x.Sync(v)
									r5, mrr := recall(x, users)
									pr5, pm := recall(x, project)
									results = append(results, result{fmt.Sprintf("%+v k1=%.1f b=%.2f syn=%.1f", w, k1, b, syn), r5, mrr, pr5, pm})
								}
							}
						}
					}
				}
			}
		}
	}
	sort.Slice(results, func(i, j int) bool {
		return results[i].r5+results[i].mrr > results[j].r5+results[j].mrr
	})
	for _, r := range results[:20] {
		t.Logf("tuning r5 %.3f MRR %.3f | project r5 %.3f MRR %.3f | %s", r.r5, r.mrr, r.pr5, r.pm, r.desc)
	}
}

// TestTuneAbstention calibrates the abstention rule on users.json and
// noanswer.json, both halves (the third pass of issue 39 made both tuning
// data): for each weight of unseen words and each MinMatch it prints how
// many no-answer queries abstain and how much recall@5 drops, and keeps
// the pairs that drop it by 0.02 at most. It reads no held-out query.
//
//	TOOLSEARCH_TUNE=1 go test -run 'TestTuneAbstention$' -v ./toolsearch/
func TestTuneAbstention(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	users, err := toolcorpus.Users()
	if err != nil {
		t.Fatal(err)
	}
	none, err := toolcorpus.NoAnswer()
	if err != nil {
		t.Fatal(err)
	}
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	v := toolcorpus.View(toolcorpus.Publisher(servers, 1))
	for _, u := range []float32{1, 1.5, 2, 2.5, 3, 4} {
		x := New()
		x.unseen = u
		x.Sync(v)
		type found struct {
			in5   bool
			match float64
		}
		var pos []found
		for _, q := range users {
			hits, _ := x.Search(Query{Text: q.Text, K: 5})
			f := found{in5: slices.IndexFunc(hits, func(h Hit) bool { return q.Right(h.Qualified) }) >= 0}
			if len(hits) > 0 {
				f.match = hits[0].Match
			}
			pos = append(pos, f)
		}
		var neg []float64
		for _, q := range none {
			hits, _ := x.Search(Query{Text: q, K: 1})
			m := 0.0
			if len(hits) > 0 {
				m = hits[0].Match
			}
			neg = append(neg, m)
		}
		bestAb, bestTau, bestDrop := -1, 0.0, 0.0
		for tau := 0.02; tau < 0.3; tau += 0.005 {
			lost := 0
			for _, p := range pos {
				if p.in5 && p.match < tau {
					lost++
				}
			}
			drop := float64(lost) / float64(len(pos))
			ab := 0
			for _, m := range neg {
				if m < tau {
					ab++
				}
			}
			if drop <= 0.02 && ab > bestAb {
				bestAb, bestTau, bestDrop = ab, tau, drop
			}
		}
		t.Logf("unseen %.1f: MinMatch %.3f abstains on %d/%d, recall@5 drops %.3f", u, bestTau, bestAb, len(neg), bestDrop)
	}
}

// tuneBench is what a lexicon tuning reads: the tuning half of the user
// queries, the project's queries and the MetaTool subset (never tuned on
// before, held out by nature). It reads no held-out query.
type tuneBench struct {
	project, users []toolcorpus.Query
	none           []string
	v              *snapshot.View
	mtTools        []mcp.Tool
	mtQueries      []toolcorpus.Query
	mtNone         []string
}

func newTuneBench(t testing.TB) *tuneBench {
	b := &tuneBench{}
	b.project, b.users, b.none = tuneSets(t)
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	b.v = toolcorpus.View(toolcorpus.Publisher(servers, 1))
	if b.mtTools, b.mtQueries, b.mtNone, err = toolcorpus.MetaTool(); err != nil {
		t.Fatal(err)
	}
	return b
}

// eval returns recall@5 and MRR of the index New(opts) with set applied
// to it, on the tuning half, the project's queries and MetaTool.
func (b *tuneBench) eval(set func(*Index), opts ...Option) (r [3][2]float64) {
	x := New(opts...)
	if set != nil {
		set(x)
	}
	x.Sync(b.v)
	r[0][0], r[0][1] = recall(x, b.users)
	r[1][0], r[1][1] = recall(x, b.project)
	m := New(opts...)
	if set != nil {
		set(m)
	}
	if err := m.Put(toolcorpus.MetaToolServer, b.mtTools...); err != nil {
		panic(err)
	}
	r[2][0], r[2][1] = recall(m, b.mtQueries)
	return r
}

func fmtEval(r [3][2]float64) string {
	return fmt.Sprintf("tuning %.3f/%.3f project %.3f/%.3f metatool %.3f/%.3f", r[0][0], r[0][1], r[1][0], r[1][1], r[2][0], r[2][1])
}

// TestTuneLexicon prints the quality of the index with and without the
// lexicon and the synonym groups, and of the lexicon's cost cuts, on the
// tuning half, the project's queries and MetaTool; with
// TOOLSEARCH_TUNE=kinds also each kind's weight. It reads no held-out
// query.
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneLexicon -v ./toolsearch/
func TestTuneLexicon(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newTuneBench(t)
	noHand := func() *Vocabulary {
		v := DefaultVocabulary()
		v.groups = nil
		return v
	}
	t.Logf("%-40s %s", "no lexicon", fmtEval(b.eval(func(x *Index) { x.lexWeights = lexWeights{} })))
	t.Logf("%-40s %s", "default", fmtEval(b.eval(nil)))
	t.Logf("%-40s %s", "no lexicon, no hand synonyms", fmtEval(b.eval(func(x *Index) { x.lexWeights = lexWeights{} }, WithVocabulary(noHand()))))
	t.Logf("%-40s %s", "default, no hand synonyms", fmtEval(b.eval(nil, WithVocabulary(noHand()))))
	for _, df := range []float32{0.01, 0.02, 0.05, 1} {
		for _, m := range []int{0, 5} {
			t.Logf("related max df %.2f, best %2d %-12s %s", df, m, "", fmtEval(b.eval(func(x *Index) { x.relatedMaxDF, x.relatedMax = df, m })))
		}
	}
	if os.Getenv("TOOLSEARCH_TUNE") != "kinds" {
		return
	}
	for k := range numLexKinds {
		for _, w := range []float32{0, 0.2, 0.4, 0.6} {
			lw := defaultLexWeights
			for r := range lexRanks {
				lw[k][r] = w * []float32{1, 0.6}[r]
			}
			t.Logf("kind %d weight %.1f %-24s %s", k, w, "", fmtEval(b.eval(func(x *Index) { x.lexWeights = lw })))
		}
	}
}
