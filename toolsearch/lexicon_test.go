package toolsearch

import (
	"runtime"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
)

// The lexicon reads irregular forms as their words, unless the form is a
// word of its own used more than its lemma, and relates words by
// synonymy, derivation, attribute and hypernymy, as WordNet does.
func TestLexicon(t *testing.T) {
	for form, want := range map[string]string{
		"forgot": "forget", "children": "child", "wrote": "write", "went": "go", "ran": "run",
	} {
		if got := lexiconForms()[form]; got != want {
			t.Errorf("form %q: %q, want %q", form, got, want)
		}
	}
	for _, own := range []string{"data", "news", "file"} {
		if l, ok := lexiconForms()[own]; ok {
			t.Errorf("form %q read as %q: it is a word of its own", own, l)
		}
	}
	if stem("forgot") != stem("forget") || stem("children") != stem("child") {
		t.Errorf("stem: forgot %q, forget %q, children %q, child %q", stem("forgot"), stem("forget"), stem("children"), stem("child"))
	}
	related := func(a, b string) (lexRel, bool) {
		lx := builtinLexicon()
		rels := lx.of(lx.related[stem(a)])
		i := slices.IndexFunc(rels, func(r lexRel) bool { return lx.terms[r.term] == stem(b) })
		if i < 0 {
			return lexRel{}, false
		}
		return rels[i], true
	}
	for _, c := range []struct {
		a, b string
		kind lexKind
	}{
		{"erase", "delete", lexVerbHypernym}, // its second sense is a kind of deleting
		{"purchase", "buy", lexSynonym},
		{"tall", "height", lexAttribute},
		{"deep", "depth", lexAttribute},
		{"elevate", "elevation", lexDerived}, // two stems ("elevat", "elev") that WordNet joins
		{"sedan", "car", lexHypernym},
		{"histogram", "bar", lexHypernym}, // compounds are dropped: "bar_chart" is no word
		{"buy", "acquire", lexVerbHypernym},
	} {
		r, ok := related(c.a, c.b)
		if c.a == "histogram" {
			if ok {
				t.Errorf("%s relates to %s (%v): want no relation", c.a, c.b, r)
			}
			continue
		}
		if !ok || r.kind != c.kind {
			t.Errorf("%s -> %s: %+v (found %v), want kind %d", c.a, c.b, r, ok, c.kind)
		}
	}
}

// A query finds a tool through the lexicon alone: no synonym group of the
// vocabulary links the words, only WordNet does; with the lexicon off,
// nothing is found.
func TestLexiconSearch(t *testing.T) {
	tools := []mcp.Tool{
		mcp.NewTool("get_height", mcp.WithDescription("Get the height of a building")),
		mcp.NewTool("get_depth", mcp.WithDescription("Get the depth of a lake")),
		mcp.NewTool("purchase_item", mcp.WithDescription("Purchase an item from the store")),
	}
	for _, on := range []bool{true, false} {
		v := &Vocabulary{}
		if err := v.AddStopWords(DefaultVocabulary().StopWords()...); err != nil {
			t.Fatal(err)
		}
		v.SetLexicon(on)
		if v.Lexicon() != on {
			t.Fatalf("Lexicon() = %v after SetLexicon(%v)", v.Lexicon(), on)
		}
		x := New(WithVocabulary(v))
		if err := x.Put("s", tools...); err != nil {
			t.Fatal(err)
		}
		for q, want := range map[string]string{
			"how tall is it":        "s__get_height",
			"how deep is the water": "s__get_depth",
			"buy me one of those":   "s__purchase_item",
		} {
			hits := mustSearch(t, x, Query{Text: q, K: 1})
			switch {
			case on && (len(hits) != 1 || hits[0].Qualified != want):
				t.Errorf("lexicon on: %q: %v, want %s", q, names(hits), want)
			case !on && len(hits) != 0:
				t.Errorf("lexicon off: %q: %v, want nothing", q, names(hits))
			}
		}
	}
	if !DefaultVocabulary().Lexicon() {
		t.Error("DefaultVocabulary has the lexicon off")
	}
}

// A phrase of two or three words finds what the lexicon relates it to,
// by its first word: "throw away" discards, "get rid of" removes; its
// words count less by themselves. The words apart do not: "throw" and
// "away" alone relate to neither.
func TestLexiconCompounds(t *testing.T) {
	v := &Vocabulary{}
	if err := v.AddStopWords(DefaultVocabulary().StopWords()...); err != nil {
		t.Fatal(err)
	}
	v.SetLexicon(true)
	x := New(WithVocabulary(v))
	// get_value holds "get" of "get rid of": the phrase's words mean the
	// phrase, so it must not win.
	if err := x.Put("s", mcp.NewTool("discard", mcp.WithDescription("Discard it")),
		mcp.NewTool("eliminate", mcp.WithDescription("Eliminate it")),
		mcp.NewTool("get_value", mcp.WithDescription("Get a value"))); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"throw it away":     "s__discard",
		"get rid of it now": "s__eliminate",
	} {
		if hits := mustSearch(t, x, Query{Text: q, K: 1}); len(hits) != 1 || hits[0].Qualified != want {
			t.Errorf("%q: %v, want %s", q, names(hits), want)
		}
	}
	// The same words apart or reversed are no phrase of the lexicon.
	for _, q := range []string{"away, throw it", "rid it of"} {
		if hits := mustSearch(t, x, Query{Text: q, K: -1}); len(hits) != 0 {
			t.Errorf("%q: %v, want nothing", q, names(hits))
		}
	}
}

// BenchmarkLexicon is the lexicon's compilation, done once per process at
// the first index with it; heap-bytes is what the compiled lexicon keeps.
func BenchmarkLexicon(b *testing.B) {
	lexiconForms()
	var keep *lexicon
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		keep = compileLexicon()
	}
	cputime.Report(b, cpu)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-bytes")
	runtime.KeepAlive(keep)
}
