package toolsearch

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// tuneSets are what tuning may read: the project's first queries and the
// tuning half of the user queries and of the no-answer queries. Never the
// held-out half.
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

// TestTuneAbstention calibrates the abstention rule on the tuning half:
// for each weight of unseen words and each MinMatch it prints how many
// no-answer queries abstain and how much recall@5 drops, and keeps the
// pairs that drop it by 0.02 at most. It reads no held-out query.
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneAbstention -v ./toolsearch/
func TestTuneAbstention(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	_, users, none := tuneSets(t)
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

// quality is recall@1, recall@5 and MRR on the sets the third pass tunes
// on: users.json's tuning half (chosen by), its other half (checked on),
// the project's queries and MetaTool. It reads no held-out query.
type quality [4][3]float64

func scoreSet(x *Index, queries []toolcorpus.Query) (r [3]float64) {
	for _, q := range queries {
		hits, _ := x.Search(Query{Text: q.Text, K: 10})
		rank := slices.IndexFunc(hits, func(h Hit) bool { return q.Right(h.Qualified) }) + 1
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

func (b *third) eval(voc *Vocabulary, set func(*Index)) (q quality) {
	opts := []Option{}
	if voc != nil {
		opts = append(opts, WithVocabulary(voc))
	}
	x := New(opts...)
	if set != nil {
		set(x)
	}
	x.Sync(b.v)
	q[0], q[1], q[2] = scoreSet(x, b.users), scoreSet(x, b.check), scoreSet(x, b.project)
	m := New(opts...)
	if set != nil {
		set(m)
	}
	if err := m.Put(toolcorpus.MetaToolServer, b.mtTools...); err != nil {
		panic(err)
	}
	q[3] = scoreSet(m, b.mtQueries)
	return q
}

func (q quality) String() string {
	return fmt.Sprintf("tuning %.3f %.3f %.3f | check %.3f %.3f %.3f | project %.3f %.3f %.3f | metatool %.3f %.3f %.3f",
		q[0][0], q[0][1], q[0][2], q[1][0], q[1][1], q[1][2], q[2][0], q[2][1], q[2][2], q[3][0], q[3][1], q[3][2])
}

// TestTuneNeighbours prints the quality of the index with the embeddings'
// neighbours at several weights, similarity floors and counts.
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneNeighbours -v ./toolsearch/
func TestTuneNeighbours(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	path := os.Getenv("TOOLSEARCH_NEIGHBOURS")
	table, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no table at TOOLSEARCH_NEIGHBOURS=%q: npm ci --prefix internal/testkit/embeddings/npm --ignore-scripts --no-audit --no-fund && go run ./internal/testkit/embeddings -k 20 -min-sim 0.45 -out /tmp/nb.txt.gz", path)
	}
	nb := compileNeighbours(table)
	b := newThird(t)
	with := func(x *Index) {
		voc := *x.voc
		voc.neighbours = nb
		x.voc = &voc
	}
	t.Logf("%-36s %s", "default", b.eval(nil, nil))
	// Without the lexicon's cut by document frequency (a neighbour more
	// than 1% of the tools hold counts too), with the lexicon off.
	for _, w := range []float32{0.3, 0.5} {
		for _, ms := range []float32{0.5, 0.6} {
			nw := nbWeights{weight: w, minSim: ms, max: 10}
			t.Logf("w %.1f min %.2f k 10, no df cut %-8s %s", w, ms, "", b.eval(nil, func(x *Index) { with(x); x.nbWeights, x.nearMax, x.relatedMaxDF = nw, 3, 0 }))
			t.Logf("w %.1f min %.2f k 10, no lexicon %-8s %s", w, ms, "", b.eval(nil, func(x *Index) { with(x); x.nbWeights, x.nearMax, x.lexWeights = nw, 3, lexWeights{} }))
		}
	}
	t.Logf("%-36s %s", "no lexicon", b.eval(nil, func(x *Index) { x.lexWeights = lexWeights{} }))
	if os.Getenv("TOOLSEARCH_TUNE") != "all" {
		return
	}
	for _, w := range []float32{0.3, 0.5, 0.7} {
		for _, ms := range []float32{0.5, 0.6, 0.7} {
			for _, k := range []int{3, 10} {
				for _, keep := range []int{0, 3} {
					nw := nbWeights{weight: w, minSim: ms, max: k}
					t.Logf("w %.1f min %.2f k %2d keep %d %-10s %s", w, ms, k, keep, "", b.eval(nil, func(x *Index) { with(x); x.nbWeights, x.nearMax = nw, keep }))
				}
			}
		}
	}
}

// TestTuneThird prints the variants of the third pass that need no
// table: the lexicon's cuts, ...
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneThird -v ./toolsearch/
func TestTuneThird(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	t.Logf("%-36s %s", "default", b.eval(nil, nil))
	for _, df := range []float32{0, 0.02, 0.05, 0.1} {
		for _, keep := range []int{3, 5, 8} {
			t.Logf("related max df %.2f keep %d %-10s %s", df, keep, "", b.eval(nil, func(x *Index) { x.relatedMaxDF, x.relatedMax = df, keep }))
		}
	}
}

// TestTuneStem measures the stemmer's variants.
func TestTuneStem(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	for _, v := range []int{0, 1} {
		stemVariant = v
		lx := compileLexicon()
		voc := DefaultVocabulary().compile()
		voc.lexicon = lx
		t.Logf("stem variant %d %-20s %s", v, "", b.eval(nil, func(x *Index) { x.voc = voc }))
	}
	stemVariant = 0
}

func TestTuneJoin(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	for _, w := range []float32{0, 0.5, 0.8, 1} {
		joinWeight = w
		t.Logf("join %.1f %-20s %s", w, "", b.eval(nil, nil))
	}
	joinWeight = 0
}

// TestTuneLexiconTables measures lexicon tables written with other
// settings of internal/testkit/wordnet, given as TOOLSEARCH_LEXICONS (a
// comma-separated list of files).
//
//	go run ./internal/testkit/wordnet -min-share 0.1 -out /tmp/lex-0.1.txt.gz
//	TOOLSEARCH_TUNE=1 TOOLSEARCH_LEXICONS=/tmp/lex-0.1.txt.gz go test -run TestTuneLexiconTables -v ./toolsearch/
func TestTuneLexiconTables(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" || os.Getenv("TOOLSEARCH_LEXICONS") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 TOOLSEARCH_LEXICONS=table.txt.gz,... runs the measure")
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
		lx := compileLexicon()
		voc := DefaultVocabulary().compile()
		voc.lexicon = lx
		t.Logf("%-28s %s", path, b.eval(nil, func(x *Index) { x.voc = voc }))
	}
}

// TestTuneWeightsThird searches the field weights, BM25's k1 and b and
// the synonym weight again, choosing on users.json's tuning half and
// printing its other half, the project's queries and MetaTool beside.
//
//	TOOLSEARCH_TUNE=1 go test -run TestTuneWeightsThird -v ./toolsearch/
func TestTuneWeightsThird(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
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
								q := b.eval(nil, func(x *Index) { x.weights = w.array(); x.k1, x.b = float32(k1), float32(bb) })
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
	for _, r := range results[:15] {
		t.Logf("%s | %s", r.q, r.desc)
	}
}

// TestTuneGroupsThird prints what each synonym group and each
// abbreviation brings (recall@5 + MRR) on users.json's tuning half and on
// its other half apart, and on MetaTool.
func TestTuneGroupsThird(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	b := newThird(t)
	all := b.eval(nil, nil)
	gain := func(q quality, i int) float64 { return all[i][1] + all[i][2] - q[i][1] - q[i][2] }
	for i, g := range DefaultVocabulary().Synonyms() {
		voc := DefaultVocabulary()
		voc.groups = slices.Delete(slices.Clone(voc.groups), i, i+1)
		q := b.eval(voc, nil)
		t.Logf("group %-60v tuning %+.3f check %+.3f project %+.3f metatool %+.3f", g, gain(q, 0), gain(q, 1), gain(q, 2), gain(q, 3))
	}
	voc := DefaultVocabulary()
	voc.groups = nil
	q := b.eval(voc, nil)
	t.Logf("all groups %-55s tuning %+.3f check %+.3f project %+.3f metatool %+.3f", "", gain(q, 0), gain(q, 1), gain(q, 2), gain(q, 3))
}
