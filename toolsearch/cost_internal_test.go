package toolsearch

import (
	"os"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// TestSearchCost prints the postings a search walks on average over the
// project's queries at about 10,000 tools, for variants of the lexicon:
// a measure of a search's cost that a loaded machine does not blur.
func TestSearchCost(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 prints the cost")
	}
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	queries, err := toolcorpus.Queries()
	if err != nil {
		t.Fatal(err)
	}
	v := toolcorpus.View(toolcorpus.Publisher(servers, 26))
	for _, c := range []struct {
		name string
		set  func(*Index)
	}{
		{"lexicon off", func(x *Index) { x.lexWeights = lexWeights{} }},
		{"no cut", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0, 0 }},
		{"df 0.05", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0.05, 0 }},
		{"df 0.05 best 5", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0.05, 5 }},
		{"df 0.02 best 5", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0.02, 5 }},
		{"df 0.02 best 3", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0.02, 3 }},
		{"df 0.01 best 5", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0.01, 5 }},
		{"df 0.01 best 3", func(x *Index) { x.relatedMaxDF, x.relatedMax = 0.01, 3 }},
	} {
		x := New()
		c.set(x)
		x.Sync(v)
		s := scratchPool.Get().(*scratch)
		total, touched := 0, 0
		for _, q := range queries {
			s.visited = 0
			scratchPool.Put(s)
			x.mu.RLock()
			x.rankLocked(q.Text, filter{}, 5)
			x.mu.RUnlock()
			s = scratchPool.Get().(*scratch)
			total += s.visited
			touched += len(s.touched)
		}
		t.Logf("%-16s %d tools: %.0f postings, %.0f tools scored a search", c.name, x.Len(), float64(total)/float64(len(queries)), float64(touched)/float64(len(queries)))
	}
}

// BenchmarkQueryTerms is the reading of a query into its terms, with the
// lexicon's relations and without.
func BenchmarkQueryTerms(b *testing.B) {
	queries, err := toolcorpus.Queries()
	if err != nil {
		b.Fatal(err)
	}
	for _, lex := range []bool{true, false} {
		name := "lexicon=on"
		lw := defaultLexWeights
		if !lex {
			name, lw = "lexicon=off", lexWeights{}
		}
		b.Run(name, func(b *testing.B) {
			voc := defaultVocab()
			var dst []queryTerm
			seen := map[string]int{}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				dst = voc.queryTerms(queries[i%len(queries)].Text, SynonymWeight, &lw, dst, seen)
			}
		})
	}
}
