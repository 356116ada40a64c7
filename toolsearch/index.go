package toolsearch

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/snapshot"
)

// field is one part of a tool the ranking reads, each with its weight.
type field uint8

const (
	fieldName      field = iota // the tool's own name, split into words
	fieldServer                 // the qualified name's prefix (server or ToolPrefix)
	fieldTitle                  // title, or the annotations' title
	fieldDesc                   // description
	fieldParam                  // parameter names
	fieldParamDesc              // parameter descriptions
	numFields
)

// Weights are the BM25F weights of the fields a tool is ranked by: how much
// one occurrence of a query word in that field counts. A zero field is
// left out of the ranking.
type Weights struct {
	Name, Server, Title, Description, Params, ParamDescriptions float64
}

// DefaultWeights rank a word in the tool's name highest, then its title,
// description and parameter names; the server's name and parameter
// descriptions count least. They were tuned on testdata/toolcorpus.
var DefaultWeights = Weights{Name: 2, Server: 3, Title: 2, Description: 0.5, Params: 0.3, ParamDescriptions: 0.15}

func (w Weights) array() [numFields]float32 {
	return [numFields]float32{float32(w.Name), float32(w.Server), float32(w.Title),
		float32(w.Description), float32(w.Params), float32(w.ParamDescriptions)}
}

// Default BM25 parameters: K1 saturates repeated words, B normalizes by
// field length.
const (
	DefaultK1 = 0.8
	DefaultB  = 0.75
)

// Option configures an Index.
type Option func(*Index)

// WithWeights sets the field weights. Defaults to DefaultWeights.
func WithWeights(w Weights) Option { return func(x *Index) { x.weights = w.array() } }

// WithBM25 sets BM25's k1 and b. Default to DefaultK1 and DefaultB.
func WithBM25(k1, b float64) Option {
	return func(x *Index) { x.k1, x.b = float32(k1), float32(b) }
}

// WithVocabulary sets the index's synonyms, abbreviations and stop words
// to a copy of v. Defaults to DefaultVocabulary.
func WithVocabulary(v *Vocabulary) Option { return func(x *Index) { x.voc = v.compile() } }

// DefaultMinMatch is the Match under which a hit is weak, for an index
// that sets none. It was calibrated on the tuning queries of
// testdata/toolcorpus (users.json and noanswer.json): the requests no tool
// does against the ones a tool does (see the package doc).
const DefaultMinMatch = 0.06

// DefaultUnseenWeight is how much a query word that no tool holds (even
// if a synonym or a related word of it is held) counts in the query's best
// possible score, in multiples of the weight of the rarest word a tool
// holds: a request for
// what the fleet lacks ("book a flight", "order a pizza") is made of such
// words. A value the query carries ("Carol", "issue 55", "config.yaml")
// does not count. Calibrated with DefaultMinMatch.
const DefaultUnseenWeight = 3

// WithMinMatch sets the Match under which a hit is weak (and a query with
// Abstain gets no hit). Defaults to DefaultMinMatch.
func WithMinMatch(m float64) Option { return func(x *Index) { x.minMatch = m } }

// Index is a search index over the tools of a fleet. It is safe for
// concurrent use: searches run in parallel and wait only for an update in
// progress, which holds the index for the tools it changes. The zero Index
// is not ready; use New.
type Index struct {
	// Set by New, read-only.
	weights  [numFields]float32
	k1, b    float32
	minMatch float64
	unseen   float32
	// synonymWeight is SynonymWeight, a field so that tuning can vary it.
	synonymWeight float32
	// lexWeights weigh the lexicon's relations, a field so that tuning
	// can vary them.
	lexWeights lexWeights
	// relatedMaxDF is the share of tools above which a word the lexicon
	// relates to a query word is left out (never under relatedMinDF
	// tools), and relatedMax the most of them a query word keeps, by
	// weighted idf: what the lexicon costs a search.
	relatedMaxDF float32
	relatedMax   int
	// maxEnum is the most values an enum of a parameter may have for
	// them to be read as the parameter's names (defaultMaxEnum), a field
	// so that tuning can vary it.
	maxEnum int
	hybrid  *Hybrid // nil: words alone

	embedMu sync.Mutex // serializes Embed calls; taken before mu

	mu sync.RWMutex
	// Guarded by mu.
	voc       *vocab              // immutable; SetVocabulary swaps it
	docs      []doc               // by doc id; a free slot has no name
	lens      [][numFields]uint16 // by doc id, the docs' lens: dense, for the ranking's inner loop
	free      []int32             // free doc ids
	byName    map[string]int32    // qualified name -> doc id
	termID    map[string]int32    // term -> term id
	terms     []string            // by term id; "" when free
	postings  [][]posting         // by term id
	freeTerms []int32
	lenSum    [numFields]int64       // sum of field lengths over live docs
	mark      uint32                 // Sync's sweep mark
	version   uint64                 // View version of the last Sync or Apply
	follows   bool                   // Sync or Apply filled the index
	own       *own                   // the servers Put gave; nil until the first Put
	vectors   map[[32]byte][]float32 // with a Hybrid: vectors by text hash
}

// doc is one indexed tool.
type doc struct {
	tool      snapshot.Tool
	qualified string
	server    string
	hash      string // the server's catalog hash when the doc was indexed
	hints     Hint
	mark      uint32
	lens      [numFields]uint16
	terms     []docTerm // sorted by term id
	// With a Hybrid: the hash of the text embedded of the tool, and its
	// vector (nil until Embed made it).
	textHash [32]byte
	vec      []float32
}

// docTerm points at the doc's entry in one posting list, so that removing
// the doc costs its own terms, never the length of a list.
type docTerm struct {
	term int32
	pos  int32
}

// posting is one doc's occurrences of a term, per field.
type posting struct {
	doc int32
	tf  [numFields]uint8
}

// New returns an empty Index.
func New(opts ...Option) *Index {
	x := &Index{
		weights: DefaultWeights.array(), k1: DefaultK1, b: DefaultB, voc: defaultVocab(),
		minMatch: DefaultMinMatch, unseen: DefaultUnseenWeight, synonymWeight: SynonymWeight, lexWeights: defaultLexWeights, relatedMaxDF: 0.01, relatedMax: 5, maxEnum: defaultMaxEnum,
		byName: map[string]int32{}, termID: map[string]int32{}, vectors: map[[32]byte][]float32{},
	}
	for _, o := range opts {
		o(x)
	}
	return x
}

// Len returns how many tools the index holds.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byName)
}

// Version returns the version of the View the last Sync or Apply read.
func (x *Index) Version() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.version
}

// Apply brings the tools named by qualified name to what v holds: a name
// v has is (re)indexed unless the index already holds that very tool, a
// name it lacks is removed. It costs the names given, not the fleet: hand
// it the names of a catalog event's Diff (see Touched) and the View read
// after the event. Apply, like Sync, makes the index follow a View: what
// Put gave it goes, and Put is refused from then on.
func (x *Index) Apply(v *snapshot.View, names ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.followLocked()
	x.applyLocked(v, names)
}

// followLocked makes the index follow a View from now on: the servers Put
// gave it go.
func (x *Index) followLocked() {
	if x.follows {
		return
	}
	x.follows = true
	if x.own != nil {
		for id := range x.docs {
			if x.docs[id].qualified != "" {
				x.removeLocked(int32(id))
			}
		}
		x.own = nil
	}
}

func (x *Index) applyLocked(v *snapshot.View, names []string) {
	for _, name := range names {
		t, ok := v.Tool(name)
		id, held := x.byName[name]
		switch {
		case !ok && held:
			x.removeLocked(id)
		case ok && held && x.docs[id].tool == t:
		case ok:
			if held {
				x.removeLocked(id)
			}
			x.addLocked(t, catalogHash(v, t.Server()))
		}
	}
	x.version = max(x.version, v.Version())
}

// Touched returns the qualified names a catalog change touched: added,
// removed, changed and promoted. Quarantined names are among the added,
// and Apply finds that the View gives them to another tool.
func Touched(d snapshot.Diff) []string {
	names := slices.Concat(d.Added, d.Removed, d.Changed)
	for _, p := range d.Promoted {
		names = append(names, p.Qualified)
	}
	return names
}

// Sync brings the whole index to v: it walks v's tools, indexes the new
// and changed ones, and removes the ones v no longer has. A tool whose
// server's catalog hash is the one it was indexed under keeps its terms,
// so a Sync after a reconnect that fetched the same catalog only compares;
// a tool of a changed catalog is indexed again.
// It costs O(tools in v); Apply costs what changed.
func (x *Index) Sync(v *snapshot.View) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.followLocked()
	x.mark++
	hashes := map[string]string{}
	for i := range v.NumTools() {
		t := v.ToolAt(i)
		server := t.Server()
		h, ok := hashes[server]
		if !ok {
			h = catalogHash(v, server)
			hashes[server] = h
		}
		id, held := x.byName[t.Qualified()]
		if held {
			d := &x.docs[id]
			if d.tool == t || d.server == server && d.hash == h {
				d.tool = t
				d.mark = x.mark
				continue
			}
			x.removeLocked(id)
		}
		id = x.addLocked(t, h)
		x.docs[id].mark = x.mark
	}
	for id := range x.docs {
		if d := &x.docs[id]; d.qualified != "" && d.mark != x.mark {
			x.removeLocked(int32(id))
		}
	}
	x.version = v.Version()
}

// SetVocabulary changes the index's vocabulary to a copy of v and indexes
// every tool again with it: it costs what a first Sync of the same tools
// costs, and searches wait for it.
func (x *Index) SetVocabulary(v *Vocabulary) {
	voc := v.compile()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.voc = voc
	for id := range x.docs {
		d := x.docs[id]
		if d.qualified == "" {
			continue
		}
		x.removeLocked(int32(id))
		nid := x.addLocked(d.tool, d.hash)
		x.docs[nid].mark = d.mark
	}
}

func catalogHash(v *snapshot.View, server string) string {
	c, _ := v.Catalog(server)
	return c.Hash()
}

// addLocked indexes t and returns its doc id.
func (x *Index) addLocked(t snapshot.Tool, hash string) int32 {
	var id int32
	if n := len(x.free); n > 0 {
		id, x.free = x.free[n-1], x.free[:n-1]
	} else {
		id = int32(len(x.docs))
		x.docs = append(x.docs, doc{})
		x.lens = append(x.lens, [numFields]uint16{})
	}
	def := t.Definition()
	d := doc{tool: t, qualified: t.Qualified(), server: t.Server(), hash: hash, hints: hintsOf(def.Annotations), mark: x.mark}
	if x.hybrid != nil {
		d.textHash = textHash(embedText(d.server, def))
		d.vec = x.vectors[d.textHash]
	}
	counts := map[string]*[numFields]uint8{}
	add := func(f field) func(string) {
		return func(term string) {
			c := counts[term]
			if c == nil {
				c = new([numFields]uint8)
				counts[term] = c
			}
			if c[f] < 255 {
				c[f]++
			}
			if d.lens[f] < 65535 {
				d.lens[f]++
			}
		}
	}
	voc := x.voc
	voc.tokens(def.Name, add(fieldName))
	prefix := d.server
	if p, ok := cutSuffix(d.qualified, def.Name); ok && p != "" {
		prefix = p
	}
	voc.tokens(prefix, add(fieldServer))
	title := def.Title
	if title == "" {
		title = def.Annotations.Title
	}
	voc.tokens(title, add(fieldTitle))
	voc.tokens(def.Description, add(fieldDesc))
	voc.walkParams(paramSchema(def), 0, x.maxEnum, add(fieldParam), add(fieldParamDesc))

	d.terms = make([]docTerm, 0, len(counts))
	for term, c := range counts {
		tid, ok := x.termID[term]
		if !ok {
			if n := len(x.freeTerms); n > 0 {
				tid, x.freeTerms = x.freeTerms[n-1], x.freeTerms[:n-1]
				x.terms[tid] = term
			} else {
				tid = int32(len(x.terms))
				x.terms = append(x.terms, term)
				x.postings = append(x.postings, nil)
			}
			x.termID[term] = tid
		}
		d.terms = append(d.terms, docTerm{term: tid, pos: int32(len(x.postings[tid]))})
		x.postings[tid] = append(x.postings[tid], posting{doc: id, tf: *c})
	}
	slices.SortFunc(d.terms, func(a, b docTerm) int { return int(a.term - b.term) })
	for f := range numFields {
		x.lenSum[f] += int64(d.lens[f])
	}
	x.lens[id] = d.lens
	x.docs[id] = d
	x.byName[d.qualified] = id
	return id
}

// removeLocked takes doc id out of every posting list it is in: each
// removal moves the list's last entry into its place and fixes that
// entry's back pointer.
func (x *Index) removeLocked(id int32) {
	d := &x.docs[id]
	for _, dt := range d.terms {
		list := x.postings[dt.term]
		last := len(list) - 1
		if int(dt.pos) != last {
			moved := list[last]
			list[dt.pos] = moved
			mt := x.docs[moved.doc].terms
			i, _ := slices.BinarySearchFunc(mt, dt.term, func(e docTerm, t int32) int { return int(e.term - t) })
			mt[i].pos = dt.pos
		}
		list[last] = posting{}
		x.postings[dt.term] = list[:last]
		if last == 0 {
			delete(x.termID, x.terms[dt.term])
			x.terms[dt.term] = ""
			x.postings[dt.term] = nil
			x.freeTerms = append(x.freeTerms, dt.term)
		}
	}
	for f := range numFields {
		x.lenSum[f] -= int64(d.lens[f])
	}
	x.lens[id] = [numFields]uint16{}
	delete(x.byName, d.qualified)
	*d = doc{}
	x.free = append(x.free, id)
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return "", false
}

// InputSchema returns the tool's input schema as generic JSON (maps,
// slices, strings, float64, bool): the raw schema when the server sent
// one mcp-go keeps raw, the typed one otherwise. A schema that cannot be
// read gives an empty object schema.
func InputSchema(t mcp.Tool) map[string]any {
	raw := t.RawInputSchema
	if raw == nil {
		var err error
		if raw, err = json.Marshal(t.InputSchema); err != nil {
			return map[string]any{"type": "object"}
		}
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return map[string]any{"type": "object"}
	}
	return m
}

// paramSchema is the part of the input schema the index reads: the typed
// properties as they are when mcp-go parsed them (no copy), the raw schema
// decoded otherwise.
func paramSchema(t mcp.Tool) map[string]any {
	if t.RawInputSchema == nil {
		return map[string]any{"properties": t.InputSchema.Properties}
	}
	return InputSchema(t)
}

// defaultMaxEnum is the most values an enum may have for them to be
// read. TestTuneThird measured 4, 8, 16 and no cap on users.json's tuning
// half: 4 was best there, and it carried to the other half (recall@1
// +0.019, MRR +0.015).
const defaultMaxEnum = 4

// enumValues emits the terms of the strings p's enum allows, when it
// allows most at most.
// The enum is a []any when the schema came as JSON, a []string when a
// host built the tool in Go (mcp.Enum).
func (v *vocab) enumValues(p map[string]any, most int, emit func(string)) {
	switch vals := p["enum"].(type) {
	case []any:
		if len(vals) <= most {
			for _, e := range vals {
				if s, ok := e.(string); ok {
					v.tokens(s, emit)
				}
			}
		}
	case []string:
		if len(vals) <= most {
			for _, s := range vals {
				v.tokens(s, emit)
			}
		}
	}
}

// walkParams feeds the names and descriptions of a schema's properties,
// nested ones too (objects, array items), to name and desc, and the
// values of their enums of maxEnum values at most to name.
func (v *vocab) walkParams(schema map[string]any, depth, maxEnum int, name, desc func(string)) {
	if depth > 3 {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v.tokens(k, name)
		p, _ := props[k].(map[string]any)
		if s, ok := p["description"].(string); ok {
			v.tokens(s, desc)
		}
		// A small enum names the modes a tool has ("open" or "closed",
		// "cordon", "drain" or "uncordon"): its values read as parameter
		// names. A long one lists data (devices, languages), not what
		// the tool does.
		v.enumValues(p, maxEnum, name)
		if items, ok := p["items"].(map[string]any); ok {
			v.enumValues(items, maxEnum, name)
		}
		v.walkParams(p, depth+1, maxEnum, name, desc)
		if items, ok := p["items"].(map[string]any); ok {
			v.walkParams(items, depth+1, maxEnum, name, desc)
		}
	}
}
