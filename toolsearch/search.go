package toolsearch

import (
	"cmp"
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
	// PerServer caps the hits from any one server, so that one large
	// server cannot fill the answer and the hits name several servers;
	// zero means no cap. The cap is applied before K: a search with a cap
	// still returns K hits when enough servers match.
	PerServer int
	// ServerCaps overrides PerServer for the servers it names.
	ServerCaps map[string]int
	// Abstain returns no hit when the best one is weak (see Hit.Weak):
	// the index holds no tool that does what Text asks, as far as it can
	// tell. It applies to ModeBM25 only.
	Abstain bool
	// Vector is the query's embedding, for a hybrid index (see Hybrid):
	// the host's own, or the one SearchContext makes. With it, Search
	// fuses the lexical ranking with the ranking by similarity. It must
	// have the dimensions of the tools' vectors.
	Vector []float32
}

// capFor returns the cap on server's hits, zero for none.
func (q *Query) capFor(server string) int {
	if c, ok := q.ServerCaps[server]; ok {
		return c
	}
	return q.PerServer
}

func (q *Query) capped() bool {
	if q.PerServer > 0 {
		return true
	}
	for _, c := range q.ServerCaps {
		if c > 0 {
			return true
		}
	}
	return false
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
	// Match is the share of the query the tool matches: its score over
	// the best score a tool of this index could get for the query, one
	// that holds every word of the query (see the package doc). It is
	// between 0 and 1 and comparable across queries and indexes; 1 for
	// exact and regexp matches.
	Match float64
	// Weak says that Match is under the index's MinMatch (and, in a
	// hybrid search with Hybrid.MinSimilarity set, Similarity under it):
	// the tool shares a few words with the query but is unlikely to do
	// what it asks.
	Weak bool
	// Similarity is the cosine similarity of the tool's vector and the
	// query's, in a hybrid search; 0 otherwise, or when the tool has no
	// vector yet.
	Similarity float64
}

// String is the hit for a log line or fmt.Println: the qualified name, the
// score and Match, "weak" when it is, and the Similarity of a hybrid
// search when there is one, as in
// "github__create_issue (score 2.41, match 0.87)". The Tool is left out:
// it is the tool's whole definition.
func (h Hit) String() string {
	s := fmt.Sprintf("%s (score %.3g, match %.2f", h.Qualified, h.Score, h.Match)
	if h.Similarity != 0 {
		s += fmt.Sprintf(", similarity %.2f", h.Similarity)
	}
	if h.Weak {
		s += ", weak"
	}
	return s + ")"
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
	if q.capped() {
		f.caps = &q
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	switch q.Mode {
	case ModeExact:
		return x.exactLocked(q.Text, f, k), nil
	case ModeRegexp:
		return x.matchLocked(re.MatchString, f, k), nil
	case ModeBM25:
		var hits []Hit
		if q.Vector != nil {
			if x.hybrid == nil {
				return nil, fmt.Errorf("mcpfleet: toolsearch: query: a Vector for an index without a Hybrid")
			}
			lexical := x.rankLocked(q.Text, filter{servers: f.servers, exclude: f.exclude, require: f.require}, x.hybrid.Depth)
			var err error
			if hits, err = x.fuseLocked(lexical, q.Vector, f, k); err != nil {
				return nil, err
			}
		} else {
			hits = x.rankLocked(q.Text, f, k)
		}
		if q.Abstain && (len(hits) == 0 || hits[0].Weak) {
			return nil, nil
		}
		return hits, nil
	}
	return nil, fmt.Errorf("mcpfleet: toolsearch: query: unknown mode %v", q.Mode)
}

type filter struct {
	servers map[string]bool
	exclude map[string]bool
	require Hint
	caps    *Query // nil when no server is capped
}

// counter counts the hits taken per server under a query's caps.
type counter struct {
	caps *Query
	per  map[string]int
}

// take reports whether one more hit of server fits, and counts it.
func (c *counter) take(server string) bool {
	if c.caps == nil {
		return true
	}
	limit := c.caps.capFor(server)
	if limit <= 0 {
		return true
	}
	if c.per == nil {
		c.per = map[string]int{}
	}
	if c.per[server] >= limit {
		return false
	}
	c.per[server]++
	return true
}

func (f *filter) keep(d *doc) bool {
	return d.hints&f.require == f.require &&
		(f.servers == nil || f.servers[d.server]) &&
		(f.exclude == nil || !f.exclude[d.qualified])
}

func (x *Index) exactLocked(name string, f filter, k int) []Hit {
	if id, ok := x.byName[name]; ok && f.keep(&x.docs[id]) {
		return []Hit{x.hitLocked(id, 1, 1)}
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
			hits = append(hits, x.hitLocked(int32(id), 1, 1))
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int { return strings.Compare(a.Qualified, b.Qualified) })
	c := counter{caps: f.caps}
	hits = slices.DeleteFunc(hits, func(h Hit) bool { return !c.take(h.Tool.Server()) })
	if k >= 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

func (x *Index) hitLocked(id int32, score, match float64) Hit {
	d := &x.docs[id]
	return Hit{Tool: d.tool, Qualified: d.qualified, Score: score, Match: match, Weak: match < x.minMatch}
}

// scratch is one search's score table, pooled: a search touches only the
// docs that hold a query term and clears only those.
type scratch struct {
	score     []float32
	touched   []int32
	concept   []float32 // a concept's best term, per doc
	inConcept []int32   // the docs concept holds
	terms     []queryTerm
	widf      []float32 // a concept's lexical terms' weighted idf
	visited   int       // postings walked, for tests
	seen      map[string]int
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (x *Index) rankLocked(text string, f filter, k int) []Hit {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	if len(s.score) < len(x.docs) {
		s.score = make([]float32, len(x.docs))
	}
	// Each concept counts once, in a fixed order, so that a doc's score
	// sums the same numbers in the same order whatever order the posting
	// lists are in: equal inputs give bit-equal scores.
	if s.seen == nil {
		s.seen = map[string]int{}
	}
	s.terms = x.voc.queryTerms(text, x.synonymWeight, &x.lexWeights, s.terms, s.seen)

	n := float32(len(x.byName))
	var avg [numFields]float32
	for i := range numFields {
		if n > 0 {
			avg[i] = max(float32(x.lenSum[i])/n, 1)
		}
	}
	// b over the average length of each field, and whether the filter
	// keeps every doc: the inner loop then reads only the postings and
	// the dense lens.
	var bAvg [numFields]float32
	for i := range numFields {
		if avg[i] > 0 {
			bAvg[i] = x.b / avg[i]
		}
	}
	all := f.servers == nil && f.exclude == nil && f.require == 0
	s.touched = s.touched[:0]
	if len(s.concept) < len(x.docs) {
		s.concept = make([]float32, len(x.docs))
	}
	// A word the lexicon relates counts only when at most maxDF tools
	// hold it: a word most tools hold tells nothing, and walking its list
	// costs the most.
	maxDF := len(x.docs)
	if x.relatedMaxDF > 0 {
		maxDF = max(int(x.relatedMaxDF*n), relatedMinDF)
	}
	// best is the query's best possible score: for each concept, the most
	// any of its terms can give.
	var best float32
	var unseen int // words no tool knows, that are no values
	for start := 0; start < len(s.terms); {
		c := s.terms[start].concept
		end := start + 1
		for end < len(s.terms) && s.terms[end].concept == c {
			end++
		}
		var most float32
		wordHeld := false
		s.inConcept = s.inConcept[:0]
		// Of the lexicon's words, only the best relatedMax by weighted
		// idf count: the rest would seldom change the ranking.
		cut := float32(0)
		if x.relatedMax > 0 {
			s.widf = s.widf[:0]
			for _, qt := range s.terms[start:end] {
				if tid, ok := x.termID[qt.term]; ok && qt.lexical && len(x.postings[tid]) <= maxDF {
					s.widf = append(s.widf, qt.weight*idf(n, float32(len(x.postings[tid]))))
				}
			}
			if len(s.widf) > x.relatedMax {
				slices.SortFunc(s.widf, func(a, b float32) int { return cmp.Compare(b, a) })
				cut = s.widf[x.relatedMax-1]
			}
		}
		for _, qt := range s.terms[start:end] {
			tid, ok := x.termID[qt.term]
			if !ok {
				continue
			}
			wordHeld = wordHeld || !qt.synonym
			list := x.postings[tid]
			if qt.lexical && len(list) > maxDF {
				continue
			}
			idf := qt.weight * idf(n, float32(len(list)))
			if qt.lexical && idf < cut {
				continue
			}
			s.visited += len(list)
			most = max(most, idf)
			for i := range list {
				p := &list[i]
				if !all && !f.keep(&x.docs[p.doc]) {
					continue
				}
				lens := &x.lens[p.doc]
				var tf float32
				for fl := range numFields {
					if p.tf[fl] == 0 {
						continue
					}
					norm := 1 - x.b + bAvg[fl]*float32(lens[fl])
					tf += x.weights[fl] * float32(p.tf[fl]) / norm
				}
				if tf == 0 {
					continue
				}
				sc := idf * tf / (x.k1 + tf)
				if s.concept[p.doc] == 0 {
					s.inConcept = append(s.inConcept, p.doc)
				}
				s.concept[p.doc] = max(s.concept[p.doc], sc)
			}
		}
		switch {
		case s.terms[start].arg || s.terms[start].phrase:
			// A value, or a word of a phrase (whose meaning its
			// related words carry): never unseen.
			best += most
		case !wordHeld:
			// A word no tool holds is unseen even when a word the
			// lexicon or a synonym relates to it is held: the tools
			// speak of something near, not of what was asked.
			unseen++
		default:
			best += most
		}
		for _, id := range s.inConcept {
			if s.score[id] == 0 {
				s.touched = append(s.touched, id)
			}
			s.score[id] += s.concept[id]
			s.concept[id] = 0
		}
		start = end
	}
	best += x.unseenMass(unseen, n)
	hits := x.topLocked(s, k, f.caps, best)
	for _, id := range s.touched {
		s.score[id] = 0
	}
	return hits
}

// relatedMinDF is the least maxDF of a search: in a small index, a word
// a few tools hold still tells them apart.
const relatedMinDF = 16

// unseenMass is what the words no tool knows add to the query's best
// possible score: each weighs DefaultUnseenWeight times the rarest word.
func (x *Index) unseenMass(unseen int, n float32) float32 {
	return x.unseen * idf(n, 1) * float32(unseen)
}

// idf is BM25's inverse document frequency of a term df of n tools hold.
func idf(n, df float32) float32 {
	return float32(math.Log(1 + float64((n-df+0.5)/(df+0.5))))
}

// topLocked picks the k best touched docs, best first, ties by name,
// under the query's per-server caps; best is the query's best possible
// score, which Match is relative to.
func (x *Index) topLocked(s *scratch, k int, caps *Query, best float32) []Hit {
	better := func(a, b int32) bool {
		if s.score[a] != s.score[b] {
			return s.score[a] > s.score[b]
		}
		return x.docs[a].qualified < x.docs[b].qualified
	}
	if k < 0 || k > len(s.touched) {
		k = len(s.touched)
	}
	match := func(id int32) float64 {
		if best <= 0 {
			return 0
		}
		return min(float64(s.score[id]/best), 1)
	}
	if caps != nil {
		// Caps can pass over any number of hits: sort them all.
		slices.SortFunc(s.touched, func(a, b int32) int {
			if better(a, b) {
				return -1
			}
			return 1
		})
		c := counter{caps: caps}
		var hits []Hit
		for _, id := range s.touched {
			if len(hits) == k {
				break
			}
			if c.take(x.docs[id].server) {
				hits = append(hits, x.hitLocked(id, float64(s.score[id]), match(id)))
			}
		}
		return hits
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
		hits[i] = x.hitLocked(id, float64(s.score[id]), match(id))
	}
	return hits
}
