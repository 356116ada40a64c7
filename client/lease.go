package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// lease is one live runtime: an initialized mcp-go client over a Conn,
// stamped with the generation it was installed under. A slot holds at most
// one; once detached, nothing new starts on it and its reports are ignored.
type lease struct {
	gen         uint64 // set under the slot's lock when installed; then fixed
	slot        *slot
	conn        Conn
	client      *mcpclient.Client
	ctx         context.Context // cancelled at detach; while it lives the lease is live
	cancel      context.CancelFunc
	protocol    string
	connectedAt time.Time
	catalog     *catalog.Catalog // the catalog fetched at dial; sealed at install

	calls    sync.WaitGroup // calls in flight; Disable drains them
	inflight atomic.Int64
	timedOut atomic.Bool // a call timed out since the last success
	// answered is set once the server answered a request after the
	// handshake: the connection was healthy, so its loss is not part of a
	// crash loop (see machine.Budget).
	answered atomic.Bool
	// active is set when a call ends; the idle probe clears it, and probes
	// only when it was already clear.
	active atomic.Bool

	dirty atomic.Uint32 // lists that list_changed asked to refresh
	kick  chan struct{} // capacity 1: a refresh is wanted

	// Idle shutdown (idle.go). lastUse and serving are atomics, written
	// where the use happens; idleStop and idleSeq are guarded by the
	// slot's lock.
	lastUse  atomic.Int64 // UnixNano on the Manager's clock of the last use; kept only under an IdleTimeout
	serving  atomic.Int64 // requests of the server's that the host is answering
	idleStop func() bool  // stops the armed idle check; nil if none is armed
	idleSeq  uint64       // numbers the armed idle check, so a stale one drops itself

	listen listenState // its own subscriptions/listen stream (listen.go)
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
	case mcp.MethodNotificationToolsListChanged:
		bit = dirtyTools
	case mcp.MethodNotificationPromptsListChanged:
		bit = dirtyPrompts
	case mcp.MethodNotificationResourcesListChanged:
		bit = dirtyResources
	case string(mcp.MethodNotificationProgress), string(mcp.MethodNotificationMessage),
		mcp.MethodNotificationResourceUpdated:
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
	ctx, cancel := l.watcherCtx(s.m.opts.dialTimeout)
	defer cancel()
	var fresh catalog.Catalog
	err := fetchLists(ctx, l.client, l.catalog.Capabilities, which, s.config().limits, &fresh)
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

// markAnswered records that the server answered a request on l. It stores
// only once, so that the call path does not write a shared cache line on
// every call.
func (l *lease) markAnswered() {
	if !l.answered.Load() {
		l.answered.Store(true)
	}
	if !l.active.Load() {
		l.active.Store(true)
	}
}

// connErr returns the Conn's own account of its death, if it died.
func connErr(c Conn) error {
	select {
	case <-c.Done():
		if err := c.Err(); err != nil {
			return err
		}
		return errConnDone
	default:
		return nil
	}
}

var errConnDone = errors.New("connection closed")

// deathReportWait bounds how long a failure waits for its Conn to report
// why it died.
const deathReportWait = 100 * time.Millisecond

// explain adds the Conn's own account of its death to a fatal err. mcp-go sees a dead child's EOF before the exit watcher has reaped it,
// so the account may be a moment behind: wait for it, briefly.
func explain(c Conn, err error) error {
	if !fatal(c, err) {
		return err
	}
	t := time.NewTimer(deathReportWait)
	defer t.Stop()
	select {
	case <-c.Done():
	case <-t.C:
	}
	if cause := connErr(c); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// connLost is the cause recorded when a Conn's Done channel closed.
func connLost(c Conn) error {
	if err := c.Err(); err != nil {
		return wrapCause("connection lost", err)
	}
	return fmt.Errorf("connection lost: %w", errConnDone)
}

// drain waits for l's calls in flight to end, until the drain timeout
// passes or the manager closes.
func (m *Manager) drain(l *lease) {
	if l.inflight.Load() == 0 {
		return
	}
	drained := make(chan struct{})
	m.wg.Go(func() {
		l.calls.Wait()
		close(drained)
	})
	t := time.NewTimer(m.opts.drainTimeout)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	case <-m.ctx.Done():
	}
}

// describe fills in r what an Observer is told of the runtime l.
func (l *lease) describe(r *Request) {
	cfg := l.slot.config()
	r.Generation, r.Protocol = l.gen, l.protocol
	r.SessionID = l.client.GetSessionId()
	r.Transport, r.Address, r.Port = cfg.transport, cfg.address, cfg.port
}
