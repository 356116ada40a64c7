package toolsearch

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// The third pass of issue 39 tunes on users.json's tuning half, checks on
// its other half (both are tuning data since the held-out set of
// heldout.json was written), and reads the project's queries and MetaTool
// beside them. Nothing here reads the held-out set.

// quality is recall@1, recall@5 and MRR (first 10 hits) on users.json's
// tuning half, its other half, the project's queries and MetaTool.
type quality [4][3]float64

func (q quality) String() string {
	return fmt.Sprintf("tuning %.3f %.3f %.3f | check %.3f %.3f %.3f | project %.3f %.3f %.3f | metatool %.3f %.3f %.3f",
		q[0][0], q[0][1], q[0][2], q[1][0], q[1][1], q[1][2], q[2][0], q[2][1], q[2][2], q[3][0], q[3][1], q[3][2])
}

// rankOf is the rank (1-based) of the first right name among the first
// 10, 0 for none.
func rankOf(q toolcorpus.Query, names []string) int {
	r := slices.IndexFunc(names[:min(10, len(names))], q.Right) + 1
	return r
}

// tally turns ranks into recall@1, recall@5 and MRR.
func tally(ranks []int) (r [3]float64) {
	for _, rank := range ranks {
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
	n := float64(max(len(ranks), 1))
	return [3]float64{r[0] / n, r[1] / n, r[2] / n}
}

// reranker reorders a query's hits (all of them, best first); nil keeps
// the index's order.
type reranker func(x *Index, text string, hits []Hit) []string

func scoreSet(x *Index, queries []toolcorpus.Query, rr reranker) [3]float64 {
	ranks := make([]int, len(queries))
	for i, q := range queries {
		k := 10
		if rr != nil {
			k = -1
		}
		hits, _ := x.Search(Query{Text: q.Text, K: k})
		var names []string
		if rr != nil {
			names = rr(x, q.Text, hits)
		} else {
			for _, h := range hits {
				names = append(names, h.Qualified)
			}
		}
		ranks[i] = rankOf(q, names)
	}
	return tally(ranks)
}

// third is the tuning bench of the third pass.
type third struct {
	*tuneBench
	check []toolcorpus.Query
}

func newThird(t testing.TB) *third {
	b := &third{tuneBench: newTuneBench(t)}
	all, err := toolcorpus.Users()
	if err != nil {
		t.Fatal(err)
	}
	b.check = toolcorpus.Split(all, toolcorpus.HeldOut)
	return b
}

// indexes returns the corpus index and the MetaTool index, each New(opts)
// with set applied.
func (b *third) indexes(set func(*Index), opts ...Option) (corpus, metatool *Index) {
	corpus, metatool = New(opts...), New(opts...)
	if set != nil {
		set(corpus)
		set(metatool)
	}
	corpus.Sync(b.v)
	if err := metatool.Put(toolcorpus.MetaToolServer, b.mtTools...); err != nil {
		panic(err)
	}
	return corpus, metatool
}

func (b *third) eval(set func(*Index), rr reranker, opts ...Option) (q quality) {
	x, m := b.indexes(set, opts...)
	q[0], q[1], q[2], q[3] = scoreSet(x, b.users, rr), scoreSet(x, b.check, rr), scoreSet(x, b.project, rr), scoreSet(m, b.mtQueries, rr)
	return q
}

// queryConcepts are a query's concepts as the index reads them: for each, the
// ids of its terms the index holds and its best weighted idf; values
// left out.
func queryConcepts(x *Index, text string) (ids [][]int32, widf []float64) {
	terms := x.voc.queryTerms(text, x.synonymWeight, &x.lexWeights, nil, nil)
	n := float32(len(x.byName))
	for start := 0; start < len(terms); {
		end := start + 1
		for end < len(terms) && terms[end].concept == terms[start].concept {
			end++
		}
		var c []int32
		w := 0.0
		for _, qt := range terms[start:end] {
			if tid, ok := x.termID[qt.term]; ok {
				c = append(c, tid)
				w = max(w, float64(qt.weight*idf(n, float32(len(x.postings[tid])))))
			}
		}
		if len(c) > 0 && !terms[start].arg {
			ids, widf = append(ids, c), append(widf, w)
		}
		start = end
	}
	return ids, widf
}

func holds(d *doc, term int32) bool {
	_, ok := slices.BinarySearchFunc(d.terms, term, func(a docTerm, b int32) int { return int(a.term - b) })
	return ok
}

// byScore returns the names of hits sorted by score, best first, stable.
func byScore(hits []Hit, score func(i int) float64) []string {
	idx := make([]int, len(hits))
	s := make([]float64, len(hits))
	for i := range hits {
		idx[i], s[i] = i, score(i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
	names := make([]string, len(idx))
	for i, j := range idx {
		names[i] = hits[j].Qualified
	}
	return names
}

// coordination multiplies a hit's score by the share of the query's
// concepts it holds, to the power gamma (weighted by idf, or not).
func coordination(gamma float64, weighted bool) reranker {
	return func(x *Index, text string, hits []Hit) []string {
		ids, widf := queryConcepts(x, text)
		return byScore(hits, func(i int) float64 {
			d := &x.docs[x.byName[hits[i].Qualified]]
			held, all := 0.0, 0.0
			for c, terms := range ids {
				w := 1.0
				if weighted {
					w = widf[c]
				}
				all += w
				if slices.ContainsFunc(terms, func(t int32) bool { return holds(d, t) }) {
					held += w
				}
			}
			if all == 0 {
				return hits[i].Score
			}
			return hits[i].Score * math.Pow(held/all, gamma)
		})
	}
}

// serverEvidence adds to a hit's Match lambda times the share of the
// query its server's tools hold together (each concept by its best term,
// idf over servers, saturated by the share of the server's tools holding
// it).
func serverEvidence(lambda, k float64) reranker {
	return func(x *Index, text string, hits []Hit) []string {
		tools := map[string]int{}
		for i := range x.docs {
			if d := &x.docs[i]; d.qualified != "" {
				tools[d.server]++
			}
		}
		ns := float64(len(tools))
		share := map[string]float64{}
		ids, _ := queryConcepts(x, text)
		best := 0.0
		for _, terms := range ids {
			per := map[string]float64{}
			most := 0.0
			for _, t := range terms {
				held := map[string]int{}
				for _, p := range x.postings[t] {
					held[x.docs[p.doc].server]++
				}
				idf := math.Log(1 + (ns-float64(len(held))+0.5)/(float64(len(held))+0.5))
				most = max(most, idf)
				for s, n := range held {
					p := float64(n) / float64(tools[s])
					per[s] = max(per[s], idf*p/(p+k))
				}
			}
			best += most
			for s, v := range per {
				share[s] += v
			}
		}
		return byScore(hits, func(i int) float64 {
			if best == 0 {
				return hits[i].Match
			}
			return hits[i].Match + lambda*share[hits[i].Tool.Server()]/best
		})
	}
}

// feedback is pseudo-relevance feedback: the e terms of the first m
// hits' names and titles (descriptions too with desc) that the query
// lacks, weighted by the hits' Match and their idf, score a hit's share
// of them, added at beta.
func feedback(m, e int, beta float64, desc bool) reranker {
	return func(x *Index, text string, hits []Hit) []string {
		n := float32(len(x.byName))
		query := map[int32]bool{}
		ids, _ := queryConcepts(x, text)
		for _, terms := range ids {
			for _, t := range terms {
				query[t] = true
			}
		}
		weight := map[int32]float64{}
		for i := 0; i < m && i < len(hits); i++ {
			d := &x.docs[x.byName[hits[i].Qualified]]
			for _, dt := range d.terms {
				tf := x.postings[dt.term][dt.pos].tf
				if query[dt.term] || tf[fieldName] == 0 && tf[fieldTitle] == 0 && (!desc || tf[fieldDesc] == 0) {
					continue
				}
				weight[dt.term] += hits[i].Match * float64(idf(n, float32(len(x.postings[dt.term]))))
			}
		}
		terms := make([]int32, 0, len(weight))
		for t := range weight {
			terms = append(terms, t)
		}
		slices.SortFunc(terms, func(a, b int32) int {
			if weight[a] != weight[b] {
				if weight[a] > weight[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		terms = terms[:min(e, len(terms))]
		norm := 0.0
		for _, t := range terms {
			norm += weight[t]
		}
		return byScore(hits, func(i int) float64 {
			d := &x.docs[x.byName[hits[i].Qualified]]
			add := 0.0
			for _, t := range terms {
				if holds(d, t) {
					add += weight[t]
				}
			}
			if norm > 0 {
				add /= norm
			}
			return hits[i].Match + beta*add
		})
	}
}

// TestTuneThird prints the variants the third pass measured that need
// no other table: the enum values read from the parameters, the
// lexicon's cuts, and rerankings of the hits that were left out
// (coordination, the server's words, pseudo-relevance feedback); with
// TOOLSEARCH_TUNE=weights also the field weights and BM25's k1 and b
// searched again. It reads no held-out query.
//
//	TOOLSEARCH_TUNE=1 go test -run 'TestTuneThird$' -v ./toolsearch/
func TestTuneThird(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	row := func(name string, q quality) { t.Logf("%-34s %s", name, q) }
	row("default", b.eval(nil, nil))
	for _, m := range []int{0, 8, 16, 1 << 20} {
		row(fmt.Sprintf("enums of %d values at most", m), b.eval(func(x *Index) { x.maxEnum = m }, nil))
	}
	for _, df := range []float32{0, 0.02, 0.05} {
		for _, keep := range []int{3, 5, 8} {
			row(fmt.Sprintf("related max df %.2f, best %d", df, keep), b.eval(func(x *Index) { x.relatedMaxDF, x.relatedMax = df, keep }, nil))
		}
	}
	for _, g := range []float64{0.25, 0.5, 1} {
		row(fmt.Sprintf("coordination %.2f", g), b.eval(nil, coordination(g, false)))
		row(fmt.Sprintf("coordination %.2f, by idf", g), b.eval(nil, coordination(g, true)))
	}
	for _, k := range []float64{0.05, 1} {
		for _, l := range []float64{0.1, 0.3} {
			row(fmt.Sprintf("server evidence k %.2f, %.1f", k, l), b.eval(nil, serverEvidence(l, k)))
		}
	}
	for _, m := range []int{1, 3} {
		for _, beta := range []float64{0.05, 0.1} {
			row(fmt.Sprintf("feedback from %d, 20 terms, %.2f", m, beta), b.eval(nil, feedback(m, 20, beta, true)))
		}
	}
	if os.Getenv("TOOLSEARCH_TUNE") != "weights" {
		return
	}
	type result struct {
		desc string
		q    quality
	}
	var results []result
	for _, name := range []float64{1.5, 2, 3} {
		for _, title := range []float64{1, 2} {
			for _, desc := range []float64{0.3, 0.5, 1} {
				for _, params := range []float64{0.15, 0.3, 0.6} {
					for _, server := range []float64{1.5, 3} {
						for _, k1 := range []float64{0.5, 0.8, 1.2} {
							for _, bb := range []float64{0.5, 0.75, 0.9} {
								w := Weights{Name: name, Server: server, Title: title, Description: desc, Params: params, ParamDescriptions: params / 2}
								q := b.eval(func(x *Index) { x.weights = w.array(); x.k1, x.b = float32(k1), float32(bb) }, nil)
								results = append(results, result{fmt.Sprintf("%+v k1=%.1f b=%.2f", w, k1, bb), q})
							}
						}
					}
				}
			}
		}
	}
	sort.SliceStable(results, func(i, j int) bool {
		return results[i].q[0][1]+results[i].q[0][2] > results[j].q[0][1]+results[j].q[0][2]
	})
	for _, r := range results[:10] {
		t.Logf("%s | %s", r.q, r.desc)
	}
}

// TestTuneGroupsThird prints what each synonym group brings (recall@5 +
// MRR lost without it) on users.json's tuning half and on its other half
// apart, on the project's queries and on MetaTool.
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneGroupsThird -v ./toolsearch/
func TestTuneGroupsThird(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	all := b.eval(nil, nil)
	row := func(name string, q quality) {
		var d [4]float64
		for i := range d {
			d[i] = all[i][1] + all[i][2] - q[i][1] - q[i][2]
		}
		t.Logf("%-60s tuning %+.3f check %+.3f project %+.3f metatool %+.3f", name, d[0], d[1], d[2], d[3])
	}
	for i, g := range DefaultVocabulary().Synonyms() {
		voc := DefaultVocabulary()
		voc.groups = slices.Delete(voc.groups, i, i+1)
		row(strings.Join(g, " "), b.eval(nil, nil, WithVocabulary(voc)))
	}
	voc := DefaultVocabulary()
	voc.groups = nil
	row("every group", b.eval(nil, nil, WithVocabulary(voc)))
}

// TestTuneLexiconTables measures lexicon tables that
// internal/testkit/wordnet wrote with other settings, given as
// TOOLSEARCH_LEXICONS (files, comma-separated), against the committed one.
//
//	go run ./internal/testkit/wordnet -min-share 0.1 -out /tmp/lex-0.1.txt.gz
//	TOOLSEARCH_TUNE=1 TOOLSEARCH_LEXICONS=/tmp/lex-0.1.txt.gz go test -run TestTuneLexiconTables -v ./toolsearch/
func TestTuneLexiconTables(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" || os.Getenv("TOOLSEARCH_LEXICONS") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 TOOLSEARCH_LEXICONS=table.txt.gz,... measures tables written by go run ./internal/testkit/wordnet (npm ci --prefix internal/testkit/wordnet/npm --ignore-scripts first)")
	}
	b := newThird(t)
	t.Logf("%-28s %s", "committed", b.eval(nil, nil))
	saved := lexiconTable
	defer func() { lexiconTable = saved }()
	for _, path := range strings.Split(os.Getenv("TOOLSEARCH_LEXICONS"), ",") {
		table, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lexiconTable = table
		voc := DefaultVocabulary().compile()
		voc.lexicon = compileLexicon()
		t.Logf("%-28s %s", path, b.eval(func(x *Index) { x.voc = voc }, nil))
	}
}

// signals are what an abstention rule may read of one query's search.
type signals struct {
	match float64 // the best hit's Match
	seen  float64 // the share of the query's words (not values) some tool holds as the word itself
	right bool    // a right tool is among the first 5 (for a labelled query)
}

func signalsOf(x *Index, q toolcorpus.Query) signals {
	hits, _ := x.Search(Query{Text: q.Text, K: 5})
	var s signals
	if len(hits) > 0 {
		s.match = hits[0].Match
	}
	s.right = slices.ContainsFunc(hits, func(h Hit) bool { return q.Right(h.Qualified) })
	terms := x.voc.queryTerms(q.Text, x.synonymWeight, &x.lexWeights, nil, nil)
	words, seen := 0, 0
	for _, qt := range terms {
		if qt.synonym || qt.arg || qt.phrase {
			continue
		}
		words++
		if _, ok := x.termID[qt.term]; ok {
			seen++
		}
	}
	if words > 0 {
		s.seen = float64(seen) / float64(words)
	}
	return s
}

// TestTuneAbstentionThird compares abstention rules: Match under a
// threshold (the index's rule), or that or the share of the query's
// words some tool holds under a second threshold. For each rule and
// threshold whose recall@5 drops by 0.02 at most on users.json (both
// halves), it prints how many no-answer queries abstain there, and what
// the same rule does on each half and on MetaTool. It reads no held-out
// query.
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneAbstentionThird -v ./toolsearch/
func TestTuneAbstentionThird(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	x, m := b.indexes(nil)
	noAnswer, err := toolcorpus.NoAnswer()
	if err != nil {
		t.Fatal(err)
	}
	var sets [3][2][]signals // tuning, check, metatool; labelled, no answer
	for _, q := range b.users {
		sets[0][0] = append(sets[0][0], signalsOf(x, q))
	}
	for _, q := range b.check {
		sets[1][0] = append(sets[1][0], signalsOf(x, q))
	}
	for _, q := range noAnswer {
		h := 0
		if toolcorpus.HalfOf(q) == toolcorpus.HeldOut {
			h = 1
		}
		sets[h][1] = append(sets[h][1], signalsOf(x, toolcorpus.Query{Text: q}))
	}
	for _, q := range b.mtQueries {
		sets[2][0] = append(sets[2][0], signalsOf(m, q))
	}
	for _, q := range b.mtNone {
		sets[2][1] = append(sets[2][1], signalsOf(m, toolcorpus.Query{Text: q}))
	}
	measure := func(set [2][]signals, weak func(signals) bool) (abstained int, drop float64, out string) {
		lost := 0
		for _, s := range set[0] {
			if s.right && weak(s) {
				lost++
			}
		}
		for _, s := range set[1] {
			if weak(s) {
				abstained++
			}
		}
		drop = float64(lost) / float64(len(set[0]))
		return abstained, drop, fmt.Sprintf("%2d/%-3d drop %.3f", abstained, len(set[1]), drop)
	}
	type rule struct {
		name string
		weak func(signals) bool
	}
	var rules []rule
	for tau := 0.03; tau < 0.1; tau += 0.005 {
		rules = append(rules, rule{fmt.Sprintf("match < %.3f", tau), func(s signals) bool { return s.match < tau }})
		for _, u := range []float64{0.25, 0.34, 0.5} {
			rules = append(rules, rule{fmt.Sprintf("match < %.3f or seen < %.2f", tau, u), func(s signals) bool { return s.match < tau || s.seen < u }})
		}
	}
	both := [2][]signals{slices.Concat(sets[0][0], sets[1][0]), slices.Concat(sets[0][1], sets[1][1])}
	for _, r := range rules {
		_, drop, all := measure(both, r.weak)
		if drop > 0.02 {
			continue
		}
		_, _, tuning := measure(sets[0], r.weak)
		_, _, check := measure(sets[1], r.weak)
		_, _, mt := measure(sets[2], r.weak)
		t.Logf("%-32s both halves %s | tuning %s | check %s | metatool %s", r.name, all, tuning, check, mt)
	}
}
