package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	mcpclient "github.com/mark3labs/mcp-go/client"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
)

// lease is one live runtime: an initialized mcp-go client over a Conn,
// stamped with the generation it was installed under. A slot holds at most
// one; once detached, nothing new starts on it and its reports are ignored.
type lease struct {
	gen         uint64 // set under the slot's lock when installed; then fixed
	slot        *slot
	conn        transport.Conn
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

	// own admits the requests the Manager makes on the runtime by itself,
	// outside any call: its listen stream, a list_changed refresh, an idle
	// probe. Closing the runtime shuts it and waits for them.
	own ownGate
}

// ownGate admits the requests the Manager sends on a runtime of its own
// accord until the runtime begins to close; lease.close shuts it and
// waits, bounded, for those admitted to end before it closes the Conn.
//
// Checking the lease's context before sending is not enough, nor is
// mcp-go's own check: a request that passed them can be held up (its
// thread descheduled on a loaded machine) while the runtime is detached
// and closed, and then go out on the closed Conn, tens of milliseconds
// after Disable or Remove returned. Calls are kept out the same way by
// l.calls, which teardown drains.
type ownGate struct {
	mu   sync.Mutex
	n    int           // requests admitted and not yet ended
	shut bool          // set once the runtime began to close: nothing more is admitted
	idle chan struct{} // made by close if n > 0; closed when n drops to 0
}

// enter admits one request, unless the gate was shut.
func (g *ownGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		return false
	}
	g.n++
	return true
}

// exit ends a request that enter admitted.
func (g *ownGate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
	}
}

// close shuts the gate and waits until the requests admitted have ended,
// or ctx ends. The caller has cancelled their context first, so they end
// promptly. waiting, if not nil, is called before it waits, if it has to
// (a test's hook).
func (g *ownGate) close(ctx context.Context, waiting func()) {
	g.mu.Lock()
	g.shut = true
	if g.n == 0 {
		g.mu.Unlock()
		return
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	if waiting != nil {
		waiting()
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
}

// beginOwn admits a request the Manager makes on l by itself; it reports
// false, and nothing may be sent, once l is detached or closing. A true
// must be paired with endOwn once the request has returned.
func (l *lease) beginOwn() bool {
	if !l.own.enter() {
		return false
	}
	if l.ctx.Err() != nil {
		l.own.exit()
		return false
	}
	return true
}

// endOwn ends a request beginOwn admitted.
func (l *lease) endOwn() { l.own.exit() }

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

// describe fills in r what an Observer is told of the runtime l.
func (l *lease) describe(r *Request) {
	cfg := l.slot.config()
	r.Generation, r.Protocol = l.gen, l.protocol
	r.SessionID = l.client.GetSessionId()
	r.Transport, r.Address, r.Port = cfg.transport, cfg.address, cfg.port
}

// stderrOf returns the last lines a connection's server wrote to stderr, if
// its transport keeps them (stdio does).
func stderrOf(c transport.Conn) []string {
	if e, ok := c.(transport.Reporter); ok {
		return e.Stderr()
	}
	return nil
}

// admit registers a request on l, under the slot's lock while l is its
// lease, so that a detach that follows sees it in flight and drains it.
func (l *lease) admit() {
	l.calls.Add(1)
	l.inflight.Add(1)
}

// release ends a request that acquire registered on l.
func (l *lease) release() {
	l.used() // before the count drops, so a check that sees none in flight sees the stamp
	l.inflight.Add(-1)
	l.calls.Done()
}

// The end of a lease's life, once its slot detached it (detachLocked):
// drain, then close. Both run with no lock held.

// goCloseLocked drains and closes l in the background, so that the
// goroutine that noticed its end (a caller, a watcher, a Reconnect) is not
// held up. It is counted in its slot's closing under the slot's lock, so a
// Disable or Remove that comes after it is sure to wait for it.
//
// Calls still in flight are let finish first, bounded by the drain timeout:
// closing would fail them, and make their outcome unknown. That holds for a
// runtime whose Conn died too: an HTTP request does not die with the
// notification stream, and a call sent just as the server restarted gets the
// new server's stale-session answer, which proves it was not run, and so is
// retried. (Over stdio a dead child's calls end by themselves at once.)
func (l *lease) goCloseLocked() {
	s, m := l.slot, l.slot.m
	s.closing.Add(1)
	m.wg.Go(func() {
		defer s.closing.Done()
		l.drain(m.ctx, m.opts.drainTimeout)
		l.close(context.Background())
	})
}

// drain waits for l's calls in flight to end, until timeout passes or ctx
// ends (the teardown's context, or the Manager's for a close in the
// background). It is the one drain: Disable's, Remove's and Close's
// teardown, and a runtime closed after a loss, a Reconnect or going idle.
func (l *lease) drain(ctx context.Context, timeout time.Duration) {
	if l.inflight.Load() == 0 {
		// Detached under the lock, so no call can start on it now: nothing
		// to drain (the common case, and the whole of an idle fleet's
		// Close).
		return
	}
	drained := make(chan struct{})
	l.slot.m.wg.Go(func() {
		l.calls.Wait()
		close(drained)
	})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	case <-ctx.Done():
	}
}

// close closes l, detached, bounded by the close timeout and by parent:
// once parent ends, the Conn forces what has not finished (a child is
// killed, not asked). It waits for the requests the Manager made on l by
// itself (l.own) first. Close is teardown, not a transaction: its error is
// reported in an event and changes neither the state nor the budget.
func (l *lease) close(parent context.Context) error {
	s, m := l.slot, l.slot.m
	l.cancel()
	ctx, cancel := context.WithTimeout(parent, m.opts.closeTimeout)
	defer cancel()
	// The Manager's own requests (listen stream, refresh, probe) end with
	// l.ctx; one that got past its check must reach the Conn before the
	// close, never after. A transport that ignores the cancel is forced
	// by the Close once ctx ends.
	var waiting func()
	if h := m.onOwnWait; h != nil {
		waiting = func() { h(l) }
	}
	l.own.close(ctx, waiting)
	s.keepBoundSession(l)
	err := l.conn.Close(ctx)
	if err != nil {
		err = fmt.Errorf("close generation %d: %w", l.gen, err)
		s.mu.Lock()
		s.emitLocked(Event{Kind: EventCloseError, Err: err})
		s.mu.Unlock()
	}
	return err
}
