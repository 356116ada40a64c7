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
type ToolSearch struct {
	m      *Manager
	index  *toolsearch.Index
	cancel func()
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	updated chan struct{} // guarded by mu; closed and replaced after each update
}

// NewToolSearch returns a ToolSearch over m's tools with the index options
// given (weights, BM25 parameters). It subscribes to m's events, so it
// sees every change after it returns.
func (m *Manager) NewToolSearch(opts ...toolsearch.Option) *ToolSearch {
	ts := &ToolSearch{m: m, index: toolsearch.New(opts...), done: make(chan struct{}), updated: make(chan struct{})}
	events, cancel := m.Subscribe(0)
	ts.cancel = cancel
	// Subscribe first, then index the View: a change in between is both
	// in the View and in an event, and applying it twice is harmless.
	ts.index.Sync(m.View())
	go ts.follow(events)
	return ts
}

func (ts *ToolSearch) follow(events <-chan Event) {
	defer close(ts.done)
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
	ts.notify()
}

// Index returns the index itself, for a host that reads it directly.
func (ts *ToolSearch) Index() *toolsearch.Index { return ts.index }

// Close stops following the Manager and waits for the follower to end.
func (ts *ToolSearch) Close() {
	ts.once.Do(ts.cancel)
	<-ts.done
}
