package toolsearch_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// hybridTable measures an embedder on every labelled set: the default
// index, the same index fused with emb through hybrid, and emb's ranking
// alone (a query's vector and no words). model names emb in the table.
func hybridTable(t *testing.T, model string, emb toolsearch.Embedder, hybrid toolsearch.Hybrid) string {
	t.Helper()
	v := corpusView(t)
	names, sets, noAnswer := qualitySets(t)
	hybrid.Embedder = emb
	indexes := []struct {
		name string
		x    *toolsearch.Index
	}{
		{"toolsearch", toolsearch.New()},
		{"+ " + model, toolsearch.New(toolsearch.WithHybrid(hybrid))},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-12s %-16s %5s %9s %9s %6s %11s %9s\n", "index", "queries", "n", "recall@1", "recall@5", "MRR", "abstaining:", "recall@5")
	for _, ix := range indexes {
		ix.x.Sync(v)
		if err := ix.x.Embed(t.Context()); err != nil {
			t.Fatal(err)
		}
		for i, set := range sets {
			m := score(t, ix.x, set)
			m.abstain(t, ix.x, noAnswer[i])
			abst := "-"
			if m.none > 0 {
				abst = fmt.Sprintf("%d/%d", m.noneAbstained, m.none)
			}
			fmt.Fprintf(&table, "%-12s %-16s %5d %9.3f %9.3f %6.3f %11s %9.3f\n", ix.name, names[i], m.n, m.r1, m.r5, m.mrr, abst, m.r5Abstain)
		}
	}
	alone := toolsearch.New(toolsearch.WithHybrid(hybrid))
	alone.Sync(v)
	if err := alone.Embed(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, set := range sets {
		var r1, r5 int
		var rr float64
		for _, q := range set {
			qv, err := emb.Embed(t.Context(), []string{q.Text})
			if err != nil {
				t.Fatal(err)
			}
			hits, err := alone.Search(toolsearch.Query{Vector: qv[0], K: 5})
			if err != nil {
				t.Fatal(err)
			}
			rank := slices.IndexFunc(hits, func(h toolsearch.Hit) bool { return q.Right(h.Qualified) }) + 1
			if rank == 1 {
				r1++
			}
			if rank > 0 {
				r5++
				rr += 1 / float64(rank)
			}
		}
		n := float64(len(set))
		fmt.Fprintf(&table, "%-12s %-16s %5d %9.3f %9.3f %6.3f\n", model+" alone", names[i], len(set), float64(r1)/n, float64(r5)/n, rr/n)
	}
	return table.String()
}

// hybridFromEnv is the fusion at its defaults, or as TOOLSEARCH_RRFK
// and TOOLSEARCH_DEPTH set it.
func hybridFromEnv(t *testing.T) toolsearch.Hybrid {
	t.Helper()
	var h toolsearch.Hybrid
	if s := os.Getenv("TOOLSEARCH_RRFK"); s != "" {
		k, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("TOOLSEARCH_RRFK: %v", err)
		}
		h.RRFK = k
	}
	if s := os.Getenv("TOOLSEARCH_DEPTH"); s != "" {
		d, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("TOOLSEARCH_DEPTH: %v", err)
		}
		h.Depth = d
	}
	return h
}
