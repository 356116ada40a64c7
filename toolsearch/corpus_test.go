package toolsearch_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

func corpus(t testing.TB) ([]toolcorpus.Server, []toolcorpus.Query) {
	t.Helper()
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	queries, err := toolcorpus.Queries()
	if err != nil {
		t.Fatal(err)
	}
	return servers, queries
}

// The corpus is what the issue asks for: at least 20 real servers, 300
// tools and 150 labelled queries, each naming a tool that exists.
func TestCorpusSize(t *testing.T) {
	servers, queries := corpus(t)
	v := toolcorpus.View(toolcorpus.Publisher(servers, 1))
	if len(servers) < 20 || v.NumTools() < 300 || len(queries) < 150 {
		t.Fatalf("%d servers, %d tools, %d queries", len(servers), v.NumTools(), len(queries))
	}
	for _, q := range queries {
		for _, w := range q.Want {
			if _, ok := v.Tool(w); !ok {
				t.Errorf("query %q wants %s, which the corpus lacks", q.Text, w)
			}
		}
	}
}

// quality runs every query and returns recall@1, recall@5 and the mean
// reciprocal rank (of the first 10 hits), and the queries missed at 5.
func quality(t testing.TB, x *toolsearch.Index, queries []toolcorpus.Query) (r1, r5, mrr float64, missed []string) {
	for _, q := range queries {
		hits, err := x.Search(toolsearch.Query{Text: q.Text, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		rank := slices.IndexFunc(hits, func(h toolsearch.Hit) bool { return q.Right(h.Qualified) }) + 1
		switch {
		case rank == 0:
		case rank == 1:
			r1++
			fallthrough
		case rank <= 5:
			r5++
		}
		if rank > 0 {
			mrr += 1 / float64(rank)
		}
		if rank == 0 || rank > 5 {
			var got []string
			for _, h := range hits[:min(3, len(hits))] {
				got = append(got, h.Qualified)
			}
			missed = append(missed, fmt.Sprintf("%q: want %s (rank %d), got %v", q.Text, q.Want, rank, got))
		}
	}
	n := float64(len(queries))
	return r1 / n, r5 / n, mrr / n, missed
}

// Recall@5 of the labelled queries is at least 0.9 (the target).
// TOOLSEARCH_VERBOSE=1 lists the queries missed.
func TestRecall(t *testing.T) {
	servers, queries := corpus(t)
	x := toolsearch.New()
	x.Sync(toolcorpus.View(toolcorpus.Publisher(servers, 1)))
	r1, r5, mrr, missed := quality(t, x, queries)
	t.Logf("%d queries over %d tools: recall@1 %.3f, recall@5 %.3f, MRR %.3f", len(queries), x.Len(), r1, r5, mrr)
	if os.Getenv("TOOLSEARCH_VERBOSE") != "" {
		for _, m := range missed {
			t.Log(m)
		}
	}
	if r5 < 0.9 {
		t.Errorf("recall@5 = %.3f, want >= 0.9; missed:\n%v", r5, missed)
	}
}

// The corpus replicated across servers ranks the copies of a tool
// together: copies differ only in their server's name, so a query that
// finds a tool first finds its copies next.
func TestRecallReplicated(t *testing.T) {
	servers, queries := corpus(t)
	const copies = 4
	v := toolcorpus.View(toolcorpus.Publisher(servers, copies))
	x := toolsearch.New()
	x.Sync(v)
	for _, q := range queries[:20] {
		hits, _ := x.Search(toolsearch.Query{Text: q.Text, K: copies})
		if len(hits) != copies {
			t.Fatalf("%q: %d hits", q.Text, len(hits))
		}
		for _, h := range hits {
			if h.Tool.Name() != hits[0].Tool.Name() {
				t.Fatalf("%q: copies apart: %v", q.Text, hits)
			}
		}
	}
}

// The user queries cover every server of the corpus and want only tools
// it has; each half of the split has at least 100 of them, and at least 20
// no-answer queries (the measure of abstention).
func TestCorpusSplit(t *testing.T) {
	servers, _ := corpus(t)
	users, err := toolcorpus.Users()
	if err != nil {
		t.Fatal(err)
	}
	none, err := toolcorpus.NoAnswer()
	if err != nil {
		t.Fatal(err)
	}
	v := toolcorpus.View(toolcorpus.Publisher(servers, 1))
	covered := map[string]bool{}
	seen := map[string]bool{}
	for _, q := range users {
		if seen[q.Text] {
			t.Errorf("query %q twice", q.Text)
		}
		seen[q.Text] = true
		if len(q.Want) == 0 {
			t.Errorf("query %q wants nothing", q.Text)
		}
		for _, w := range q.Want {
			tool, ok := v.Tool(w)
			if !ok {
				t.Errorf("query %q wants %s, which the corpus lacks", q.Text, w)
				continue
			}
			covered[tool.Server()] = true
		}
	}
	for _, s := range servers {
		if !covered[s.Name] {
			t.Errorf("no user query wants a tool of %s", s.Name)
		}
	}
	for _, h := range []toolcorpus.Half{toolcorpus.Tuning, toolcorpus.HeldOut} {
		u, n := toolcorpus.Split(users, h), toolcorpus.SplitTexts(none, h)
		t.Logf("%s: %d user queries, %d no-answer queries", h, len(u), len(n))
		if len(u) < 100 || len(n) < 20 {
			t.Errorf("%s half: %d user queries, %d no-answer queries", h, len(u), len(n))
		}
	}
}

// benchView is the corpus replicated to at least n tools.
func benchView(b *testing.B, n int) (*snapshot.View, []toolcorpus.Query) {
	servers, queries := corpus(b)
	one := toolcorpus.View(toolcorpus.Publisher(servers, 1)).NumTools()
	return toolcorpus.View(toolcorpus.Publisher(servers, (n+one-1)/one)), queries
}

// BenchmarkSearch is one BM25 query, top 5, over the corpus replicated to
// 10,000 tools; the queries cycle through the labelled set. It reports
// the p50 and p99 latency of the queries it ran.
//
// lexicon=off is the same index with the vocabulary's lexicon off, for
// what WordNet's relations cost a search. cpu-ns/op is the process's CPU
// time, steadier than wall time on a shared machine.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{400, 10000} {
		for _, lexicon := range []bool{true, false} {
			name := fmt.Sprintf("tools=%d", n)
			if !lexicon {
				name += "/lexicon=off"
			}
			b.Run(name, func(b *testing.B) {
				v, queries := benchView(b, n)
				voc := toolsearch.DefaultVocabulary()
				voc.SetLexicon(lexicon)
				x := toolsearch.New(toolsearch.WithVocabulary(voc))
				x.Sync(v)
				lat := latencies{}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cputime.Process()
				for i := 0; b.Loop(); i++ {
					lat.time(func() {
						if _, err := x.Search(toolsearch.Query{Text: queries[i%len(queries)].Text}); err != nil {
							b.Fatal(err)
						}
					})
				}
				cputime.Report(b, cpu)
				lat.report(b)
			})
		}
	}
}
