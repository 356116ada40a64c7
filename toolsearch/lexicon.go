package toolsearch

import (
	"bufio"
	"bytes"
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
	lexSimilar                     // similar adjectives
	lexVerbHypernym                // a verb and the more general one: delete, remove
	numLexKinds
)

// lexRanks is how many senses of a word the table gives relations for.
const lexRanks = 3

// lexKinds are the letters the table names the kinds by.
var lexKinds = map[byte]lexKind{'s': lexSynonym, 'd': lexDerived, 'a': lexAttribute, 'p': lexPertainym, 'h': lexHypernym, 'm': lexSimilar, 'g': lexVerbHypernym}

// lexRel is one relation of a term: the related term, how it is related
// and through which sense (1 the word's most frequent) of the word.
type lexRel struct {
	term string
	kind lexKind
	rank uint8
}

// lexicon is the table read for an index: relations between terms (words
// as tokens makes them), so a query word finds a tool's word for the same
// thing.
type lexicon struct {
	related map[string][]lexRel // term -> its relations, by term, best first
	// compounds are the relations of phrases of two or three words
	// ("throw away", "get rid of"), by their terms less stop words.
	compounds map[compoundKey][]lexRel
}

// compoundKey is the terms of a compound, the third empty for two.
type compoundKey [3]string

// lexWeights say how much a related term counts, against 1 for the query's
// word, by kind and sense rank; zero leaves the relation out.
type lexWeights [numLexKinds][lexRanks]float32

// defaultLexWeights were tuned on the tuning half of testdata/toolcorpus
// (TestTuneLexicon).
var defaultLexWeights = lexWeights{
	lexSynonym:      {0.4, 0.25, 0.15},
	lexDerived:      {0.5, 0.3, 0.2},
	lexAttribute:    {0.5, 0.3, 0.2},
	lexPertainym:    {0.5, 0.3, 0.2},
	lexHypernym:     {0.3, 0.2, 0.1},
	lexSimilar:      {0.2, 0.1, 0},
	lexVerbHypernym: {0.3, 0.2, 0.1},
}

// weight is the most a relation counts by any of its senses.
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
var builtinLexicon = sync.OnceValue(func() *lexicon {
	_, relations := lexiconSections()
	type key struct {
		term string
		kind lexKind
	}
	lx := &lexicon{related: map[string][]lexRel{}, compounds: map[compoundKey][]lexRel{}}
	best := map[string]map[key]uint8{}   // term -> (related, kind) -> best rank
	compound := map[string]compoundKey{} // best's key of a compound -> its key
	stop := DefaultVocabulary().stop
	sc := bufio.NewScanner(bytes.NewReader(relations))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		t := stem(fields[0])
		if strings.Contains(fields[0], "_") {
			var ck compoundKey
			n := 0
			for _, part := range strings.Split(fields[0], "_") {
				if stop[part] {
					continue
				}
				if n == len(ck) {
					n++
					break
				}
				ck[n] = stem(part)
				n++
			}
			if n < 2 || n > len(ck) {
				continue
			}
			t = "_" + strings.Join(ck[:n], " ")
			compound[t] = ck
		}
		m := best[t]
		if m == nil {
			m = map[key]uint8{}
			best[t] = m
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
					r := stem(w)
					if r == t {
						continue
					}
					k := key{r, kind}
					if old, ok := m[k]; !ok || uint8(rank) < old {
						m[k] = uint8(rank)
					}
				}
			}
		}
	}
	for t, m := range best {
		rels := make([]lexRel, 0, len(m))
		for k, rank := range m {
			rels = append(rels, lexRel{term: k.term, kind: k.kind, rank: rank})
		}
		slices.SortFunc(rels, func(a, b lexRel) int {
			if c := strings.Compare(a.term, b.term); c != 0 {
				return c
			}
			if a.kind != b.kind {
				return int(a.kind) - int(b.kind)
			}
			return int(a.rank) - int(b.rank)
		})
		if ck, ok := compound[t]; ok {
			lx.compounds[ck] = rels
			continue
		}
		lx.related[t] = rels
	}
	return lx
})
