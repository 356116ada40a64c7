package toolsearch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Embedder turns texts into vectors, for an index that ranks by meaning as
// well as by words (see Hybrid). The adapter modules have embedders on
// the providers' embedding APIs (llm/openai, llm/gemini).
type Embedder interface {
	// Embed returns one vector per text, in the order of texts, all of
	// one length. It is called with at most Hybrid.Batch texts at once and
	// never while the index is locked; it must honour ctx.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// QueryEmbedder is an Embedder whose model embeds a query differently
// from the texts it is matched against (Gemini's task types, say):
// SearchContext embeds a query with EmbedQuery when the Embedder has it.
type QueryEmbedder interface {
	Embedder
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// Defaults of a Hybrid that sets none.
const (
	// DefaultEmbedBatch is the most texts an index hands one Embed call
	// (the Gemini API takes 100 at most, OpenAI's 2,048).
	DefaultEmbedBatch = 100
	// DefaultFusionDepth is how many hits of each ranking are fused.
	DefaultFusionDepth = 50
	// DefaultRRFK is the k of reciprocal rank fusion: a hit at rank r of a
	// ranking scores 1/(k+r), so that the first ranks of both rankings
	// count and no one ranking's scores dominate.
	DefaultRRFK = 60
)

// Hybrid makes an index rank by the meaning of a tool's text as well as
// by its words: each tool's name, title and description are embedded once
// (and again only when they change: vectors are kept by a hash of the
// text), a query is embedded when it is asked (SearchContext) or brought
// as a vector (Query.Vector), and the lexical ranking and the ranking by
// cosine similarity are fused by reciprocal rank. Without a Hybrid, or
// for a query without a vector, an index ranks by words alone and needs
// nothing.
type Hybrid struct {
	// Embedder embeds tools and queries.
	Embedder Embedder
	// Batch is the most texts one Embed call gets. Defaults to
	// DefaultEmbedBatch.
	Batch int
	// Depth is how many hits of each ranking are fused. Defaults to
	// DefaultFusionDepth.
	Depth int
	// RRFK is the k of reciprocal rank fusion. Defaults to DefaultRRFK.
	RRFK float64
	// MinSimilarity is the cosine similarity from which the vectors vouch
	// for a hit: a hit is weak when its lexical Match is under the index's
	// MinMatch and its Similarity under MinSimilarity. It depends on the
	// embedding model, so it has no default: zero leaves weakness to the
	// words.
	MinSimilarity float64
}

// WithHybrid makes the index rank by meaning as well as by words: see
// Hybrid. The tools' vectors are made by Index.Embed.
func WithHybrid(h Hybrid) Option {
	return func(x *Index) {
		if h.Batch <= 0 {
			h.Batch = DefaultEmbedBatch
		}
		if h.Depth <= 0 {
			h.Depth = DefaultFusionDepth
		}
		if h.RRFK <= 0 {
			h.RRFK = DefaultRRFK
		}
		x.hybrid = &h
	}
}

// Hybrid reports whether the index ranks by meaning too (WithHybrid).
func (x *Index) Hybrid() bool { return x.hybrid != nil }

// ErrEmbed is what an embedder's failure wraps.
var ErrEmbed = errors.New("mcpfleet: toolsearch: embed")

// embedText is what is embedded of a tool: its server and name, title and
// description, as a person would read them.
func embedText(server string, def mcp.Tool) string {
	var b strings.Builder
	b.WriteString(server)
	b.WriteString(": ")
	b.WriteString(strings.NewReplacer("_", " ", "-", " ").Replace(def.Name))
	title := def.Title
	if title == "" {
		title = def.Annotations.Title
	}
	if title != "" {
		b.WriteString(" (")
		b.WriteString(title)
		b.WriteString(")")
	}
	if def.Description != "" {
		b.WriteString("\n")
		desc := def.Description
		if len(desc) > 2000 {
			desc = desc[:2000]
		}
		b.WriteString(desc)
	}
	return b.String()
}

// textHash keys the vector cache.
func textHash(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// Pending returns how many tools have no vector yet: the work the next
// Embed has. It is zero for an index without a Hybrid.
func (x *Index) Pending() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := 0
	for i := range x.docs {
		if d := &x.docs[i]; d.qualified != "" && d.vec == nil && x.hybrid != nil {
			n++
		}
	}
	return n
}

// Embed gives a vector to every tool that has none: a tool whose text the
// index embedded before (the same tool after a reconnect, or a catalog
// change that left it alone) takes its vector from the cache, and only
// the texts never seen are sent to the Embedder, Hybrid.Batch at a time,
// without holding the index: searches go on meanwhile, lexically for the
// tools still without a vector. On an error the vectors made so far are
// kept and the error, wrapping ErrEmbed, is returned. An index without a
// Hybrid has nothing to embed.
func (x *Index) Embed(ctx context.Context) error {
	if x.hybrid == nil {
		return nil
	}
	x.embedMu.Lock()
	defer x.embedMu.Unlock()
	x.mu.Lock()
	var texts []string
	var keys [][32]byte
	seen := map[[32]byte]bool{}
	for i := range x.docs {
		d := &x.docs[i]
		if d.qualified == "" || d.vec != nil {
			continue
		}
		if v, ok := x.vectors[d.textHash]; ok {
			d.vec = v
			continue
		}
		if !seen[d.textHash] {
			seen[d.textHash] = true
			keys = append(keys, d.textHash)
			texts = append(texts, embedText(d.server, d.tool.Definition()))
		}
	}
	x.mu.Unlock()

	for start := 0; start < len(texts); start += x.hybrid.Batch {
		end := min(start+x.hybrid.Batch, len(texts))
		vecs, err := x.embed(ctx, texts[start:end])
		if err != nil {
			return err
		}
		x.mu.Lock()
		for i, v := range vecs {
			x.vectors[keys[start+i]] = v
		}
		x.attachLocked()
		x.mu.Unlock()
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	// Keep the vectors of the tools the index holds, no others.
	live := make(map[[32]byte]bool, len(x.byName))
	for i := range x.docs {
		if d := &x.docs[i]; d.qualified != "" {
			live[d.textHash] = true
		}
	}
	for k := range x.vectors {
		if !live[k] {
			delete(x.vectors, k)
		}
	}
	return nil
}

// attachLocked gives the cached vectors to the docs that lack them.
func (x *Index) attachLocked() {
	for i := range x.docs {
		if d := &x.docs[i]; d.qualified != "" && d.vec == nil {
			d.vec = x.vectors[d.textHash]
		}
	}
}

// embed calls the Embedder and checks its answer: one vector per text,
// all of one length, none empty; they come back normalized, so that a dot
// product is their cosine.
func (x *Index) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := x.hybrid.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %d texts: %w", ErrEmbed, len(texts), err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbed, len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) == 0 || len(v) != len(vecs[0]) {
			return nil, fmt.Errorf("%w: vector %d has %d dimensions, vector 0 has %d", ErrEmbed, i, len(v), len(vecs[0]))
		}
		vecs[i] = normalize(v)
	}
	return vecs, nil
}

// normalize returns v scaled to length 1, a copy.
func normalize(v []float32) []float32 {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	inv := float32(1 / math.Sqrt(sum))
	for i, f := range v {
		out[i] = f * inv
	}
	return out
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// SearchContext is Search that embeds the query's text first, when the
// index is hybrid and the query has no Vector; otherwise it is Search. If
// the Embedder fails, it returns the lexical hits and the error (wrapping
// ErrEmbed).
func (x *Index) SearchContext(ctx context.Context, q Query) ([]Hit, error) {
	if x.hybrid == nil || q.Vector != nil || q.Mode != ModeBM25 || strings.TrimSpace(q.Text) == "" {
		return x.Search(q)
	}
	vec, err := x.embedQuery(ctx, q.Text)
	if err != nil {
		hits, serr := x.Search(q)
		return hits, errors.Join(err, serr)
	}
	q.Vector = vec
	return x.Search(q)
}

// embedQuery embeds a query's text, with EmbedQuery when the Embedder has
// it.
func (x *Index) embedQuery(ctx context.Context, text string) ([]float32, error) {
	qe, ok := x.hybrid.Embedder.(QueryEmbedder)
	if !ok {
		vecs, err := x.embed(ctx, []string{text})
		if err != nil {
			return nil, err
		}
		return vecs[0], nil
	}
	v, err := qe.EmbedQuery(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("%w: query: %w", ErrEmbed, err)
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("%w: query: an empty vector", ErrEmbed)
	}
	return v, nil
}

// fuseLocked ranks the docs of the lexical ranking (best first) and of
// the vector ranking together by reciprocal rank, and returns the k best
// under the caps.
func (x *Index) fuseLocked(lexical []Hit, qv []float32, f filter, k int) ([]Hit, error) {
	h := x.hybrid
	if len(qv) == 0 {
		return nil, fmt.Errorf("mcpfleet: toolsearch: query: empty vector")
	}
	qv = normalize(qv)
	type cand struct {
		id    int32
		sim   float32
		score float64
		lex   *Hit
	}
	var byVec []cand
	for i := range x.docs {
		d := &x.docs[i]
		if d.qualified == "" || d.vec == nil || !f.keep(d) {
			continue
		}
		if len(d.vec) != len(qv) {
			return nil, fmt.Errorf("mcpfleet: toolsearch: query: the vector has %d dimensions, the tools' %d", len(qv), len(d.vec))
		}
		byVec = append(byVec, cand{id: int32(i), sim: dot(qv, d.vec)})
	}
	slices.SortFunc(byVec, func(a, b cand) int {
		if a.sim != b.sim {
			if a.sim > b.sim {
				return -1
			}
			return 1
		}
		return strings.Compare(x.docs[a.id].qualified, x.docs[b.id].qualified)
	})
	byVec = byVec[:min(len(byVec), h.Depth)]
	fused := map[int32]*cand{}
	for r := range lexical {
		id := x.byName[lexical[r].Qualified]
		fused[id] = &cand{id: id, score: 1 / (h.RRFK + float64(r+1)), lex: &lexical[r], sim: -2}
	}
	for r, c := range byVec {
		e, ok := fused[c.id]
		if !ok {
			e = &cand{id: c.id}
			fused[c.id] = e
		}
		e.sim = c.sim
		e.score += 1 / (h.RRFK + float64(r+1))
	}
	all := make([]*cand, 0, len(fused))
	for _, c := range fused {
		if c.sim == -2 {
			// Ranked by its words only: its vector is missing or
			// below the vector ranking's depth.
			if v := x.docs[c.id].vec; v != nil {
				c.sim = dot(qv, v)
			} else {
				c.sim = 0
			}
		}
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b *cand) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(x.docs[a.id].qualified, x.docs[b.id].qualified)
	})
	c := counter{caps: f.caps}
	var hits []Hit
	for _, e := range all {
		if k >= 0 && len(hits) == k {
			break
		}
		if !c.take(x.docs[e.id].server) {
			continue
		}
		var match float64
		if e.lex != nil {
			match = e.lex.Match
		}
		hit := x.hitLocked(e.id, e.score, match)
		hit.Similarity = float64(e.sim)
		hit.Weak = match < x.minMatch && (h.MinSimilarity == 0 || hit.Similarity < h.MinSimilarity)
		hits = append(hits, hit)
	}
	return hits, nil
}
