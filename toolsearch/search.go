package toolsearch

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/snapshot"
)

// Mode is how a Query's Text is matched.
type Mode int

const (
	// ModeBM25 ranks tools by how well their words match the text.
	ModeBM25 Mode = iota
	// ModeExact finds the tool whose qualified name, or own name on its
	// server, is the text (ignoring case).
	ModeExact
	// ModeRegexp finds the tools whose qualified name matches the text as a
	// Go regular expression (RE2 syntax), sorted by name.
	ModeRegexp
)

var modeNames = [...]string{"bm25", "exact", "regexp"}

// String returns "bm25", "exact" or "regexp".
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a Mode from its String form; "" is ModeBM25.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeBM25, nil
	}
	for i, n := range modeNames {
		if strings.EqualFold(s, n) {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("mcpfleet: toolsearch: unknown mode %q (want bm25, exact or regexp)", s)
}

// Hint is a set of promises a tool's annotations make. MCP's defaults
// apply: a tool that says nothing is not read-only, may be destructive,
// is not idempotent and reaches an open world.
type Hint uint8

const (
	// HintReadOnly: readOnlyHint is true.
	HintReadOnly Hint = 1 << iota
	// HintNonDestructive: read-only, or destructiveHint is false.
	HintNonDestructive
	// HintIdempotent: read-only, or idempotentHint is true.
	HintIdempotent
	// HintClosedWorld: openWorldHint is false.
	HintClosedWorld
)

// hintsOf reads the promises of a tool's annotations.
func hintsOf(a mcp.ToolAnnotation) Hint {
	var h Hint
	ro := a.ReadOnlyHint != nil && *a.ReadOnlyHint
	if ro {
		h |= HintReadOnly | HintNonDestructive | HintIdempotent
	}
	if a.DestructiveHint != nil && !*a.DestructiveHint {
		h |= HintNonDestructive
	}
	if a.IdempotentHint != nil && *a.IdempotentHint {
		h |= HintIdempotent
	}
	if a.OpenWorldHint != nil && !*a.OpenWorldHint {
		h |= HintClosedWorld
	}
	return h
}

// DefaultK is the number of hits a Query with no K asks for.
const DefaultK = 5

// Query is one search.
type Query struct {
	// Text is what to look for: words for ModeBM25, a name for ModeExact,
	// a pattern for ModeRegexp.
	Text string
	// Mode says how Text matches. Defaults to ModeBM25.
	Mode Mode
	// K is the most hits to return. Defaults to DefaultK; negative means
	// every match.
	K int
	// Servers keeps to the tools of these servers; none means all.
	Servers []string
	// Require keeps to the tools whose annotations make every promise in
	// it, such as HintReadOnly.
	Require Hint
	// Exclude leaves out these qualified names (tools the model already
	// has, say).
	Exclude []string
}

// Hit is one tool a search found.
type Hit struct {
	// Tool is the tool as the index holds it: the View's own handle.
	Tool snapshot.Tool
	// Qualified is the tool's qualified name, the one a model calls.
	Qualified string
	// Score is the BM25F score; 1 for exact and regexp matches. Higher is
	// better, and only comparable within one search.
	Score float64
}

// Search answers q. The hits come best first, ties by qualified name; a
// bad regular expression is the only error.
func (x *Index) Search(q Query) ([]Hit, error) {
	k := q.K
	if k == 0 {
		k = DefaultK
	}
	var re *regexp.Regexp
	if q.Mode == ModeRegexp {
		var err error
		if re, err = regexp.Compile(q.Text); err != nil {
			return nil, fmt.Errorf("mcpfleet: toolsearch: query: %w", err)
		}
	}
	f := filter{require: q.Require}
	if len(q.Servers) > 0 {
		f.servers = make(map[string]bool, len(q.Servers))
		for _, s := range q.Servers {
			f.servers[s] = true
		}
	}
	if len(q.Exclude) > 0 {
		f.exclude = make(map[string]bool, len(q.Exclude))
		for _, s := range q.Exclude {
			f.exclude[s] = true
		}
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	switch q.Mode {
	case ModeExact:
		return x.exactLocked(q.Text, f, k), nil
	case ModeRegexp:
		return x.matchLocked(re.MatchString, f, k), nil
	case ModeBM25:
		return x.rankLocked(q.Text, f, k), nil
	}
	return nil, fmt.Errorf("mcpfleet: toolsearch: query: unknown mode %v", q.Mode)
}

type filter struct {
	servers map[string]bool
	exclude map[string]bool
	require Hint
}

func (f *filter) keep(d *doc) bool {
	return d.hints&f.require == f.require &&
		(f.servers == nil || f.servers[d.server]) &&
		(f.exclude == nil || !f.exclude[d.qualified])
}

func (x *Index) exactLocked(name string, f filter, k int) []Hit {
	if id, ok := x.byName[name]; ok && f.keep(&x.docs[id]) {
		return []Hit{x.hitLocked(id, 1)}
	}
	lower := strings.ToLower(name)
	return x.matchLocked(func(q string) bool {
		return strings.ToLower(q) == lower
	}, f, k, func(d *doc) bool { return strings.EqualFold(d.tool.Name(), name) })
}

// matchLocked returns the docs whose qualified name match accepts (or
// that any of also accepts), sorted by name. It walks every doc.
func (x *Index) matchLocked(match func(string) bool, f filter, k int, also ...func(*doc) bool) []Hit {
	var hits []Hit
	for id := range x.docs {
		d := &x.docs[id]
		if d.qualified == "" || !f.keep(d) {
			continue
		}
		ok := match(d.qualified)
		for _, a := range also {
			ok = ok || a(d)
		}
		if ok {
			hits = append(hits, x.hitLocked(int32(id), 1))
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int { return strings.Compare(a.Qualified, b.Qualified) })
	if k >= 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

func (x *Index) hitLocked(id int32, score float64) Hit {
	d := &x.docs[id]
	return Hit{Tool: d.tool, Qualified: d.qualified, Score: score}
}

// scratch is one search's score table, pooled: a search touches only the
// docs that hold a query term and clears only those.
type scratch struct {
	score   []float32
	touched []int32
	terms   []queryTerm
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (x *Index) rankLocked(text string, f filter, k int) []Hit {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	if len(s.score) < len(x.docs) {
		s.score = make([]float32, len(x.docs))
	}
	// Each term counts once, in a fixed order, so that a doc's score sums
	// the same numbers in the same order whatever order the posting lists
	// are in: equal inputs give bit-equal scores.
	s.terms = x.voc.queryTerms(text, s.terms)

	n := float32(len(x.byName))
	var avg [numFields]float32
	for i := range numFields {
		if n > 0 {
			avg[i] = max(float32(x.lenSum[i])/n, 1)
		}
	}
	s.touched = s.touched[:0]
	for _, qt := range s.terms {
		tid, ok := x.termID[qt.term]
		if !ok {
			continue
		}
		list := x.postings[tid]
		df := float32(len(list))
		idf := qt.weight * float32(math.Log(1+float64((n-df+0.5)/(df+0.5))))
		for i := range list {
			p := &list[i]
			d := &x.docs[p.doc]
			if !f.keep(d) {
				continue
			}
			var tf float32
			for fl := range numFields {
				if p.tf[fl] == 0 {
					continue
				}
				norm := 1 - x.b + x.b*float32(d.lens[fl])/avg[fl]
				tf += x.weights[fl] * float32(p.tf[fl]) / norm
			}
			if tf == 0 {
				continue
			}
			if s.score[p.doc] == 0 {
				s.touched = append(s.touched, p.doc)
			}
			s.score[p.doc] += idf * tf / (x.k1 + tf)
		}
	}
	hits := x.topLocked(s, k)
	for _, id := range s.touched {
		s.score[id] = 0
	}
	return hits
}

// topLocked picks the k best touched docs, best first, ties by name.
func (x *Index) topLocked(s *scratch, k int) []Hit {
	better := func(a, b int32) bool {
		if s.score[a] != s.score[b] {
			return s.score[a] > s.score[b]
		}
		return x.docs[a].qualified < x.docs[b].qualified
	}
	if k < 0 || k > len(s.touched) {
		k = len(s.touched)
	}
	top := make([]int32, 0, k+1)
	for _, id := range s.touched {
		if len(top) == k && (k == 0 || !better(id, top[k-1])) {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, id, func(e, t int32) int {
			if better(e, t) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, id)
		if len(top) > k {
			top = top[:k]
		}
	}
	hits := make([]Hit, len(top))
	for i, id := range top {
		hits[i] = x.hitLocked(id, float64(s.score[id]))
	}
	return hits
}
