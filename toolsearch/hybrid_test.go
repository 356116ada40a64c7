package toolsearch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// conceptEmbedder is a stand-in for an embedding model: each dimension is
// a concept, and a text's vector counts the words of each concept it
// holds. It records every call.
type conceptEmbedder struct {
	mu      sync.Mutex
	calls   [][]string
	fail    error
	block   chan struct{} // when set, Embed waits for it
	entered chan struct{} // when set, Embed sends on it first
}

var concepts = [][]string{
	{"elevation", "altitude", "high", "sea", "height"},
	{"file", "files", "written", "contents", "read"},
	{"issue", "bug", "ticket", "crash"},
	{"message", "channel", "tell", "slack"},
	{"delete", "forget", "remove"},
}

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, slices.Clone(texts))
	fail, block, entered := e.fail, e.block, e.entered
	e.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(concepts)+1)
		v[len(concepts)] = 0.1 // no text is the zero vector
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r < 'a' || r > 'z' }) {
			for c, words := range concepts {
				if slices.Contains(words, w) {
					v[c]++
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func (e *conceptEmbedder) texts() (calls, texts int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.calls {
		texts += len(c)
	}
	return len(e.calls), texts
}

func hybridFleet(t *testing.T, e Embedder, batch int) *Index {
	t.Helper()
	x := New(WithHybrid(Hybrid{Embedder: e, Batch: batch}))
	if err := x.Put("maps",
		tool("maps_elevation", "Get elevation data for locations on the earth"),
		tool("maps_geocode", "Convert an address into geographic coordinates"),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Put("fs",
		tool("read_text_file", "Read the complete contents of a file as text"),
		tool("write_file", "Create a new file or overwrite one"),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Put("gh", tool("create_issue", "Create a new issue in a GitHub repository")); err != nil {
		t.Fatal(err)
	}
	return x
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A query no word of which a tool holds is found by its meaning, fused
// with the words' ranking; the same query lexically finds nothing.
func TestHybridFindsByMeaning(t *testing.T) {
	e := &conceptEmbedder{}
	x := hybridFleet(t, e, 2)
	if x.Pending() != 5 {
		t.Fatalf("Pending %d before Embed, want 5", x.Pending())
	}
	if err := x.Embed(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if x.Pending() != 0 {
		t.Fatalf("Pending %d after Embed", x.Pending())
	}
	const q = "how high above sea level is Denver"
	if hits := mustSearch(t, x, Query{Text: q, K: 1}); len(hits) > 0 && hits[0].Qualified == "maps__maps_elevation" {
		t.Fatalf("the words alone already find it: %v", names(hits))
	}
	hits, err := x.SearchContext(ctxT(t), Query{Text: q, K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Qualified != "maps__maps_elevation" || hits[0].Similarity < 0.9 {
		t.Fatalf("hybrid: %+v", hits)
	}
	// Weakness is the words' unless MinSimilarity lets the vectors vouch.
	if !hits[0].Weak {
		t.Errorf("no word matched, and no MinSimilarity: not weak")
	}
	y := New(WithHybrid(Hybrid{Embedder: e, MinSimilarity: 0.8}))
	if err := y.Put("maps", tool("maps_elevation", "Get elevation data for locations on the earth")); err != nil {
		t.Fatal(err)
	}
	if err := y.Embed(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	hits, err = y.SearchContext(ctxT(t), Query{Text: q, Abstain: true})
	if err != nil || len(hits) != 1 || hits[0].Weak {
		t.Errorf("with MinSimilarity 0.8: %+v, %v", hits, err)
	}
	// A host's own vector does the same without a context.
	vec, _ := e.Embed(ctxT(t), []string{q})
	if hits := mustSearch(t, x, Query{Text: q, Vector: vec[0], K: 1}); len(hits) != 1 || hits[0].Qualified != "maps__maps_elevation" {
		t.Errorf("Query.Vector: %v", names(hits))
	}
	if _, err := x.Search(Query{Text: q, Vector: []float32{}}); err == nil {
		t.Errorf("an empty vector was taken")
	}
}

// Embeddings are kept by a hash of the tool's text: Embed sends each text
// once, in batches; a Put of the same tools (a reconnect) sends none, a
// changed tool sends its own text only, and a tool that went and came
// back is not embedded again while its vector is kept.
func TestHybridEmbedsOnlyWhatChanged(t *testing.T) {
	e := &conceptEmbedder{}
	x := hybridFleet(t, e, 2)
	ctx := ctxT(t)
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, texts := e.texts(); calls != 3 || texts != 5 {
		t.Fatalf("first Embed: %d calls, %d texts; want 3 calls (batches of 2), 5 texts", calls, texts)
	}
	// The same tools again: nothing to embed.
	if err := x.Put("fs",
		tool("read_text_file", "Read the complete contents of a file as text"),
		tool("write_file", "Create a new file or overwrite one"),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, texts := e.texts(); calls != 3 || texts != 5 {
		t.Fatalf("after the same Put: %d calls, %d texts", calls, texts)
	}
	// One tool changed: its text alone.
	if err := x.Put("fs",
		tool("read_text_file", "Read the complete contents of a file as text"),
		tool("write_file", "Create a new file, or overwrite an existing one"),
	); err != nil {
		t.Fatal(err)
	}
	if x.Pending() != 1 {
		t.Errorf("Pending %d after one change, want 1", x.Pending())
	}
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	last := e.calls[len(e.calls)-1]
	e.mu.Unlock()
	if calls, texts := e.texts(); calls != 4 || texts != 6 || !strings.Contains(last[0], "an existing one") {
		t.Errorf("after one change: %d calls, %d texts, last %q", calls, texts, last)
	}
	// Two tools of one text are embedded once.
	if err := x.Put("fs2", tool("read_text_file", "Read the complete contents of a file as text")); err != nil {
		t.Fatal(err)
	}
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	if calls, _ := e.texts(); calls != 5 {
		t.Errorf("a second server's copy: %d calls, want 5 (its server is in its text)", calls)
	}
}

// An Embedder that fails leaves the vectors made so far and the error;
// SearchContext answers with the words alone and the error. Bad vectors
// are refused, naming what is wrong.
func TestHybridEmbedderFails(t *testing.T) {
	boom := errors.New("quota exceeded")
	e := &conceptEmbedder{}
	x := hybridFleet(t, e, 2)
	ctx := ctxT(t)
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.Put("slack", tool("post_message", "Post a message to a Slack channel")); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	e.fail = boom
	e.mu.Unlock()
	if err := x.Embed(ctx); !errors.Is(err, ErrEmbed) || !errors.Is(err, boom) {
		t.Errorf("Embed: %v", err)
	}
	if x.Pending() != 1 {
		t.Errorf("Pending %d, want 1 (the others kept their vectors)", x.Pending())
	}
	hits, err := x.SearchContext(ctx, Query{Text: "report a bug", K: 1})
	if !errors.Is(err, boom) || len(hits) != 1 || hits[0].Qualified != "gh__create_issue" {
		t.Errorf("SearchContext: %v, %v", names(hits), err)
	}

	bad := New(WithHybrid(Hybrid{Embedder: embedFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, 3+i)
			out[i][0] = 1
		}
		return out, nil
	})}))
	if err := bad.Put("s", tool("a", "one"), tool("b", "two")); err != nil {
		t.Fatal(err)
	}
	if err := bad.Embed(ctx); !errors.Is(err, ErrEmbed) || !strings.Contains(err.Error(), "vector 1 has 4 dimensions") {
		t.Errorf("uneven vectors: %v", err)
	}
	if _, err := x.Search(Query{Text: "bug", Vector: []float32{1, 2}}); err == nil || !strings.Contains(err.Error(), "dimensions") {
		t.Errorf("short query vector: %v", err)
	}
	if _, err := New().Search(Query{Text: "bug", Vector: []float32{1}}); err == nil {
		t.Error("a Vector for an index without a Hybrid: no error")
	}
}

type embedFunc func(context.Context, []string) ([][]float32, error)

func (f embedFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

// Embed holds no lock while the Embedder works: searches and updates go
// on, and a tool put meanwhile is embedded by the next Embed. Cancelling
// the context ends a blocked Embed.
func TestHybridEmbedDoesNotBlock(t *testing.T) {
	e := &conceptEmbedder{block: make(chan struct{}), entered: make(chan struct{})}
	x := hybridFleet(t, e, 100)
	done := make(chan error, 1)
	go func() { done <- x.Embed(ctxT(t)) }()
	select {
	case <-e.entered:
	case err := <-done:
		t.Fatalf("Embed returned before calling the Embedder: %v", err)
	}
	if hits := mustSearch(t, x, Query{Text: "report a bug", K: 1}); len(hits) != 1 {
		t.Errorf("search during Embed: %v", names(hits))
	}
	if err := x.Put("slack", tool("post_message", "Post a message to a Slack channel")); err != nil {
		t.Fatal(err)
	}
	close(e.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if x.Pending() != 1 {
		t.Errorf("Pending %d, want 1 (the tool put during Embed)", x.Pending())
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.block = make(chan struct{})
	e.mu.Unlock()
	go func() { done <- x.Embed(ctx) }()
	<-e.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Embed: %v", err)
	}
}
