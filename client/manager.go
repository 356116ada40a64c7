package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpfleet/mcpfleet/transport/http/oauth"

	"golang.org/x/sync/semaphore"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// Manager keeps many MCP servers usable at once. Each server lives in a
// stable slot from Add to Remove; the slot's state machine decides what calls
// do, and its published catalog outlives reconnects. A Manager is safe for
// concurrent use. Close it to stop every runtime and reap every child.
type Manager struct {
	opts    options
	ctx     context.Context // parent of every runner and lease; cancelled by Close
	cancel  context.CancelFunc
	bus     *bus
	cache   *catalogCache    // nil without WithCatalogCache or WithSharedState
	tokens  oauth.TokenStore // the Authorizers' store (options.tokenStore)
	pub     *catalog.Publisher
	dialSem *semaphore.Weighted
	// registry records the stdio children's process groups in the state
	// file (WithStateFile); nil without one. Set in New, closed by Close
	// after every runtime.
	registry *stdio.Registry

	mu     sync.RWMutex // guards slots and closed
	slots  map[string]*slot
	closed bool
	// closeDone is closed when the first Close has finished; later ones
	// wait for it.
	closeDone chan struct{}

	applyMu sync.Mutex // serializes Apply calls

	// tasks holds the task handles and polls them (taskpoll.go). Set in
	// New; has its own synchronization.
	tasks *taskRegistry

	roots       rootsState // the host's roots (SetRoots)
	progress    sync.Map   // progress token -> *progressSink of a call in flight
	progressSeq atomic.Uint64
	rawSeq      atomic.Uint64 // numbers the Manager's raw requests (rawCall)

	// wg counts every goroutine the manager starts: runners, watchers,
	// background closes. Close waits for all of them.
	wg sync.WaitGroup

	// illegal counts attempted transitions that the table forbids. Each is a
	// bug; it is logged, not applied, and tests assert the count stays zero.
	illegal atomic.Int64

	// onTransition, when set (by tests only, before any Add), runs at the
	// end of every transition with the slot's lock held.
	onTransition func(s *slot, from, to lifecycle.State)
	// onProbe, when set (by tests only, before any Add), is told the
	// outcome of every idle probe sent.
	onProbe func(s *slot, err error)
	// onIdle, when set (by tests only, before any Add), is told what
	// every idle check found (idle.go), with no lock held.
	onIdle func(s *slot, v idleVerdict)
	// onOwnWait, when set (by tests only, before any Add), runs when
	// closing l waits for the requests the Manager made on it by itself
	// (lease.own) to end, with no lock held.
	onOwnWait func(l *lease)
}

// New returns a Manager with no servers. With WithStateFile it first ends
// what a crashed predecessor left running, which can take a few seconds.
// It loads the open task handles of its TaskStore (see TaskOptions.Store),
// which it polls once their servers are added.
func New(opts ...Option) *Manager {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.maxDials <= 0 {
		o.maxDials = DefaultMaxConcurrentDials
	}
	if o.tokens == nil {
		o.tokens = oauth.NewMemoryStore()
	}
	if o.sharedTasks && o.shared != nil {
		o.taskStore = o.shared.Tasks(o.taskScope)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:      o,
		ctx:       ctx,
		cancel:    cancel,
		bus:       newBus(o.observer, nil),
		pub:       catalog.NewPublisher(o.naming),
		dialSem:   semaphore.NewWeighted(int64(o.maxDials)),
		slots:     map[string]*slot{},
		closeDone: make(chan struct{}),
	}
	m.bus.log = newStateLog(o.logger, func(server string) int {
		if c, ok := m.pub.View().Catalog(server); ok {
			return len(c.Tools)
		}
		return 0
	})
	m.tokens = o.tokenStore()
	switch {
	case o.cachePath != "":
		m.cache = openCatalogCache(o.cachePath, o.logger)
	case o.shared != nil:
		m.cache = openSharedCatalogs(o.shared, o.logger)
	}
	m.openStateFile()
	go m.bus.run()
	m.tasks = newTaskRegistry(m)
	m.tasks.load()
	return m
}

// Add adds a server under name and, unless the spec says Disabled or Lazy,
// starts connecting it. It does not wait for the connection: use WaitFor.
func (m *Manager) Add(ctx context.Context, name string, spec ServerSpec) error {
	return withOp("add", name, m.add(ctx, name, spec, ""))
}

// add adds a slot; configKey is non-empty for a slot that Apply manages.
func (m *Manager) add(ctx context.Context, name string, spec ServerSpec, configKey string) error {
	if name == "" {
		return fmt.Errorf("mcpfleet: add: server name is empty")
	}
	if err := spec.Validate(); err != nil {
		return &ServerError{Server: name, Err: fmt.Errorf("%w: %w", ErrInvalidSpec, err)}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.cache.prefetch(ctx, m.catalogKey(name, spec, configKey))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return serverError(ErrClosed, name, nil)
	}
	if _, ok := m.slots[name]; ok {
		return serverError(ErrDuplicateServer, name, nil)
	}
	s := newSlot(m, name, spec, configKey)
	m.slots[name] = s
	if !spec.Disabled {
		s.mu.Lock()
		s.enableLocked()
		s.mu.Unlock()
	}
	m.tasks.serverAdded(name) // its tasks of a Manager before, or of a Remove
	return nil
}

// Remove stops the server, closes its runtime (letting in-flight calls drain
// for the drain timeout; a runtime still closing when ctx ends is closed by
// force), unpublishes its catalog and forgets it. Until it
// returns the name stays taken (the server is Closed): an Add of the same
// name fails with ErrDuplicateServer, and Close waits for the runtime.
func (m *Manager) Remove(ctx context.Context, name string) (err error) {
	defer func() { err = withOp("remove", name, err) }()
	s, err := m.slot(name)
	if err != nil {
		return err
	}
	err = s.shutdown(ctx)
	// Forgotten only now, and only if Close has not taken it meanwhile: a
	// server added under the name must not have its publication forgotten,
	// nor be held to this one's generations.
	m.mu.Lock()
	if m.slots[name] == s {
		delete(m.slots, name)
		m.pub.Forget(name)
	}
	m.mu.Unlock()
	return err
}

// Enable switches a disabled server back on and starts connecting it (or,
// for a lazy server, leaves it Disconnected until the first call). It is a
// no-op for a server that is enabled.
func (m *Manager) Enable(ctx context.Context, name string) error {
	s, err := m.slot(name)
	if err != nil {
		return withOp("enable", name, err)
	}
	return withOp("enable", name, s.enable(ctx))
}

// Disable switches a server off. It returns once the old runtime is closed:
// in-flight calls get the drain timeout to finish, then the runtime is
// closed under them (by force, a stdio child killed, once ctx ends). After
// Disable returns no call reaches that runtime.
func (m *Manager) Disable(ctx context.Context, name string) error {
	s, err := m.slot(name)
	if err != nil {
		return withOp("disable", name, err)
	}
	return withOp("disable", name, s.disable(ctx))
}

// Reconnect replaces the server's runtime with a new one, with a fresh
// reconnect budget. It is how a host revives a PermanentlyFailed server.
// It returns once the reconnect is started; use WaitFor to wait for it.
func (m *Manager) Reconnect(ctx context.Context, name string) error {
	s, err := m.slot(name)
	if err != nil {
		return withOp("reconnect", name, err)
	}
	return withOp("reconnect", name, s.reconnect(ctx))
}

// View returns the aggregated catalog of every published server. It never
// locks and never touches the network.
func (m *Manager) View() *snapshot.View { return (*snapshot.View)(m.pub.View()) }

// Events returns a channel of events, in order, and a function that ends
// the subscription and closes the channel. The manager never waits for a
// subscriber: when the channel's buffer (DefaultEventBuffer if buffer <= 0)
// is full, events are dropped for that subscriber alone, and the next event
// it receives says how many in Dropped. The channel is closed by the cancel
// function or by Close.
func (m *Manager) Events(buffer int) (<-chan Event, func()) {
	return m.bus.subscribe(buffer)
}

// Watch lists, then watches: it returns every server's status (sorted by
// name), the Seq of the last event those statuses reflect, and a
// subscription that delivers only the events after it, in order. Applying
// those events to the statuses gives the statuses of any later moment:
// nothing is missed and nothing comes twice, unlike Statuses followed by
// Events, which may deliver events that happened before the list.
// buffer, dropping and cancel are as for Events.
//
// It briefly holds every server's lock, so that no event can happen while
// the list is taken.
func (m *Manager) Watch(buffer int) (statuses []ServerStatus, seq uint64, events <-chan Event, cancel func()) {
	// Every event is numbered under its slot's lock, so with them all
	// held the list and the last number agree (lock order: see slot).
	m.mu.RLock()
	defer m.mu.RUnlock()
	slots := sortedSlots(m.slots)
	for _, s := range slots {
		s.mu.Lock()
	}
	seq = m.bus.lastSeq()
	statuses = make([]ServerStatus, 0, len(slots))
	q := quarantinesByServer(m.pub.View())
	for _, s := range slots {
		statuses = append(statuses, s.statusLocked(q))
	}
	events, cancel = m.bus.subscribeAfter(buffer, seq)
	for _, s := range slots {
		s.mu.Unlock()
	}
	return statuses, seq, events, cancel
}

// Status returns a snapshot of one server's state.
func (m *Manager) Status(name string) (ServerStatus, error) {
	s, err := m.slot(name)
	if err != nil {
		return ServerStatus{}, withOp("status", name, err)
	}
	return s.status(), nil
}

// Statuses returns every server's status, sorted by name.
func (m *Manager) Statuses() []ServerStatus {
	slots, _ := m.slotList()
	out := make([]ServerStatus, 0, len(slots))
	q := quarantinesByServer(m.pub.View())
	for _, s := range slots {
		s.mu.Lock()
		out = append(out, s.statusLocked(q))
		s.mu.Unlock()
	}
	return out
}

// WaitFor blocks until the server is in state want or ctx ends. It returns
// an error wrapping ErrClosed if the server is closed while waiting for
// another state. Waiting for Connected, it returns at once, with an error
// wrapping ErrPermanentlyFailed and the cause, when the server is
// PermanentlyFailed: a mistake in its spec (a command not found, a wrong
// URL) or a spent budget, which no wait ends. (Its slow probe may still
// find it fixed later; Reconnect tries at once.) A server that needs
// authorization, or is disabled, is waited for: the user may authorize it,
// the host enable it.
//
// When ctx ends first, the error wraps ctx's error and the server's last
// cause (a dial's failure, say), and names the state it was still in:
// errors.Is finds both.
//
// WaitConnected is WaitFor(ctx, name, lifecycle.Connected), without the
// import; WaitReady waits for every server.
func (m *Manager) WaitFor(ctx context.Context, name string, want lifecycle.State) error {
	op := "wait for " + want.String()
	s, err := m.slot(name)
	if err != nil {
		return withOp(op, name, err)
	}
	for {
		s.mu.Lock()
		state, ch := s.state, s.changed
		if state != want && (state == lifecycle.Closed || want == lifecycle.Connected && state == lifecycle.PermanentlyFailed) {
			err = s.failFastLocked()
		}
		s.mu.Unlock()
		switch {
		case state == want:
			return nil
		case err != nil:
			return &ServerError{Server: name, Op: op, Err: err}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return &ServerError{Server: name, Op: op, Err: s.stillError(ctx, state)}
		}
	}
}

// WaitConnected blocks until the server is Connected: it is
// WaitFor(ctx, name, lifecycle.Connected), for a host that needs no other
// state and so no import of lifecycle.
func (m *Manager) WaitConnected(ctx context.Context, name string) error {
	return m.WaitFor(ctx, name, lifecycle.Connected)
}

// WaitReady waits until every server the Manager has when it is called is
// ready: Connected, or where no wait is needed (Disabled; lazy and not
// started yet, or closed for going idle: the next request starts it).
// It is how a host that Applied a config, or Added its servers, waits for
// the whole fleet before its first call.
//
// It returns at once, with that server's error naming it, when a server
// settles where no wait helps: PermanentlyFailed (the error wraps
// ErrPermanentlyFailed and the cause: a mistake in its spec, a spent
// budget), NeedsAuthorization (an *AuthorizationError: the user must
// authorize it), or Closed (removed meanwhile, or the Manager closed).
// When ctx ends first, the error names every server still not ready, with
// its state and its last cause, and wraps ctx's error: errors.Is finds
// ctx's error and each cause.
func (m *Manager) WaitReady(ctx context.Context) error {
	const op = "wait ready"
	slots, closed := m.slotList()
	if closed {
		return fmt.Errorf("mcpfleet: %s: %w", op, ErrClosed)
	}
	return waitAll(ctx, slots, true, func(s *slot, err error) error {
		return &ServerError{Server: s.name, Op: op, Err: err}
	})
}

// Close closes every server's runtime, reaps every child and waits for every
// goroutine the manager started. It returns the close errors of the
// runtimes, if any. Calls after Close fail with ErrClosed. A second Close
// returns nil once the first has finished.
//
// Every server is moved to Closed first, and their catalogs are
// unpublished together, in one View rather than one per server. Their
// runtimes are then closed all at once, within one close timeout (plus one
// drain timeout if calls were in flight): a runtime not closed by then is
// closed by force (a stdio child is killed). So a fleet of stdio children
// that ignore the end of their input closes in about one close grace
// (stdio.DefaultCloseGrace), however many there are.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-m.closeDone
		return nil
	}
	m.closed = true
	slots := m.slots
	m.slots = map[string]*slot{}
	m.mu.Unlock()
	// The task handles stay in their store, for the next Manager.
	m.tasks.close()

	type job struct {
		s    *slot
		l    *lease
		done bool // already Closed: another shutdown is closing it
	}
	// With every slot locked (in name order, as Watch takes them), the
	// catalogs are unpublished at once and then each slot is moved to
	// Closed: no one sees a Closed server still published, nor a live one
	// unpublished. The slots' own Unpublish then finds nothing to do.
	sorted := sortedSlots(slots)
	for _, s := range sorted {
		s.mu.Lock()
	}
	diffs := m.pub.Clear()
	jobs := make([]job, 0, len(sorted))
	for _, s := range sorted {
		if s.state == lifecycle.Closed {
			jobs = append(jobs, job{s: s, done: true})
		} else {
			jobs = append(jobs, job{s: s, l: s.stopLocked(lifecycle.Closed)})
		}
		if d, ok := diffs[s.name]; ok && !d.Empty() {
			s.emitLocked(catalogEvent(d))
		}
		s.mu.Unlock()
	}

	// Every close starts now and they are waited for together: a close is
	// mostly waiting (a stdio child's close grace, an HTTP DELETE), not
	// work, and a bound on closes at once made n children that ignore the
	// end of their input take ceil(n/bound) graces one after another. One
	// deadline for all. The drain timeout counts only if some runtime has
	// calls to drain.
	deadline := m.opts.closeTimeout
	for _, j := range jobs {
		if j.l != nil && j.l.inflight.Load() > 0 {
			deadline += m.opts.drainTimeout
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	for _, j := range jobs {
		wg.Go(func() {
			if j.done {
				j.s.runners.Wait()
				j.s.closing.Wait()
				return
			}
			if err := j.s.teardown(ctx, j.l); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	m.cancel()
	m.wg.Wait()
	m.tasks.release()
	m.cache.close()
	// Every child is reaped, so every entry is gone: this removes the file.
	if err := m.registry.Close(); err != nil {
		errs = append(errs, err)
	}
	m.bus.close()
	close(m.closeDone)
	return errors.Join(errs...)
}

func (m *Manager) slot(name string) (*slot, error) {
	m.mu.RLock()
	s, ok := m.slots[name]
	closed := m.closed
	m.mu.RUnlock()
	if !ok {
		if closed {
			return nil, serverError(ErrClosed, name, nil)
		}
		return nil, serverError(ErrUnknownServer, name, nil)
	}
	return s, nil
}

// slotList returns the servers, sorted by name, and whether the Manager is
// closed. The list is a copy made under the read lock: the caller walks it
// with no Manager lock held, taking each slot's lock in turn, and a server
// removed meanwhile is Closed by then.
func (m *Manager) slotList() ([]*slot, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedSlots(m.slots), m.closed
}

// sortedSlots returns the slots of a map, sorted by name: the order the
// package takes several slots' locks in (see slot), and the order of every
// list of servers it returns.
func sortedSlots(slots map[string]*slot) []*slot {
	out := make([]*slot, 0, len(slots))
	for _, s := range slots {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *slot) int { return strings.Compare(a.name, b.name) })
	return out
}

// bug records an attempted illegal transition.
func (m *Manager) bug(server string, err error) {
	m.illegal.Add(1)
	m.opts.logger.Error("mcpfleet: bug: refused an illegal transition", "server", server, "error", err)
}
