package toolsearch

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	_ "embed"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// lexiconTable is the table internal/testkit/wordnet writes from WordNet:
// irregular forms and, for each common English word, its synonyms,
// derived forms, attributes, pertainyms and hypernyms by sense. Its
// license is WordNet's (LICENSE.wordnet).
//
//go:embed lexicon.txt.gz
var lexiconTable []byte

// lexKind is a kind of relation between two words in the lexicon.
type lexKind uint8

const (
	lexSynonym      lexKind = iota // the words of one synset
	lexDerived                     // derivationally related forms: delete, deletion
	lexAttribute                   // an adjective and the noun it is a value of: high, height
	lexPertainym                   // an adjective and the noun it pertains to: musical, music
	lexHypernym                    // a synset's words and those of the one above it: elevation, height
	lexVerbHypernym                // a verb and the more general one: delete, remove
	numLexKinds
)

// lexRanks is how many senses of a word the table gives relations for.
const lexRanks = 2

// lexKinds are the letters the table names the kinds by.
var lexKinds = map[byte]lexKind{'s': lexSynonym, 'd': lexDerived, 'a': lexAttribute, 'p': lexPertainym, 'h': lexHypernym, 'g': lexVerbHypernym}

// lexRel is one relation of a term: the related term (an index into the
// lexicon's terms), how it is related and through which sense (1 the
// word's most frequent) of the word.
type lexRel struct {
	term int32
	kind lexKind
	rank uint8
}

// lexicon is the table read for an index: relations between terms (words
// as tokens makes them), so a query word finds a tool's word for the same
// thing. The relations of one term or compound are a span of rels, by
// related term, so that the whole lexicon is a few large allocations.
type lexicon struct {
	terms   []string        // by id
	rels    []lexRel        // every term's relations, one span each
	related map[string]span // term -> its relations
	// compounds are the relations of phrases of two or three words
	// ("throw away", "get rid of"), by their terms less stop words.
	compounds map[compoundKey]span
}

// span is a range of a lexicon's rels.
type span struct{ start, end int32 }

// of returns the relations of a span.
func (lx *lexicon) of(s span) []lexRel { return lx.rels[s.start:s.end] }

// compoundKey is the terms of a compound, the third empty for two.
type compoundKey [3]string

// lexWeights say how much a related term counts, against 1 for the query's
// word, by kind and sense rank; zero leaves the relation out.
type lexWeights [numLexKinds][lexRanks]float32

// defaultLexWeights are round numbers, nearer kinds and first senses
// higher: TestTuneLexicon moved each kind's weight between 0 and 0.6 on
// the tuning half, the project's queries and MetaTool, and no move changed
// recall@5 by more than three queries of the tuning half.
var defaultLexWeights = lexWeights{
	lexSynonym:      {0.4, 0.25},
	lexDerived:      {0.5, 0.3},
	lexAttribute:    {0.5, 0.3},
	lexPertainym:    {0.5, 0.3},
	lexHypernym:     {0.3, 0.2},
	lexVerbHypernym: {0.3, 0.2},
}

// weight is what a relation counts, by its kind and its best sense.
func (w *lexWeights) weight(r lexRel) float32 { return w[r.kind][r.rank-1] }

// lexiconSections splits the table into its forms and relations.
func lexiconSections() (forms, relations []byte) {
	z, err := gzip.NewReader(bytes.NewReader(lexiconTable))
	if err != nil {
		panic("toolsearch: lexicon.txt.gz: " + err.Error())
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(z); err != nil {
		panic("toolsearch: lexicon.txt.gz: " + err.Error())
	}
	all := b.Bytes()
	_, rest, _ := bytes.Cut(all, []byte("= forms\n"))
	forms, relations, _ = bytes.Cut(rest, []byte("= relations\n"))
	return forms, relations
}

// lexiconForms maps irregular forms to their lemmas ("forgot" to
// "forget"), from WordNet's exception lists.
var lexiconForms = sync.OnceValue(func() map[string]string {
	forms, _ := lexiconSections()
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(forms))
	for sc.Scan() {
		form, lemma, _ := strings.Cut(sc.Text(), " ")
		m[form] = lemma
	}
	return m
})

// builtinLexicon is the table compiled: each word's relations become the
// relations of its term, the words related stemmed too.
var builtinLexicon = sync.OnceValue(compileLexicon)

// compileLexicon reads the table's relations: each word's become its
// term's, the words related stemmed too, each (term, kind) once by its
// best sense.
func compileLexicon() *lexicon {
	_, relations := lexiconSections()
	lx := &lexicon{related: map[string]span{}, compounds: map[compoundKey]span{}}
	ids := map[string]int32{}
	stems := map[string]int32{} // word -> id of its stem, memoized
	id := func(w string) int32 {
		if i, ok := stems[w]; ok {
			return i
		}
		t := stem(w)
		i, ok := ids[t]
		if !ok {
			i = int32(len(lx.terms))
			ids[t] = i
			lx.terms = append(lx.terms, t)
		}
		stems[w] = i
		return i
	}
	// A source is a term (its id) or a compound (-1 - its index).
	type entry struct {
		source int32
		rel    lexRel
	}
	// About 120,000 relations: one allocation, not twenty.
	entries := make([]entry, 0, 1<<17)
	var compounds []compoundKey
	stop := DefaultVocabulary().stop
	sc := bufio.NewScanner(bytes.NewReader(relations))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		var source int32
		if strings.Contains(fields[0], "_") {
			var ck compoundKey
			n := 0
			for _, part := range strings.Split(fields[0], "_") {
				if stop[part] {
					continue
				}
				if n < len(ck) {
					ck[n] = lx.terms[id(part)]
				}
				n++
			}
			if n < 2 || n > len(ck) {
				continue
			}
			source = -1 - int32(len(compounds))
			compounds = append(compounds, ck)
		} else {
			source = id(fields[0])
		}
		for _, sense := range fields[1:] {
			// "pos rank kind:word,word kind:word..."
			parts := strings.Fields(sense)
			rank, err := strconv.Atoi(parts[1])
			if err != nil || rank < 1 || rank > lexRanks {
				continue
			}
			for _, rel := range parts[2:] {
				kind, ok := lexKinds[rel[0]]
				if !ok || len(rel) < 3 {
					continue
				}
				for _, w := range strings.Split(rel[2:], ",") {
					if r := id(w); r != source {
						entries = append(entries, entry{source, lexRel{term: r, kind: kind, rank: uint8(rank)}})
					}
				}
			}
		}
	}
	// By source, then related term, kind and rank: the first of each
	// (source, term, kind) is its best sense.
	slices.SortFunc(entries, func(a, b entry) int {
		if a.source != b.source {
			return cmp.Compare(a.source, b.source)
		}
		if c := strings.Compare(lx.terms[a.rel.term], lx.terms[b.rel.term]); c != 0 {
			return c
		}
		if a.rel.kind != b.rel.kind {
			return cmp.Compare(a.rel.kind, b.rel.kind)
		}
		return cmp.Compare(a.rel.rank, b.rel.rank)
	})
	entries = slices.CompactFunc(entries, func(a, b entry) bool {
		return a.source == b.source && a.rel.term == b.rel.term && a.rel.kind == b.rel.kind
	})
	lx.rels = make([]lexRel, len(entries))
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].source == entries[i].source {
			lx.rels[j] = entries[j].rel
			j++
		}
		sp := span{int32(i), int32(j)}
		if src := entries[i].source; src >= 0 {
			lx.related[lx.terms[src]] = sp
		} else {
			lx.compounds[compounds[-1-src]] = sp
		}
		i = j
	}
	return lx
}
