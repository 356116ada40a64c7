package client

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// applyRefresh publishes the lists a list_changed refresh fetched (fresh,
// the ones named by which) over l's catalog, if l is still the slot's
// lease. On failure the last good lists stay published and err is
// recorded.
func (s *slot) applyRefresh(l *lease, which uint32, fresh *catalog.Catalog, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != l {
		return
	}
	if err != nil {
		s.catalogErr = err
		s.emitLocked(Event{Kind: EventCatalogError, Err: err})
		return
	}
	if _, ok := s.m.pub.View().Catalog(s.name); !ok {
		return
	}
	// Built on the catalog l's server sent, not on the View's: that one
	// is filtered, and may be an older generation's of the same content
	// (which a refresh built on would be ignored as late).
	next := s.raw
	if next == nil || next.Generation != l.gen {
		next = l.catalog
	}
	if which&dirtyTools != 0 {
		next = next.WithTools(fresh.Tools)
	}
	if which&dirtyPrompts != 0 {
		next = next.WithPrompts(fresh.Prompts)
	}
	if which&dirtyResources != 0 {
		next = next.WithResources(fresh.Resources).WithResourceTemplates(fresh.ResourceTemplates)
	}
	s.catalogErr = nil
	l.markAnswered()
	cfg := s.config()
	if d, ok := s.publishLocked(next); ok {
		s.m.cache.save(cfg.cacheKey, next)
		if !d.Empty() {
			s.emitLocked(catalogEvent(d))
		}
	}
}

// watch waits for the lease's connection to die, and runs catalog refreshes
// asked for by list_changed notifications: one in flight, one queued.
//
// It also runs the idle probe: a server that went away with no call in
// flight and no stream to lose is noticed within two probe periods.
func (s *slot) watch(l *lease) {
	defer s.m.wg.Done()
	var (
		tick <-chan time.Time
		stop = func() bool { return false }
	)
	defer func() { stop() }()
	for {
		if tick == nil && s.m.opts.idleProbe > 0 {
			tick, stop = s.m.opts.clock.NewTimer(s.m.opts.idleProbe)
		}
		select {
		case <-l.conn.Done():
			s.lost(l, connLost(l.conn))
			return
		case <-l.ctx.Done():
			return
		case <-l.kick:
			s.refresh(l)
		case <-tick:
			tick = nil
			s.idleTick(l)
		}
	}
}

// The lists a list_changed notification can mark for refresh.
const (
	dirtyTools uint32 = 1 << iota
	dirtyPrompts
	dirtyResources
)

// onNotification runs on the transport's goroutine; it only marks work or
// hands the notification on without blocking. Every notification the
// Manager acts on is first charged to the server's budget (before it is
// decoded): one over the rate is dropped and counted. A dropped
// list_changed still marks its list, which the next refresh fetches, or
// the drop report, at most a second later, asks for. Each one, dropped or
// not, counts as use of the server against its IdleTimeout.
func (l *lease) onNotification(n mcp.JSONRPCNotification) {
	var bit uint32
	switch n.Method {
	case mcp.MethodNotificationSubscriptionsAcknowledged:
		l.listen.acknowledged()
		return
	case mcp.MethodNotificationToolsListChanged:
		bit = dirtyTools
	case mcp.MethodNotificationPromptsListChanged:
		bit = dirtyPrompts
	case mcp.MethodNotificationResourcesListChanged:
		bit = dirtyResources
	case string(mcp.MethodNotificationProgress), string(mcp.MethodNotificationMessage),
		mcp.MethodNotificationResourceUpdated, mcp.MethodNotificationTasksStatus:
	default:
		return
	}
	l.used()
	if !l.slot.allowNotification() {
		if bit != 0 {
			l.dirty.Or(bit)
		}
		return
	}
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		l.onProgress(n)
	case string(mcp.MethodNotificationMessage):
		l.onLog(n)
	case mcp.MethodNotificationResourceUpdated:
		l.onResourceUpdated(n)
	case mcp.MethodNotificationTasksStatus:
		l.slot.m.tasks.onStatus(l, n)
	default:
		l.dirty.Or(bit)
		l.wantRefresh()
	}
}

// wantRefresh asks the watcher for a refresh of the marked lists.
func (l *lease) wantRefresh() {
	select {
	case l.kick <- struct{}{}:
	default: // a refresh is already queued; it will see the bits
	}
}

// refreshIfDirty asks for a refresh if lists are marked: those whose
// list_changed the budget dropped.
func (l *lease) refreshIfDirty() {
	if l.dirty.Load() != 0 {
		l.wantRefresh()
	}
}

// refresh refetches the lists that list_changed marked, and republishes the
// catalog if l is still the slot's lease. On failure the last good lists
// stay published and the error is recorded.
func (s *slot) refresh(l *lease) {
	which := l.dirty.Swap(0)
	if which == 0 {
		return
	}
	if !l.beginOwn() {
		return // detached meanwhile: nothing goes out on it
	}
	ctx, cancel := l.watcherCtx(s.m.opts.dialTimeout)
	var fresh catalog.Catalog
	err := fetchLists(ctx, s.m.listTools(s, l.client), l.client, l.catalog.Capabilities, which, s.config().limits, &fresh)
	cancel()
	l.endOwn()
	if connErr(l.conn) != nil {
		return // the watcher reports the death next
	}
	s.applyRefresh(l, which, &fresh, err)
}

// watcherCtx is the context of a request the watcher itself makes on l (a
// catalog refresh, an idle probe). It ends after timeout, at detach, and
// as soon as the connection is known dead: the watcher is the one that
// notices that death, and while it waits for an answer it notices nothing,
// and an answer on a dead connection may never come (mcp-go's SSE
// transport waits for it on a stream that is gone). The helper goroutine
// lives as long as the request; cancel waits for it.
func (l *lease) watcherCtx(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-l.conn.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(); <-done }
}
