package client

import (
	"context"
	"sync"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// ToolSearch is a tool-search index over a Manager's View that follows its
// catalog changes: each catalog event re-indexes the tools its Diff names,
// so a change costs the changed server's tools, not the fleet's. It is
// safe for concurrent use. Make one with Manager.NewToolSearch; Close it
// (or close the Manager) to stop following.
//
// The index trails the View by the time an event takes to arrive (events
// are delivered in order by one goroutine); Sync catches up at once, at the
// cost of a walk of the whole View. Should the follower ever fall 256
// events behind, the Manager drops events for it, and it learns so, and
// walks the View, with the next event it gets.
//
// A hybrid index (toolsearch.WithHybrid) gets its vectors from a goroutine
// of its own after each update, so that a slow embedding API never holds
// up the catalog's events: the tools without a vector yet rank by their
// words meanwhile. A failed embedding is tried again at the next update
// (or by Embed); EmbedErr tells the last one's error.
type ToolSearch struct {
	// Set at creation, read-only.
	m      *Manager
	index  *toolsearch.Index
	cancel func()        // ends the subscription and the embedder's context
	done   chan struct{} // closed when the follower and the embedder have ended
	once   sync.Once
	embed  chan struct{} // one pending request for the embedder, or none

	mu       sync.Mutex
	updated  chan struct{} // guarded by mu; closed and replaced after each update
	embedErr error         // guarded by mu; the last Embed's error
}

// NewToolSearch returns a ToolSearch over m's tools with the index options
// given (weights, BM25 parameters). It subscribes to m's events, so it
// sees every change after it returns.
func (m *Manager) NewToolSearch(opts ...toolsearch.Option) *ToolSearch {
	ts := &ToolSearch{m: m, index: toolsearch.New(opts...), done: make(chan struct{}),
		updated: make(chan struct{}), embed: make(chan struct{}, 1)}
	events, unsubscribe := m.Events(0)
	ctx, stop := context.WithCancel(context.Background())
	ts.cancel = func() { unsubscribe(); stop() }
	// Events first, then index the View: a change in between is both
	// in the View and in an event, and applying it twice is harmless.
	ts.index.Sync(m.View())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ts.follow(events)
		stop() // the Manager closed: nothing more to embed
	}()
	if ts.index.Hybrid() {
		ts.requestEmbed()
		wg.Add(1)
		go func() { defer wg.Done(); ts.embedder(ctx) }()
	}
	go func() { wg.Wait(); close(ts.done) }()
	return ts
}

// requestEmbed asks the embedder for a pass, unless one is pending.
func (ts *ToolSearch) requestEmbed() {
	select {
	case ts.embed <- struct{}{}:
	default:
	}
}

// embedder gives the index's new tools their vectors, one pass per
// request, until ctx ends.
func (ts *ToolSearch) embedder(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ts.embed:
		}
		err := ts.index.Embed(ctx)
		if ctx.Err() != nil {
			return
		}
		ts.mu.Lock()
		ts.embedErr = err
		ts.mu.Unlock()
		ts.notify()
	}
}

// EmbedErr returns the error of the last embedding pass of a hybrid
// index, nil after a pass that succeeded.
func (ts *ToolSearch) EmbedErr() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.embedErr
}

// Embed gives every tool without a vector one now (see
// toolsearch.Index.Embed), as the follower does after each update.
func (ts *ToolSearch) Embed(ctx context.Context) error {
	err := ts.index.Embed(ctx)
	ts.notify()
	return err
}

func (ts *ToolSearch) follow(events <-chan Event) {
	for e := range events {
		switch {
		case e.Dropped > 0:
			// Lost events: names went by unseen.
			ts.index.Sync(ts.m.View())
		case e.Kind == EventCatalog && e.Diff != nil:
			ts.index.Apply(ts.m.View(), toolsearch.Touched(*e.Diff)...)
		default:
			continue
		}
		if ts.index.Hybrid() {
			ts.requestEmbed()
		}
		ts.notify()
	}
}

// notify wakes the waiters of WaitUntil.
func (ts *ToolSearch) notify() {
	ts.mu.Lock()
	close(ts.updated)
	ts.updated = make(chan struct{})
	ts.mu.Unlock()
}

// WaitUntil waits until cond, called with the index after each update it
// takes, returns true, or ctx ends. A host that must see its own change
// (a server it just added) in a search waits for it here instead of
// polling.
func (ts *ToolSearch) WaitUntil(ctx context.Context, cond func(*toolsearch.Index) bool) error {
	for {
		ts.mu.Lock()
		updated := ts.updated
		ts.mu.Unlock()
		if cond(ts.index) {
			return nil
		}
		select {
		case <-updated:
		case <-ts.done:
			if cond(ts.index) {
				return nil
			}
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Search answers q over the tools the index holds.
func (ts *ToolSearch) Search(q toolsearch.Query) ([]toolsearch.Hit, error) { return ts.index.Search(q) }

// SearchContext answers q, embedding its text first when the index is
// hybrid: see toolsearch.Index.SearchContext.
func (ts *ToolSearch) SearchContext(ctx context.Context, q toolsearch.Query) ([]toolsearch.Hit, error) {
	return ts.index.SearchContext(ctx, q)
}

// SearchTools returns the k tools that best match query (BM25 over names,
// descriptions and parameters), best first.
func (ts *ToolSearch) SearchTools(query string, k int) []toolsearch.Hit {
	hits, _ := ts.index.Search(toolsearch.Query{Text: query, K: k}) // the BM25 mode has no error
	return hits
}

// Select chooses a tool budget: see toolsearch.Index.Select.
func (ts *ToolSearch) Select(b toolsearch.Budget) (toolsearch.Selection, error) {
	return ts.index.Select(b)
}

// Sync brings the index to the current View now, without waiting for the
// events of the latest changes.
func (ts *ToolSearch) Sync() {
	ts.index.Sync(ts.m.View())
	if ts.index.Hybrid() {
		ts.requestEmbed()
	}
	ts.notify()
}

// Index returns the index itself, for a host that reads it directly.
func (ts *ToolSearch) Index() *toolsearch.Index { return ts.index }

// Close stops following the Manager and embedding, and waits for the
// follower and the embedder to end.
func (ts *ToolSearch) Close() {
	ts.once.Do(ts.cancel)
	<-ts.done
}
