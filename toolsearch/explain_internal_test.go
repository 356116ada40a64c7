package toolsearch

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// TestExplain prints, for TOOLSEARCH_EXPLAIN queries of the tuning half
// (those containing the text), the query terms and the right tools' rank.
func TestExplain(t *testing.T) {
	pat := os.Getenv("TOOLSEARCH_EXPLAIN")
	if pat == "" {
		t.Skip()
	}
	b := newThird(t)
	x := New()
	x.Sync(b.v)
	for _, q := range append(b.users, b.project...) {
		if !strings.Contains(q.Text, pat) && pat != "*" {
			continue
		}
		terms := x.voc.queryTerms(q.Text, x.synonymWeight, &x.lexWeights, nil, nil, nil)
		var ts []string
		for _, qt := range terms {
			df := -1
			if tid, ok := x.termID[qt.term]; ok {
				df = len(x.postings[tid])
			}
			ts = append(ts, fmt.Sprintf("%d:%s/%.2f(df%d)%s", qt.concept, qt.term, qt.weight, df, map[bool]string{true: "*", false: ""}[qt.arg]))
		}
		hits, _ := x.Search(Query{Text: q.Text, K: -1})
		rank := 0
		for i, h := range hits {
			if q.Right(h.Qualified) {
				rank = i + 1
				break
			}
		}
		var top []string
		for _, h := range hits[:min(3, len(hits))] {
			top = append(top, fmt.Sprintf("%s %.2f", h.Qualified, h.Match))
		}
		fmt.Printf("%q rank %d want %v\n  terms %s\n  top %v\n", q.Text, rank, q.Want, strings.Join(ts, " "), top)
		if rank > 0 {
			fmt.Printf("  right %.2f\n", hits[rank-1].Match)
		}
	}
	_ = toolcorpus.Tuning
}
