package toolsearch

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"slices"
	"strconv"
	"strings"
)

// The neighbours of the embeddings' table (internal/testkit/embeddings
// writes it from word vectors: for each common English word, the words
// nearest to it in use, with their cosine similarity in hundredths) are an
// experiment of the third pass: TestTuneNeighbours measures them, and no
// index has them by default (BENCHMARKS.md says why).

// nbRel is one neighbour of a term: the near term (an index into the
// table's terms) and its similarity in hundredths.
type nbRel struct {
	term int32
	sim  uint8
}

// neighbours is the table compiled: each term's neighbours, nearest
// first, as one span of rels.
type neighbours struct {
	terms   []string
	rels    []nbRel
	related map[string]span
}

func (nb *neighbours) of(s span) []nbRel { return nb.rels[s.start:s.end] }

// nbWeights say how much a neighbour counts against 1 for the query's
// word: weight at similarity 1, falling linearly to nothing at minSim;
// a query word keeps its max nearest. A zero weight leaves them out.
type nbWeights struct {
	weight float32
	minSim float32 // in [0, 1)
	max    int
}

// of returns what a neighbour of similarity sim (hundredths) counts.
func (w *nbWeights) of(sim uint8) float32 {
	s := float32(sim) / 100
	if w.weight == 0 || s <= w.minSim {
		return 0
	}
	return w.weight * (s - w.minSim) / (1 - w.minSim)
}

// compileNeighbours reads a table: the words of one stem share their
// neighbours, each near term once by its best similarity, and a word's own
// forms (its stem) are no neighbours of it.
func compileNeighbours(table []byte) *neighbours {
	z, err := gzip.NewReader(bytes.NewReader(table))
	if err != nil {
		panic("toolsearch: neighbours.txt.gz: " + err.Error())
	}
	nb := &neighbours{related: map[string]span{}}
	ids := map[string]int32{}
	stems := map[string]int32{}
	id := func(w string) int32 {
		if i, ok := stems[w]; ok {
			return i
		}
		t := stem(w)
		i, ok := ids[t]
		if !ok {
			i = int32(len(nb.terms))
			ids[t] = i
			nb.terms = append(nb.terms, t)
		}
		stems[w] = i
		return i
	}
	type entry struct {
		source int32
		rel    nbRel
	}
	var entries []entry
	sc := bufio.NewScanner(z)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		word, rest, _ := strings.Cut(line, "\t")
		source := id(word)
		for _, f := range strings.Fields(rest) {
			w, s, ok := strings.Cut(f, ":")
			sim, err := strconv.Atoi(s)
			if !ok || err != nil || sim <= 0 || sim > 100 {
				continue
			}
			if r := id(w); r != source {
				entries = append(entries, entry{source, nbRel{term: r, sim: uint8(sim)}})
			}
		}
	}
	if err := sc.Err(); err != nil {
		panic("toolsearch: neighbours.txt.gz: " + err.Error())
	}
	// By source, then near term, best first: the first of each (source,
	// term) is its best similarity.
	slices.SortFunc(entries, func(a, b entry) int {
		if a.source != b.source {
			return cmp.Compare(a.source, b.source)
		}
		if a.rel.term != b.rel.term {
			return cmp.Compare(a.rel.term, b.rel.term)
		}
		return cmp.Compare(b.rel.sim, a.rel.sim)
	})
	entries = slices.CompactFunc(entries, func(a, b entry) bool { return a.source == b.source && a.rel.term == b.rel.term })
	nb.rels = make([]nbRel, len(entries))
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].source == entries[i].source {
			nb.rels[j] = entries[j].rel
			j++
		}
		// Nearest first, ties by term.
		slices.SortFunc(nb.rels[i:j], func(a, b nbRel) int {
			if a.sim != b.sim {
				return cmp.Compare(b.sim, a.sim)
			}
			return strings.Compare(nb.terms[a.term], nb.terms[b.term])
		})
		nb.related[nb.terms[entries[i].source]] = span{int32(i), int32(j)}
		i = j
	}
	return nb
}
