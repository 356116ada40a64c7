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
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
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

	listen listenState // its own subscriptions/listen stream (listen.go)
}

// The lists a list_changed notification can mark for refresh.
const (
	dirtyTools uint32 = 1 << iota
	dirtyPrompts
	dirtyResources
)

// dial makes one connection attempt: the Conn, the MCP handshake, the
// catalog. A server that accepts server/discover but rejects 2026-07-28 at
// its first real request is dialled again on the older handshake.
func (m *Manager) dial(ctx context.Context, s *slot, legacy bool) (*lease, error) {
	if err := m.dialSem.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	release := sync.OnceFunc(func() { m.dialSem.Release(1) })
	defer release()
	ctx, cancel := context.WithTimeout(ctx, m.opts.dialTimeout)
	defer cancel()

	// Connections of failed attempts are closed after the dial slot is
	// released: a child that ignores stdin EOF takes the close grace to
	// go, and must not hold up other servers' dials meanwhile.
	var failed []Conn
	defer func() {
		release()
		for _, c := range failed {
			m.closeConn(c)
		}
	}()
	l, err := m.dialOnce(ctx, s, legacy, &failed)
	if err != nil && !legacy && mcphttp.IsUnsupportedProtocol(err) && ctx.Err() == nil {
		m.opts.logger.Info("mcpfleet: server rejected protocol 2026-07-28; using the initialize handshake",
			"server", s.name)
		if l, err = m.dialOnce(ctx, s, true, &failed); err == nil {
			s.mu.Lock()
			s.legacy = true
			s.mu.Unlock()
		}
	}
	return l, err
}

// closeConn closes the connection of a failed dial, bounded by the close
// timeout. Nothing was installed, so there is nothing to report.
func (m *Manager) closeConn(c Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.closeTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

func (m *Manager) dialOnce(ctx context.Context, s *slot, legacy bool, failed *[]Conn) (*lease, error) {
	conn, err := s.config().spec.dialer(&m.opts, legacy)(ctx)
	if err != nil {
		return nil, wrapCause("dial", err)
	}
	l := &lease{slot: s, conn: conn, kick: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(m.ctx)
	fail := func(step string, err error) (*lease, error) {
		l.cancel()
		err = explain(conn, err)
		if lines := stderrOf(conn); lines != nil {
			s.mu.Lock()
			s.lastStderr = lines
			s.mu.Unlock()
		}
		*failed = append(*failed, conn)
		return nil, fmt.Errorf("%s: %w", step, err)
	}

	// The host's handlers are bound to this lease: a server request that
	// arrives once it is detached never reaches the host.
	copts := m.clientOptions(l)
	if legacy {
		copts = append(copts, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := mcpclient.NewClient(conn.Transport(), copts...)
	c.OnNotification(l.onNotification)
	// The transport keeps its start context for the life of the connection,
	// so it gets l.ctx; the attempt's ctx still bounds the start itself (an
	// SSE stream whose server never answers): ending it ends l.ctx too.
	stopStart := context.AfterFunc(ctx, l.cancel)
	err = c.Start(l.ctx)
	if !stopStart() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fail("start", err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: m.opts.clientInfo,
	}})
	if err != nil {
		return fail("initialize", err)
	}
	if !legacy && mcp.IsModernProtocol(init.ProtocolVersion) && init.ServerInfo.Name == "" {
		// mcp-go takes any result of server/discover for a yes, and some
		// older servers answer every unknown method with an empty result.
		// A real discover result names the server; this one is a misfire.
		return fail("initialize", fmt.Errorf("server/discover answered without server info: %w",
			mcp.UnsupportedProtocolVersionError{Version: init.ProtocolVersion}))
	}
	l.client = c
	l.protocol = init.ProtocolVersion
	// What the host asked of earlier runtimes holds for this one too, from
	// before it counts as Connected (and, on 2026-07-28 over HTTP, before
	// Ready opens the stream whose filter carries the subscriptions).
	m.restoreLevel(ctx, s, c)
	m.resubscribe(ctx, s, c)
	cat := &catalog.Catalog{
		Server:       s.name,
		ServerInfo:   init.ServerInfo,
		Capabilities: init.Capabilities,
		Instructions: init.Instructions,
		FetchedAt:    m.opts.clock.Now(),
	}
	if err := fetchLists(ctx, c, init.Capabilities, dirtyTools|dirtyPrompts|dirtyResources, cat); err != nil {
		return fail("list", err)
	}
	l.catalog = cat
	if hook, ok := conn.(ReadyHook); ok {
		if err := hook.Ready(ctx, c); err != nil {
			return fail("ready", err)
		}
	}
	m.startListen(l)
	return l, nil
}

// fetchLists fetches the lists named by which, every page, into cat. A list
// whose capability the server did not declare is left empty.
func fetchLists(ctx context.Context, c *mcpclient.Client, caps mcp.ServerCapabilities, which uint32, cat *catalog.Catalog) error {
	if which&dirtyTools != 0 && caps.Tools != nil {
		r, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		cat.Tools = r.Tools
	}
	if which&dirtyPrompts != 0 && caps.Prompts != nil {
		r, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			return fmt.Errorf("prompts: %w", err)
		}
		cat.Prompts = r.Prompts
	}
	if which&dirtyResources != 0 && caps.Resources != nil {
		r, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return fmt.Errorf("resources: %w", err)
		}
		cat.Resources = r.Resources
		t, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil && !errors.Is(err, mcp.ErrMethodNotFound) {
			return fmt.Errorf("resource templates: %w", err)
		}
		if t != nil {
			cat.ResourceTemplates = t.ResourceTemplates
		}
	}
	return nil
}

// onNotification runs on the transport's goroutine; it only marks work or
// hands the notification on without blocking.
func (l *lease) onNotification(n mcp.JSONRPCNotification) {
	var bit uint32
	switch n.Method {
	case mcp.MethodNotificationToolsListChanged:
		bit = dirtyTools
	case mcp.MethodNotificationPromptsListChanged:
		bit = dirtyPrompts
	case mcp.MethodNotificationResourcesListChanged:
		bit = dirtyResources
	case string(mcp.MethodNotificationProgress):
		l.onProgress(n)
		return
	case string(mcp.MethodNotificationMessage):
		l.onLog(n)
		return
	case mcp.MethodNotificationResourceUpdated:
		l.onResourceUpdated(n)
		return
	default:
		return
	}
	l.dirty.Or(bit)
	select {
	case l.kick <- struct{}{}:
	default: // a refresh is already queued; it will see the bit
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
	ctx, cancel := context.WithTimeout(l.ctx, s.m.opts.dialTimeout)
	defer cancel()
	var fresh catalog.Catalog
	err := fetchLists(ctx, l.client, l.catalog.Capabilities, which, &fresh)

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
	cur, ok := s.m.pub.View().Catalog(s.name)
	if !ok {
		return
	}
	if cur.Generation != l.gen {
		// l's catalog had the same content as its predecessor's, so the
		// View kept the older generation's; a refresh built on that one
		// would be ignored as late. Build on l's own.
		cur = l.catalog
	}
	next := cur
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
	if d, ok := s.m.pub.Publish(next, s.config().prefix); ok && !d.Empty() {
		s.emitLocked(catalogEvent(d))
	}
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

// closeLease closes a detached runtime, bounded by the close timeout. Close
// is teardown, not a transaction: its error is reported in an event and
// changes neither the state nor the budget.
func (m *Manager) closeLease(l *lease, s *slot) error {
	l.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.closeTimeout)
	defer cancel()
	err := l.conn.Close(ctx)
	if err != nil {
		err = fmt.Errorf("close generation %d: %w", l.gen, err)
		s.mu.Lock()
		s.emitLocked(Event{Kind: EventCloseError, Err: err})
		s.mu.Unlock()
	}
	return err
}

// goCloseLeaseLocked closes a detached runtime in the background, so that
// the goroutine that noticed the loss (a caller, a watcher) is not held up.
// It is counted in s.closing under the lock, so a Disable or Remove that
// comes after it is sure to wait for it.
//
// Calls still in flight are let finish first, bounded by the drain timeout:
// closing would fail them, and make their outcome unknown. That holds for a
// runtime whose Conn died too: an HTTP request does not die with the
// notification stream, and a call sent just as the server restarted gets the
// new server's stale-session answer, which proves it was not run, and so is
// retried. (Over stdio a dead child's calls end by themselves at once.)
func (s *slot) goCloseLeaseLocked(l *lease) {
	s.closing.Add(1)
	s.m.wg.Go(func() {
		defer s.closing.Done()
		s.m.drain(l)
		s.m.closeLease(l, s)
	})
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

// teardown finishes what stopLocked started: it waits for the abandoned
// connect loops, lets in-flight calls drain (bounded by ctx and the drain
// timeout), then closes the runtime.
func (m *Manager) teardown(ctx context.Context, s *slot, l *lease) error {
	// Connect loops, abandoned ones too, end promptly: their dials honour
	// the cancelled context. Closes started earlier are bounded by the
	// close timeout each.
	s.runners.Wait()
	defer s.closing.Wait()
	if l == nil {
		return nil
	}
	defer s.closing.Done() // counted by stopLocked; runs before the Wait
	drained := make(chan struct{})
	m.wg.Go(func() {
		l.calls.Wait()
		close(drained)
	})
	timer := time.NewTimer(m.opts.drainTimeout)
	select {
	case <-drained:
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	return m.closeLease(l, s)
}
