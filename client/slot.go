package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// slot is the stable home of one server from Add to Remove.
//
// Every field below mu is guarded by mu, and only this file writes them:
// code elsewhere reads under the lock and changes the slot through the
// methods here (a dial, for one, returns a dialResult that the connect
// loop applies). The slot's lock is never held while doing I/O, closing a
// runtime or delivering an event: those happen after the state they depend
// on was changed under the lock.
//
// The lock order of the package, the one place it is written:
//
//	Manager.applyMu → Manager.mu → slot.mu (several: in name order, as
//	Watch takes them) → the Publisher's lock, bus.mu, bus.subMu
//
// The locks of the last group are leaves, as are lease.listen.mu,
// Manager.roots.mu, a server's oauth.Authorizer's and a progress sink's: nothing is locked while one of
// them is held, and a slot's lock is never taken under any of them.
type slot struct {
	m    *Manager
	name string
	// cfg is what the slot was configured with: read without the lock,
	// replaced whole (under mu) only by reconfigure.
	cfg atomic.Pointer[slotConfig]
	// What the slot's limits dropped and refused (budget.go), for its
	// status and its events: atomics and the report goroutine's own, like
	// the counters they are written outside this file; they live as long
	// as the slot, across runtimes and configurations.
	dropped tally                    // notifications over the rate
	refused [numServerRequests]tally // the server's requests of the host, by method

	// closing counts this slot's detached runtimes still being closed in
	// the background, and runners counts its connect loops, abandoned ones
	// included. Both are added to under mu only; Disable and Remove wait
	// for both after leaving the states that start either, so that no
	// runtime of the slot outlives them.
	closing sync.WaitGroup
	runners sync.WaitGroup

	// st are the slot's counters: atomics, counted where things happen
	// (the call path included), the one exception to the rule above.
	st slotStats
	// intercepting counts the host's requests inside the interceptor chain
	// (intercept.go), an approval awaited among them: use, for the idle
	// check, before any runtime is involved. An atomic, like st.
	intercepting atomic.Int32

	mu         sync.Mutex
	state      lifecycle.State
	stateSince time.Time     // when state was entered
	changed    chan struct{} // closed and replaced on every state change
	gen        uint64        // the last generation issued; only grows
	lease      *lease        // the live runtime, only while Connected
	run        *runner       // the connect loop in progress, if any
	budget     *machine.Budget
	health     machine.Health
	lastErr    error
	catalogErr error
	// lastStderr holds the stderr lines of the last runtime or failed dial,
	// for the status of a server that is not connected: a server that dies
	// at start is exactly when its stderr matters.
	lastStderr []string
	nextRetry  time.Time
	legacy     bool // the server rejected 2026-07-28: dial the older handshake first
	cached     bool // the published catalog came from the catalog cache
	// raw is the catalog the server last sent (or the cache gave), before
	// the tool filter: what is published, filtered, while anything is.
	// A filter change republishes it without asking the server.
	raw *catalog.Catalog
	// What the host asked of the server, told again to every new runtime.
	logLevel mcp.LoggingLevel // SetLevel's; empty if never set
	subs     []string         // resource URIs subscribed to, in order
	// idleSince is when the runtime was closed for going unused (idle.go);
	// zero once the slot leaves Disconnected.
	idleSince time.Time
}

// runner is one connect loop: a goroutine that dials until it installs a
// lease, is cancelled, or the budget runs out. A slot has at most one, which
// is how concurrent reconnect triggers coalesce.
type runner struct {
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{} // capacity 1: dial now, skipping the wait
	pull   chan struct{} // capacity 1: a waiting call asks for a dial now
	// pullable is set, under the slot's lock, while the loop waits out a
	// step that no call has pulled forward yet.
	pullable bool
}

// slotConfig is one configuration of a slot. It never changes: Apply's
// reconfigure swaps in a new one, so a call that loaded it keeps a
// consistent spec, prefix and in-flight limit to the end.
type slotConfig struct {
	spec   ServerSpec
	prefix string              // spec.ToolPrefix
	sem    *semaphore.Weighted // per-server in-flight limit; nil means none
	// notes is the notification budget (nil: off) and requests the gate of
	// the server's requests of the host. Both have their own
	// synchronization; a new configuration starts them afresh.
	notes    *rate.Limiter
	requests *requestGate
	// key identifies the config entry a slot made by Apply came from;
	// empty for a slot made by Add.
	key string
	// limits are the spec's over the manager's: every field set, negative
	// meaning off.
	limits Limits
	// What an Observer is told of the transport (see Request).
	transport, address string
	port               int
	// cacheKey names the configuration in the catalog cache; empty: not
	// cached.
	cacheKey string
	// auth holds the server's OAuth tokens, for every runtime of this
	// configuration; nil without spec.OAuth.
	auth *oauth.Authorizer
}

func newSlotConfig(m *Manager, name string, spec ServerSpec, key string) *slotConfig {
	spec.ToolFilter = spec.ToolFilter.clone() // the caller's slices may change
	c := &slotConfig{spec: spec, prefix: spec.ToolPrefix, key: key, limits: spec.Limits.over(m.opts.limits)}
	c.transport, c.address, c.port = spec.describe()
	if m.cache != nil {
		c.cacheKey = cacheKey(spec, key)
	}
	if spec.OAuth != nil && spec.HTTP != nil {
		opts := append([]oauth.Option{oauth.WithStore(m.opts.tokens), oauth.WithLogger(m.opts.logger)}, m.opts.oauthOptions...)
		// The spec was validated, so New cannot fail on it; if it did, the
		// server would dial without a token and say why in its 401.
		if a, err := oauth.New(spec.HTTP.URL, name, *spec.OAuth, opts...); err == nil {
			c.auth = a
		} else {
			m.opts.logger.Error("mcpfleet: oauth config refused", "server", name, "err", err)
		}
	}
	limit := m.opts.maxInFlight
	if spec.MaxInFlight != 0 {
		limit = spec.MaxInFlight
	}
	if limit > 0 {
		c.sem = semaphore.NewWeighted(int64(limit))
	}
	c.notes = newBucket(c.limits.NotificationRate)
	c.requests = newRequestGate(c.limits)
	return c
}

// budgetFor returns a fresh reconnect budget under spec's policy, or the
// manager's.
func (m *Manager) budgetFor(spec ServerSpec) *machine.Budget {
	policy := m.opts.policy
	if spec.Reconnect != nil {
		policy = *spec.Reconnect
	}
	return machine.NewBudget(policy, m.opts.clock)
}

func newSlot(m *Manager, name string, spec ServerSpec, key string) *slot {
	s := &slot{
		m:       m,
		name:    name,
		state:   lifecycle.Disabled, // a slot is born off; enableLocked turns it on
		changed: make(chan struct{}),
		budget:  m.budgetFor(spec),
	}
	s.cfg.Store(newSlotConfig(m, name, spec, key))
	s.health.Threshold = m.opts.timeoutThreshold
	return s
}

// config returns the slot's current configuration.
func (s *slot) config() *slotConfig { return s.cfg.Load() }

// setStateLocked moves the slot to state to and emits the event. A same-state
// move does nothing; an illegal one is refused and recorded as a bug.
func (s *slot) setStateLocked(to lifecycle.State, cause error) bool {
	from := s.state
	if from == to {
		return true
	}
	if err := machine.Check(from, to); err != nil {
		s.m.bug(s.name, err)
		return false
	}
	s.state = to
	now := s.m.opts.clock.Now()
	s.stateSince = now
	if from == lifecycle.Disconnected {
		s.idleSince = time.Time{}
	}
	switch {
	case from == lifecycle.Connected && to == lifecycle.Reconnecting:
		s.st.reconnects.Add(1)
		s.st.lostAt.Store(now.UnixNano())
	case to == lifecycle.Connected:
		s.st.recovered(now)
	case !to.Accepting():
		s.st.lostAt.Store(0) // no recovery to time
	}
	close(s.changed)
	s.changed = make(chan struct{})
	e := Event{Kind: EventState, From: from, To: to, Err: cause}
	if to == lifecycle.NeedsAuthorization {
		e.AuthorizationURL = s.authURL()
	}
	s.emitLocked(e)
	if from.Publishes() && !to.Publishes() {
		s.cached = false
		s.raw = nil
		if d, ok := s.m.pub.Unpublish(s.name, s.gen); ok && !d.Empty() {
			s.emitLocked(catalogEvent(d))
		}
	}
	if h := s.m.onTransition; h != nil {
		h(s, from, to)
	}
	return true
}

// emitLocked stamps e with the slot's current facts and queues it.
func (s *slot) emitLocked(e Event) {
	e.Time = s.m.opts.clock.Now()
	e.Server = s.name
	if e.Kind != EventState {
		e.From, e.To = s.state, s.state
	}
	e.Generation = s.gen
	e.Attempt = s.budget.Attempts()
	e.NextRetry = s.nextRetry
	s.m.bus.publish(e)
}

// enableLocked leaves Disabled: for Connecting, or Disconnected if lazy.
func (s *slot) enableLocked() {
	s.budget.Reset()
	s.lastErr = nil
	if s.config().spec.Lazy {
		s.setStateLocked(lifecycle.Disconnected, nil)
	} else {
		s.connectLocked(lifecycle.Connecting, 0, false)
	}
	s.publishCachedLocked()
}

// publishCachedLocked publishes the server's catalog from the catalog
// cache, if it has one for this configuration and no runtime has connected
// yet: the host knows the tools before the first connect.
func (s *slot) publishCachedLocked() {
	cfg := s.config()
	if s.gen != 0 || !s.state.Publishes() {
		return
	}
	cat, ok := s.m.cache.lookup(s.name, cfg.cacheKey)
	if !ok {
		return
	}
	d, ok := s.publishLocked(cat)
	if !ok {
		return
	}
	s.cached = true
	if !d.Empty() {
		e := catalogEvent(d)
		e.Cached = true
		s.emitLocked(e)
	}
}

// connectLocked moves to state to and makes sure a connect loop runs; an
// existing loop is reused, so concurrent triggers coalesce into one.
func (s *slot) connectLocked(to lifecycle.State, wait time.Duration, probing bool) {
	prevRetry := s.nextRetry
	if s.run == nil && wait > 0 {
		// Before the transition, so that its event says when the dial is due.
		s.nextRetry = s.m.opts.clock.Now().Add(wait)
	}
	if !s.setStateLocked(to, s.lastErr) {
		s.nextRetry = prevRetry
		return
	}
	if s.run != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.m.ctx)
	r := &runner{cancel: cancel, done: make(chan struct{}),
		kick: make(chan struct{}, 1), pull: make(chan struct{}, 1)}
	s.run = r
	s.m.wg.Add(1)
	s.runners.Add(1)
	go s.connectLoop(ctx, r, wait, probing)
}

// connectLoop dials until a lease is installed, the loop is cancelled, or the
// budget is exhausted. In PermanentlyFailed it keeps probing on the budget's
// slow probe schedule, without further state changes until one succeeds.
//
// A call waiting for the server may pull the next dial forward, once per
// step: the pulled dial is an extra one, so if it fails it spends nothing
// and the step's own dial still comes when it was due. A server that is
// back before its backoff ends is found by the first call that needs it,
// and a stream of calls cannot run a budget down faster than its schedule.
func (s *slot) connectLoop(ctx context.Context, r *runner, wait time.Duration, probing bool) {
	defer s.m.wg.Done()
	defer s.runners.Done()
	defer close(r.done)
	defer r.cancel()
	clock := s.m.opts.clock
	resumed := false // the rest of a step whose pulled dial failed
	for {
		pulled := false
		if wait > 0 {
			due := clock.Now().Add(wait)
			var ok bool
			if ok, pulled = s.waitStep(ctx, r, wait, !probing && !resumed); !ok {
				return
			}
			if pulled {
				if remaining := due.Sub(clock.Now()); remaining > 0 {
					wait = remaining
				} else {
					pulled = false // due anyway: an ordinary dial
				}
			}
		}
		s.mu.Lock()
		legacy := s.legacy
		s.mu.Unlock()

		began := s.m.opts.clock.Now()
		res := s.dial(ctx, legacy)
		took := s.m.opts.clock.Now().Sub(began)
		resumed = false
		s.st.dials.Add(1)
		if res.err != nil {
			s.st.dialFailures.Add(1)
			s.observeDial(0, took, res.err)
		}

		s.mu.Lock()
		s.applyDialLocked(res)
		l, err := res.lease, res.err
		if s.run != r || ctx.Err() != nil {
			// Abandoned by Disable, Remove, Reconnect or Close while dialling.
			s.mu.Unlock()
			if l != nil {
				s.closeLease(l)
			}
			return
		}
		if err == nil {
			s.nextRetry = time.Time{}
			s.run = nil
			s.installLocked(l)
			s.mu.Unlock()
			s.observeDial(l.gen, took, nil)
			return
		}
		s.lastErr = err
		if needsUser(err) {
			// Only the user can help: no budget is spent and nothing is
			// dialled until the authorization is completed.
			s.nextRetry = time.Time{}
			s.run = nil
			s.setStateLocked(lifecycle.NeedsAuthorization, err)
			s.mu.Unlock()
			return
		}
		if pulled {
			// The extra dial failed: wait out the rest of the step.
			resumed = true
			s.emitLocked(Event{Kind: EventRetry, Err: err})
			s.mu.Unlock()
			continue
		}
		if !probing {
			var ok bool
			wait, ok = s.budget.Failed()
			if !ok {
				s.nextRetry = time.Time{}
				s.setStateLocked(lifecycle.PermanentlyFailed, err)
				probing = true
			}
		}
		if probing {
			var ok bool
			if wait, ok = s.budget.ProbeWait(); !ok {
				s.nextRetry = time.Time{}
				s.run = nil
				s.mu.Unlock()
				return
			}
		}
		s.nextRetry = clock.Now().Add(wait)
		s.emitLocked(Event{Kind: EventRetry, Err: err})
		s.mu.Unlock()
	}
}

// applyDialLocked keeps what a connection attempt found out about the
// server, whatever became of the attempt.
func (s *slot) applyDialLocked(res dialResult) {
	if res.legacy {
		s.legacy = true
	}
	if res.stderr != nil {
		s.lastStderr = res.stderr
	}
}

// waitStep waits out one backoff step, or less if Reconnect kicks the loop
// or, when pullable, a waiting call pulls the dial forward. It reports
// whether the loop should go on, and whether a call (and not Reconnect)
// ended the wait. Probes are not pullable: calls fail fast in
// PermanentlyFailed.
func (s *slot) waitStep(ctx context.Context, r *runner, wait time.Duration, pullable bool) (ok, pulled bool) {
	c, stop := s.m.opts.clock.NewTimer(wait)
	defer stop()
	s.mu.Lock()
	r.pullable = pullable
	s.mu.Unlock()
	select {
	case <-c:
	case <-r.kick:
	case <-r.pull:
		pulled = true
	case <-ctx.Done():
		return false, false
	}
	s.mu.Lock()
	r.pullable = false
	select {
	case <-r.pull: // a pull that came as the step ended: it cannot end a later one
	default:
	}
	if pulled {
		select {
		case <-r.kick: // Reconnect asked too: an ordinary dial
			pulled = false
		default:
		}
	}
	s.mu.Unlock()
	return true, pulled
}

// pullLocked lets a waiting call pull the next dial forward, if the connect
// loop is waiting out a step that nobody pulled yet.
func (s *slot) pullLocked() {
	if r := s.run; r != nil && r.pullable {
		r.pullable = false
		select {
		case r.pull <- struct{}{}:
		default:
		}
	}
}

// installLocked makes l the slot's runtime under the next generation,
// publishes its catalog and starts its watcher.
func (s *slot) installLocked(l *lease) {
	s.gen++
	l.gen = s.gen
	s.lease = l
	s.health.Reset(s.gen)
	s.budget.Connected()
	s.lastErr = nil
	s.catalogErr = nil
	l.connectedAt = s.m.opts.clock.Now()
	l.catalog.Generation = s.gen
	l.catalog.Seal()
	cfg := s.config()
	l.lastUse.Store(l.connectedAt.UnixNano())
	if cfg.spec.IdleTimeout > 0 {
		s.armIdleLocked(l, cfg.spec.IdleTimeout)
	}
	diff, published := s.publishLocked(l.catalog)
	s.cached = false
	s.m.cache.save(cfg.cacheKey, l.catalog)
	s.setStateLocked(lifecycle.Connected, nil)
	if published && !diff.Empty() {
		s.emitLocked(catalogEvent(diff))
	}
	s.m.wg.Add(1)
	go s.watch(l)
}

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

// lost reports that l's runtime is dead. If l is still the slot's lease the
// slot detaches it, schedules a reconnect and closes it in the background;
// a report about any older runtime is ignored.
func (s *slot) lost(l *lease, cause error) {
	s.mu.Lock()
	if s.lease != l {
		s.mu.Unlock()
		return
	}
	s.lostLocked(cause)
	s.goCloseLeaseLocked(l)
	s.mu.Unlock()
}

// lostLocked detaches the current lease (the caller closes it) and starts
// the reconnect under the budget.
func (s *slot) lostLocked(cause error) {
	l := s.detachLocked()
	s.lastErr = cause
	wait, ok := s.budget.Lost(l != nil && l.answered.Load())
	if ok {
		s.connectLocked(lifecycle.Reconnecting, wait, false)
		return
	}
	// Connected has no edge to PermanentlyFailed: the loss is reported first.
	s.setStateLocked(lifecycle.Reconnecting, cause)
	if probe, ok := s.budget.ProbeWait(); ok {
		s.connectLocked(lifecycle.PermanentlyFailed, probe, true)
		return
	}
	s.setStateLocked(lifecycle.PermanentlyFailed, cause)
}

// detachLocked takes the lease out of the slot so that no new call can start
// on it, and cancels its context. The caller closes it after unlocking.
func (s *slot) detachLocked() *lease {
	l := s.lease
	if l != nil {
		s.lease = nil
		l.cancel()
		stopIdleLocked(l)
		s.lastStderr = stderrOf(l.conn)
	}
	return l
}

// idleLocked closes the runtime of a server that went unused for timeout:
// detached, it is closed in the background (a stdio child reaped, an HTTP
// session deleted), and the slot waits in Disconnected, its catalog still
// published, for the next request to start it under a fresh budget.
func (s *slot) idleLocked(timeout time.Duration) {
	l := s.detachLocked()
	s.budget.Reset()
	s.nextRetry = time.Time{}
	s.setStateLocked(lifecycle.Disconnected, fmt.Errorf("%w: no use for %v", ErrIdleTimeout, timeout))
	s.idleSince = s.stateSince
	if l != nil {
		s.goCloseLeaseLocked(l)
	}
}

// setIdleTimeout changes the slot's idle timeout in place, with no
// restart: SetIdleTimeout's way, and Apply's with an entry whose
// idleTimeout alone changed. A connected runtime's check is re-armed for
// the new timeout, counted from its last use (from now, if it had no
// timeout before).
func (s *slot) setIdleTimeout(d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == lifecycle.Closed {
		return serverError(ErrClosed, s.name, nil)
	}
	old := s.config()
	if old.spec.IdleTimeout == d {
		return nil
	}
	c := *old
	c.spec.IdleTimeout = d
	s.cfg.Store(&c)
	l := s.lease
	if l == nil {
		return nil
	}
	if d <= 0 {
		stopIdleLocked(l)
		return nil
	}
	now := s.m.opts.clock.Now()
	if old.spec.IdleTimeout <= 0 {
		l.lastUse.Store(now.UnixNano()) // not kept up to date until now
	}
	s.armIdleLocked(l, time.Unix(0, l.lastUse.Load()).Add(d).Sub(now))
	return nil
}

// stderrOf returns the last lines a connection's server wrote to stderr, if
// its transport keeps them (stdio does).
func stderrOf(c Conn) []string {
	if e, ok := c.(interface{ Stderr() []string }); ok {
		return e.Stderr()
	}
	return nil
}

// stopLocked cancels the connect loop and detaches the lease, moving to
// state to (Disabling or Closed). A detached lease is counted in s.closing
// until the caller's teardown has closed it, so that a Remove or Close
// that comes while a Disable is closing it waits for it too.
func (s *slot) stopLocked(to lifecycle.State) *lease {
	r := s.run
	if r != nil {
		s.run = nil
		r.cancel()
	}
	l := s.detachLocked()
	if l != nil {
		s.closing.Add(1)
	}
	s.nextRetry = time.Time{}
	s.setStateLocked(to, nil)
	return l
}

// waitSettledLocked waits, releasing the lock, while another Disable is
// closing the runtime. It returns with the lock held.
func (s *slot) waitSettledLocked(ctx context.Context) error {
	for s.state == lifecycle.Disabling {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return ctx.Err()
		}
		s.mu.Lock()
	}
	return nil
}

func (s *slot) disable(ctx context.Context) error {
	s.mu.Lock()
	if err := s.waitSettledLocked(ctx); err != nil {
		s.mu.Unlock()
		return err
	}
	switch s.state {
	case lifecycle.Disabled:
		s.mu.Unlock()
		return nil
	case lifecycle.Closed:
		s.mu.Unlock()
		return serverError(ErrClosed, s.name, nil)
	}
	l := s.stopLocked(lifecycle.Disabling)
	s.mu.Unlock()

	s.teardown(ctx, l)

	s.mu.Lock()
	if s.state == lifecycle.Disabling {
		s.setStateLocked(lifecycle.Disabled, nil)
	}
	s.mu.Unlock()
	return nil
}

func (s *slot) enable(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitSettledLocked(ctx); err != nil {
		return err
	}
	switch s.state {
	case lifecycle.Closed:
		return serverError(ErrClosed, s.name, nil)
	case lifecycle.Disabled:
		s.enableLocked()
	}
	return nil
}

func (s *slot) reconnect(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	switch s.state {
	case lifecycle.Closed:
		s.mu.Unlock()
		return serverError(ErrClosed, s.name, nil)
	case lifecycle.Disabled, lifecycle.Disabling:
		s.mu.Unlock()
		return serverError(ErrDisabled, s.name, nil)
	case lifecycle.Connected:
		s.goCloseLeaseLocked(s.detachLocked())
		s.budget.Reset()
		s.connectLocked(lifecycle.Reconnecting, 0, false)
	case lifecycle.PermanentlyFailed:
		if r := s.run; r != nil { // the slow probe
			s.run = nil
			r.cancel()
		}
		s.budget.Reset()
		s.connectLocked(lifecycle.Reconnecting, 0, false)
	case lifecycle.NeedsAuthorization:
		// Try again: the token store may have a token by now.
		s.budget.Reset()
		s.redialLocked()
	case lifecycle.Connecting, lifecycle.Reconnecting:
		s.budget.Reset()
		if s.run != nil {
			select {
			case s.run.kick <- struct{}{}:
			default:
			}
		}
	case lifecycle.Disconnected:
		s.connectLocked(lifecycle.Connecting, 0, false)
	}
	s.mu.Unlock()
	return nil
}

// reconfigure gives the slot a new spec in place: Apply's way with a changed
// entry. The slot, its name, its subscriptions and its generation count
// stay. A runtime of the old spec is detached and closed in the background
// (its in-flight calls drain first), a connect loop of the old spec is
// abandoned, and the new spec is dialled at once under a fresh budget:
// calls see Reconnecting, as after a crash, and go to the new runtime, one
// generation up. A disabled slot only takes the spec, for its next Enable;
// a lazy one that is not running stays Disconnected. spec.Disabled is the
// caller's to act on.
func (s *slot) reconfigure(ctx context.Context, spec ServerSpec, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitSettledLocked(ctx); err != nil {
		return err
	}
	if s.state == lifecycle.Closed {
		return serverError(ErrClosed, s.name, nil)
	}
	refilter := !s.config().spec.ToolFilter.equal(spec.ToolFilter)
	s.cfg.Store(newSlotConfig(s.m, s.name, spec, key))
	if refilter {
		// The last good catalog, kept while the new spec is dialled, is
		// not to show what the new filter hides.
		s.republishLocked()
	}
	s.budget = s.m.budgetFor(spec)
	s.legacy = false // a new server may speak the newer protocol
	s.lastErr = nil
	switch s.state {
	case lifecycle.Disconnected:
		// A lazy server, or one closed for going idle, waits for its next
		// request under the new spec as it did under the old.
		if !spec.Lazy && s.idleSince.IsZero() {
			s.connectLocked(lifecycle.Connecting, 0, false)
		}
	case lifecycle.Connected:
		s.goCloseLeaseLocked(s.detachLocked())
		s.connectLocked(lifecycle.Reconnecting, 0, false)
	case lifecycle.NeedsAuthorization:
		s.redialLocked()
	case lifecycle.Connecting, lifecycle.Reconnecting, lifecycle.PermanentlyFailed:
		if r := s.run; r != nil { // dialling the old spec: abandon it
			s.run = nil
			r.cancel()
		}
		s.nextRetry = time.Time{}
		to := lifecycle.Reconnecting
		if s.state == lifecycle.Connecting {
			to = lifecycle.Connecting
		}
		s.connectLocked(to, 0, false)
	}
	return nil
}

// shutdown moves the slot to Closed and closes its runtime; it is how Remove
// and Close end a slot.
func (s *slot) shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.state == lifecycle.Closed {
		s.mu.Unlock()
		// Another shutdown may still be closing the runtime: Close must
		// not return before it is gone.
		s.runners.Wait()
		s.closing.Wait()
		return nil
	}
	l := s.stopLocked(lifecycle.Closed)
	s.mu.Unlock()
	return s.teardown(ctx, l)
}

func (s *slot) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(nil)
}

// quarantinesByServer groups the View's quarantined tools by server, for
// the statuses of a whole fleet: one walk of them, not one per server.
func quarantinesByServer(v *catalog.View) map[string][]snapshot.Quarantine {
	qs := v.Quarantined()
	if len(qs) == 0 {
		return nil
	}
	out := make(map[string][]snapshot.Quarantine)
	for _, q := range qs {
		out[q.Server] = append(out[q.Server], snapshot.Quarantine(q))
	}
	return out
}

// statusLocked returns the slot's status. quarantined, if not nil, is
// quarantinesByServer of the current View; nil means look them up.
func (s *slot) statusLocked(quarantined map[string][]snapshot.Quarantine) ServerStatus {
	st := ServerStatus{
		Name:         s.name,
		State:        s.state,
		Generation:   s.gen,
		Attempt:      s.budget.Attempts(),
		NextRetry:    s.nextRetry,
		LastError:    s.lastErr,
		CatalogError: s.catalogErr,

		DroppedNotifications: s.dropped.total.Load(),
	}
	for i := range s.refused {
		st.RefusedServerRequests += s.refused[i].total.Load()
	}
	if s.state == lifecycle.NeedsAuthorization {
		st.AuthorizationURL = s.authURL()
	}
	st.IdleTimeout = s.config().spec.IdleTimeout
	st.IdleSince = s.idleSince
	if l := s.lease; l != nil {
		st.ConnectedAt = l.connectedAt
		st.InFlight = l.inflight.Load()
		st.Protocol = l.protocol
		st.Stderr = stderrOf(l.conn)
	} else {
		st.Stderr = s.lastStderr
	}
	v := s.m.pub.View()
	if c, ok := v.Catalog(s.name); ok {
		st.Tools = len(c.Tools)
		st.FilteredTools = s.filteredCountLocked()
		st.Cached = s.cached
		st.ServerInfo = c.ServerInfo
	}
	if quarantined == nil {
		quarantined = quarantinesByServer(v)
	}
	st.Quarantined = slices.Clone(quarantined[s.name])
	return st
}

// unavailableLocked builds the error of a call that gave up waiting.
func (s *slot) unavailableLocked(cause error) *UnavailableError {
	if cause == nil {
		cause = s.lastErr
	}
	// A cause from a context other than the caller's (a dial that timed
	// out, a run of call timeouts) must not pass for the caller's own.
	cause = notCanceled(cause)
	return &UnavailableError{
		Server:     s.name,
		State:      s.state,
		Generation: s.gen,
		Attempt:    s.budget.Attempts(),
		NextRetry:  s.nextRetry,
		Cause:      cause,
	}
}

// closeLease closes a detached runtime, bounded by the close timeout. Close
// is teardown, not a transaction: its error is reported in an event and
// changes neither the state nor the budget.
func (s *slot) closeLease(l *lease) error {
	return s.closeLeaseIn(context.Background(), l)
}

// closeLeaseIn is closeLease bounded by parent too: once parent ends, the
// Conn forces what has not finished (a child is killed, not asked).
func (s *slot) closeLeaseIn(parent context.Context, l *lease) error {
	m := s.m
	l.cancel()
	ctx, cancel := context.WithTimeout(parent, m.opts.closeTimeout)
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
		s.closeLease(l)
	})
}

// teardown finishes what stopLocked started: it waits for the abandoned
// connect loops, lets in-flight calls drain (bounded by ctx and the drain
// timeout), then closes the runtime (bounded by the close timeout, and
// forced once ctx ends).
func (s *slot) teardown(ctx context.Context, l *lease) error {
	m := s.m
	// Connect loops, abandoned ones too, end promptly: their dials honour
	// the cancelled context. Closes started earlier are bounded by the
	// close timeout each.
	s.runners.Wait()
	defer s.closing.Wait()
	if l == nil {
		return nil
	}
	defer s.closing.Done() // counted by stopLocked; runs before the Wait
	if l.inflight.Load() == 0 {
		// Detached under the lock, so no call can start on it now: nothing
		// to drain (the common case, and the whole of an idle fleet's
		// Close).
		return s.closeLeaseIn(ctx, l)
	}
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
	return s.closeLeaseIn(ctx, l)
}

// succeeded clears the run of timeouts of l's generation.
func (s *slot) succeeded(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.health.Success(l.gen, s.m.opts.clock.Now()) {
		l.timedOut.Store(false)
	}
}

// timedOut counts a timeout against l's generation, and treats the runtime
// as lost when the run of timeouts reaches the threshold.
func (s *slot) timedOut(l *lease, err error) {
	s.mu.Lock()
	if s.lease != l {
		s.mu.Unlock()
		return
	}
	l.timedOut.Store(true)
	if !s.health.Timeout(l.gen, err) {
		s.mu.Unlock()
		return
	}
	s.lostLocked(fmt.Errorf("%w: %w", ErrTooManyTimeouts, err))
	s.goCloseLeaseLocked(l)
	s.mu.Unlock()
}

// setLogLevel records the level the host asked for, told again to every
// new runtime.
func (s *slot) setLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	s.logLevel = level
	s.mu.Unlock()
}

// addSub records a resource subscription, told again to every new runtime,
// and reports whether it was there already.
func (s *slot) addSub(uri string) (had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.subs, uri) {
		return true
	}
	s.subs = append(s.subs, uri)
	return false
}

// dropSub forgets a resource subscription.
func (s *slot) dropSub(uri string) {
	s.mu.Lock()
	s.subs = slices.DeleteFunc(s.subs, func(u string) bool { return u == uri })
	s.mu.Unlock()
}

// observeDial tells the Observer, if any, how a dial ended. Called with no
// lock held.
func (s *slot) observeDial(gen uint64, took time.Duration, err error) {
	if o := s.m.opts.observer; o != nil {
		o.Dial(s.name, gen, took, err)
	}
}

// stats returns the slot's counters and gauges as of now.
func (s *slot) stats(now time.Time) ServerStats {
	ss := ServerStats{
		Name:          s.name,
		Dials:         s.st.dials.Load(),
		DialFailures:  s.st.dialFailures.Load(),
		Reconnects:    s.st.reconnects.Load(),
		Retries:       s.st.retries.Load(),
		LastRecovery:  time.Duration(s.st.lastRecovery.Load()),
		WorstRecovery: time.Duration(s.st.worst.Load()),
	}
	for i := range ss.Calls {
		ss.Calls[i] = s.st.calls[i].Load()
	}
	s.mu.Lock()
	ss.State, ss.InState = s.state, now.Sub(s.stateSince)
	if s.lease != nil {
		ss.InFlight = s.lease.inflight.Load()
	}
	s.mu.Unlock()
	return ss
}

// authURL returns the URL of the authorization waiting for the user, if
// any. It takes the Authorizer's lock, a leaf.
func (s *slot) authURL() string {
	if a := s.config().auth; a != nil {
		return a.Pending()
	}
	return ""
}

// redialLocked leaves NeedsAuthorization for a dial: Connecting if the
// server never had a runtime, Reconnecting if it had.
func (s *slot) redialLocked() {
	s.lastErr = nil
	if s.gen == 0 {
		s.connectLocked(lifecycle.Connecting, 0, false)
		return
	}
	s.connectLocked(lifecycle.Reconnecting, 0, false)
}

// needsAuthorization reports that a request on l found that only the user
// can authorize the server (a refused refresh token, a step-up). If l is
// still the slot's lease, the slot detaches it, closes it in the background
// and waits in NeedsAuthorization; no budget is spent.
func (s *slot) needsAuthorization(l *lease, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != l {
		return
	}
	s.goCloseLeaseLocked(s.detachLocked())
	s.lastErr = cause
	s.setStateLocked(lifecycle.NeedsAuthorization, cause)
}

// authorizationErrorLocked is the error of a call made while the slot
// needs authorization.
func (s *slot) authorizationErrorLocked() error {
	return &ServerError{Server: s.name, Err: &AuthorizationError{URL: s.authURL(), Cause: notCanceled(s.lastErr)}}
}

// authorized is told that the user completed the server's authorization:
// a slot waiting for it dials at once, under a fresh budget. In any other
// state the new token is simply used from the next request on.
func (s *slot) authorized() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != lifecycle.NeedsAuthorization {
		return
	}
	s.budget.Reset()
	s.redialLocked()
}
