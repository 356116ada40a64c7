package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The parts of speech of WordNet's files, and the letters its pointers and
// index lines name them by ('s', a satellite adjective, is an adjective).
var posFiles = map[byte]string{'n': "noun", 'v': "verb", 'a': "adj", 'r': "adv"}

// synset is one WordNet synset: its words (lower case, '_' for a space)
// and its pointers.
type synset struct {
	pos   byte
	words []string
	ptrs  []pointer
}

// pointer is one WordNet pointer: a relation to another synset, or, when
// source and target are not zero, between one word of each (a lexical
// pointer, as derivations are).
type pointer struct {
	symbol         string
	target         synKey
	source, toWord int // 1-based word numbers; 0 for a semantic pointer
}

// synKey names a synset: its part of speech and offset in its data file.
type synKey struct {
	pos    byte
	offset int64
}

// lemmaSenses is one lemma's synsets in one part of speech, most frequent
// first (the index's order), with the tag count of each sense (how often
// SemCor's annotators chose it).
type lemmaSenses struct {
	synsets []synKey
	tags    []int
}

// wordNet is the part of WordNet the generator reads.
type wordNet struct {
	synsets    map[synKey]*synset
	index      map[byte]map[string]*lemmaSenses // pos -> lemma -> senses
	exceptions map[byte]map[string][]string     // pos -> inflected form -> lemmas
}

func normPOS(p byte) byte {
	if p == 's' {
		return 'a'
	}
	return p
}

// load reads WordNet's data and index files from dict and its
// morphological exception lists from exc.
func load(dict, exc string) (*wordNet, error) {
	wn := &wordNet{synsets: map[synKey]*synset{}, index: map[byte]map[string]*lemmaSenses{}, exceptions: map[byte]map[string][]string{}}
	for p, name := range posFiles {
		if err := wn.readData(p, filepath.Join(dict, "data."+name)); err != nil {
			return nil, err
		}
		if err := wn.readIndex(p, filepath.Join(dict, "index."+name)); err != nil {
			return nil, err
		}
		if err := wn.readExceptions(p, filepath.Join(exc, name+".exc")); err != nil {
			return nil, err
		}
	}
	if err := wn.readTagCounts(filepath.Join(dict, "index.sense")); err != nil {
		return nil, err
	}
	return wn, nil
}

func eachLine(path string, f func(line string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(line, "  ") || line == "" {
			continue // the license at the head of each file
		}
		if err := f(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// readData reads a data file: synset_offset lex_filenum ss_type w_cnt
// (word lex_id)... p_cnt (symbol offset pos source/target)... | gloss.
func (wn *wordNet) readData(p byte, path string) error {
	return eachLine(path, func(line string) error {
		body, _, _ := strings.Cut(line, " | ")
		f := strings.Fields(body)
		if len(f) < 4 {
			return fmt.Errorf("short line")
		}
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return err
		}
		s := &synset{pos: p}
		wc, err := strconv.ParseInt(f[3], 16, 32)
		if err != nil {
			return err
		}
		i := 4
		for range wc {
			w := strings.ToLower(f[i])
			// Adjectives carry a syntactic marker: "long(a)".
			if j := strings.IndexByte(w, '('); j > 0 {
				w = w[:j]
			}
			s.words = append(s.words, w)
			i += 2
		}
		pc, err := strconv.Atoi(f[i])
		if err != nil {
			return err
		}
		i++
		for range pc {
			toff, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return err
			}
			st := f[i+3]
			src, _ := strconv.ParseInt(st[:2], 16, 32)
			dst, _ := strconv.ParseInt(st[2:], 16, 32)
			s.ptrs = append(s.ptrs, pointer{symbol: f[i], target: synKey{normPOS(f[i+2][0]), toff}, source: int(src), toWord: int(dst)})
			i += 4
		}
		wn.synsets[synKey{p, off}] = s
		return nil
	})
}

// readIndex reads an index file: lemma pos synset_cnt p_cnt symbols...
// sense_cnt tagsense_cnt offsets..., the offsets most frequent sense first.
func (wn *wordNet) readIndex(p byte, path string) error {
	m := map[string]*lemmaSenses{}
	wn.index[p] = m
	return eachLine(path, func(line string) error {
		f := strings.Fields(line)
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		pc, err := strconv.Atoi(f[3])
		if err != nil {
			return err
		}
		offs := f[4+pc+2:]
		if len(offs) != n {
			return fmt.Errorf("%s: %d synsets, %d offsets", f[0], n, len(offs))
		}
		ls := &lemmaSenses{tags: make([]int, n)}
		for _, o := range offs {
			off, err := strconv.ParseInt(o, 10, 64)
			if err != nil {
				return err
			}
			ls.synsets = append(ls.synsets, synKey{p, off})
		}
		m[f[0]] = ls
		return nil
	})
}

// readTagCounts reads index.sense: sense_key offset sense_number tag_cnt,
// the sense key starting lemma%ss_type.
func (wn *wordNet) readTagCounts(path string) error {
	return eachLine(path, func(line string) error {
		f := strings.Fields(line)
		if len(f) != 4 {
			return fmt.Errorf("want 4 fields")
		}
		lemma, rest, _ := strings.Cut(f[0], "%")
		p := map[byte]byte{'1': 'n', '2': 'v', '3': 'a', '4': 'r', '5': 'a'}[rest[0]]
		num, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		tags, err := strconv.Atoi(f[3])
		if err != nil {
			return err
		}
		if ls := wn.index[p][lemma]; ls != nil && num >= 1 && num <= len(ls.tags) {
			ls.tags[num-1] = tags
		}
		return nil
	})
}

// readExceptions reads an exception list: an inflected form and its
// lemmas ("forgot forget", "axes ax axis").
func (wn *wordNet) readExceptions(p byte, path string) error {
	m := map[string][]string{}
	wn.exceptions[p] = m
	return eachLine(path, func(line string) error {
		f := strings.Fields(line)
		if len(f) < 2 {
			return fmt.Errorf("want a form and its lemmas")
		}
		m[f[0]] = f[1:]
		return nil
	})
}

// tagCount is the lemma's tag count over all its senses and parts of
// speech: how often it occurs in SemCor, WordNet's measure of use.
func (wn *wordNet) tagCount(lemma string) int {
	n := 0
	for _, m := range wn.index {
		if ls := m[lemma]; ls != nil {
			for _, t := range ls.tags {
				n += t
			}
		}
	}
	return n
}

// known reports whether lemma is in WordNet's index in any part of speech.
func (wn *wordNet) known(lemma string) bool {
	for _, m := range wn.index {
		if m[lemma] != nil {
			return true
		}
	}
	return false
}

// morphy returns the lemmas of form in part of speech p, as WordNet's
// morphy finds them: the form itself when the index has it, its
// exceptions, and the detachment rules' results that the index has.
func (wn *wordNet) morphy(form string, p byte) []string {
	var out []string
	add := func(l string) {
		for _, o := range out {
			if o == l {
				return
			}
		}
		out = append(out, l)
	}
	if wn.index[p][form] != nil {
		add(form)
	}
	for _, l := range wn.exceptions[p][form] {
		if wn.index[p][l] != nil {
			add(l)
		}
	}
	for _, r := range detach[p] {
		if base, ok := strings.CutSuffix(form, r[0]); ok && base != "" {
			l := base + r[1]
			if wn.index[p][l] != nil {
				add(l)
			}
		}
	}
	return out
}

// detach are morphy's detachment rules: a suffix and what replaces it.
var detach = map[byte][][2]string{
	'n': {{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}},
	'v': {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
	'a': {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}},
}
