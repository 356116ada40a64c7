package fleet

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
)

// Defaults of Config.
const (
	// DefaultIdleTimeout is how long a user's fleet stays up after its
	// last Release.
	DefaultIdleTimeout = 15 * time.Minute
	// DefaultMaxLive is how many users' fleets are up at once before the
	// least recently used idle one is closed.
	DefaultMaxLive = 1000
)

// ErrClosed is the error of Get on a closed Pool.
var ErrClosed = errors.New("mcpfleet: fleet: pool closed")

// Config configures a Pool.
type Config struct {
	// Template is the servers of every user's fleet. Required.
	Template *Template
	// Values returns user's values of the template's ${user:NAME}
	// variables (${user:id} is the user's id without it). The pool calls
	// it each time it builds the user's fleet, with the context of the Get
	// that builds it, and keeps nothing of what it returns. An error fails
	// that Get. It may be nil if the template uses no variable but
	// ${user:id}.
	Values func(ctx context.Context, user string) (map[string]string, error)
	// Shared is where the users' fleets keep what they share and what
	// outlives them (see the package doc). Defaults to a store.Memory of
	// the pool's own.
	Shared store.Shared
	// IdleTimeout is how long a fleet no one holds stays up. Defaults to
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxLive caps the fleets up at once: past it, the idle fleet used
	// least recently is closed. Fleets in use are never closed under
	// their callers: when every fleet is in use, the pool goes over the
	// cap until one is released. Defaults to DefaultMaxLive.
	MaxLive int
	// Options are the options of every user's Manager, after the pool's
	// own (WithUser, WithSharedState, TaskOptions.SharedScope,
	// WithCatalogIdentity, and WithLogger with Logger); UserOptions(user)
	// adds the user's own after them.
	Options     []client.Option
	UserOptions func(user string) []client.Option
	// UserCatalogs names more servers whose tools depend on the user:
	// their cached catalogs are kept per user, not shared. Those whose
	// template entry uses a ${user:…} variable, in any field, or has an
	// oauth block are so already (Template.PerUser); name here a server
	// that asks for OAuth without an oauth block in the template, or
	// that tells users apart some other way.
	UserCatalogs []string
	// SharedCatalogs names servers whose entry depends on the user
	// (Template.PerUser) but whose tools, prompts and resources are the
	// same for every user (a token in a header that every account
	// answers with the same catalog): their catalogs are shared, so a
	// new user's fleet shows them before its first connect. Naming a
	// server that shows each user their own (a resource per document, a
	// tool per project) shows one user's catalog to every other user.
	// A name that is no server of the template, or that UserCatalogs
	// names too, is an error of New.
	SharedCatalogs []string
	// TaskScope returns the scope of user's open tasks in Shared (see
	// client.TaskOptions.SharedScope). Defaults to the user's id: a user's fleet
	// is up in one process at a time. A host whose replicas may each hold
	// one user's fleet at once gives each replica a scope of its own.
	TaskScope func(user string) string
	// OnClose, if set, is told each time a user's fleet was closed, and
	// why, after the close, with no lock held.
	OnClose func(user string, why Reason)
	// Clock is the clock of the idle timeout. Defaults to the system
	// clock.
	Clock lifecycle.Clock
	// Logger gets the pool's lines, and each user's Manager's with the
	// user's id. Defaults to discarding them.
	Logger *slog.Logger
}

// Reason is why a user's fleet was closed.
type Reason int

const (
	// Idle: no one held it for the idle timeout.
	Idle Reason = iota
	// OverCap: the pool was over MaxLive, and it was the idle fleet used
	// least recently.
	OverCap
	// Evicted: the host asked (Pool.Evict).
	Evicted
	// PoolClosed: the pool was closed.
	PoolClosed
)

var reasonNames = [...]string{"idle", "over cap", "evicted", "pool closed"}

// String returns the reason's name.
func (r Reason) String() string {
	if r >= 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Stats is a snapshot of a Pool.
type Stats struct {
	// Live counts the fleets up (in use or idle), Building those being
	// built, InUse those lent by Get and not yet released, Closing those
	// being closed.
	Live, Building, InUse, Closing int
	// Built and Closed count the fleets built and closed since New.
	Built, Closed uint64
}

// Pool keeps one Manager per user. It is safe for concurrent use.
//
// Lock order: Pool.mu is a leaf; no Manager is made, applied or closed
// under it.
type Pool struct {
	// Set at creation, read-only.
	cfg     Config
	tmpl    *Template
	shared  store.Shared
	clock   lifecycle.Clock
	log     *slog.Logger
	private map[string]bool // servers whose catalog is the user's own
	stop    chan struct{}   // closed by Close: the janitor ends
	wake    chan struct{}   // capacity 1: the janitor looks again

	wg sync.WaitGroup // builds, closes and the janitor

	mu      sync.Mutex // guards the fields below
	closed  bool
	users   map[string]*entry        // building or up
	closing map[string]chan struct{} // being closed; closed when done
	idle    *list.List               // of *entry up and held by no one, least recently used first
	live    int                      // entries of users that are up
	built   uint64
	ended   uint64
}

// entry is one user's fleet, from the start of its build to its close.
type entry struct {
	user  string
	ready chan struct{} // closed when the build ended

	// Guarded by Pool.mu.
	m        *client.Manager // nil while building
	err      error           // the build's error, once ready
	refs     int             // Gets not released
	lastUsed time.Time
	elem     *list.Element // in Pool.idle while refs == 0 and up
	evict    bool          // Evict asked while in use: close at release
}

// New returns a Pool of cfg.
func New(cfg Config) (*Pool, error) {
	if cfg.Template == nil {
		return nil, errors.New("mcpfleet: fleet: Config.Template is nil")
	}
	if cfg.Values == nil && cfg.Template.usesOther {
		return nil, fmt.Errorf("mcpfleet: fleet: the template uses ${user:…} variables %v and Config.Values is nil",
			cfg.Template.Variables())
	}
	for _, name := range cfg.SharedCatalogs {
		if _, ok := cfg.Template.identity[name]; !ok {
			return nil, fmt.Errorf("mcpfleet: fleet: Config.SharedCatalogs: the template has no server %q", name)
		}
		if slices.Contains(cfg.UserCatalogs, name) {
			return nil, fmt.Errorf("mcpfleet: fleet: server %q is in both Config.SharedCatalogs and Config.UserCatalogs", name)
		}
	}
	p := &Pool{cfg: cfg, tmpl: cfg.Template, shared: cfg.Shared, clock: cfg.Clock, log: cfg.Logger,
		private: map[string]bool{}, stop: make(chan struct{}), wake: make(chan struct{}, 1),
		users: map[string]*entry{}, closing: map[string]chan struct{}{}, idle: list.New()}
	if p.shared == nil {
		p.shared = store.NewMemory()
	}
	if p.clock == nil {
		p.clock = lifecycle.SystemClock{}
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.cfg.IdleTimeout <= 0 {
		p.cfg.IdleTimeout = DefaultIdleTimeout
	}
	if p.cfg.MaxLive <= 0 {
		p.cfg.MaxLive = DefaultMaxLive
	}
	for name, per := range cfg.Template.perUser {
		p.private[name] = per
	}
	for _, name := range cfg.SharedCatalogs {
		p.private[name] = false
	}
	for _, name := range cfg.UserCatalogs {
		p.private[name] = true
	}
	p.wg.Go(p.janitor)
	return p, nil
}

// Fleet is one user's Manager, lent by Get until Release. The pool closes
// the Manager; the host never does.
type Fleet struct {
	p        *Pool
	e        *entry
	m        *client.Manager
	released bool
	mu       sync.Mutex // guards released
}

// Manager returns the user's Manager.
func (f *Fleet) Manager() *client.Manager { return f.m }

// User returns the user's id.
func (f *Fleet) User() string { return f.e.user }

// Release gives the fleet back: from then on it counts as idle, and may
// be closed. Releasing twice is a no-op.
func (f *Fleet) Release() {
	f.mu.Lock()
	done := f.released
	f.released = true
	f.mu.Unlock()
	if !done {
		f.p.release(f.e)
	}
}

// Get returns user's fleet, building it if the user has none up: a
// Manager made with the pool's options, to which the template's config
// for the user is applied. A returning user's (or a new user's) servers
// have their cached catalogs published when Get returns, and connect in
// the background (Apply waits only for the servers the template marks
// required). Concurrent Gets of one user build one Manager; one whose
// build fails gets its error. The fleet is the caller's until Release;
// the pool never closes a fleet in use (but Close closes every one).
func (p *Pool) Get(ctx context.Context, user string) (*Fleet, error) {
	if user == "" {
		return nil, errors.New("mcpfleet: fleet: get: the user id is empty")
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		e := p.users[user]
		if e == nil {
			e = &entry{user: user, ready: make(chan struct{})}
			p.users[user] = e
			prev := p.closing[user]
			p.wg.Add(1)
			p.mu.Unlock()
			err := p.build(ctx, e, prev)
			p.wg.Done()
			if err != nil {
				return nil, err
			}
			return &Fleet{p: p, e: e, m: e.m}, nil
		}
		if e.m != nil {
			e.refs++
			if e.elem != nil {
				p.idle.Remove(e.elem)
				e.elem = nil
			}
			f := &Fleet{p: p, e: e, m: e.m}
			p.mu.Unlock()
			return f, nil
		}
		ready := e.ready
		p.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("mcpfleet: fleet: get %q: %w", user, ctx.Err())
		}
		p.mu.Lock()
		err := e.err
		p.mu.Unlock()
		// A build that failed for its own caller's context is tried
		// again by this caller; any other failure is this Get's too.
		if err != nil && !isContextError(err) {
			return nil, err
		}
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// build builds e's Manager, after the close of the user's previous one
// (prev, if any) ended: a user has one Manager at a time, so that two
// never poll one scope's tasks. It ends with e up and held once, or
// removed.
func (p *Pool) build(ctx context.Context, e *entry, prev chan struct{}) error {
	m, err := p.make(ctx, e.user, prev)
	p.mu.Lock()
	if err == nil && p.closed {
		err = ErrClosed
	}
	if err != nil {
		delete(p.users, e.user)
		e.err = err
		close(e.ready)
		p.mu.Unlock()
		if m != nil {
			// Never lent: closed without a word to OnClose.
			if cerr := m.Close(); cerr != nil {
				p.log.Warn("mcpfleet: fleet: closing a fleet whose build failed", "user", e.user, "error", cerr)
			}
		}
		return err
	}
	e.m, e.refs, e.lastUsed = m, 1, p.clock.Now()
	p.live++
	p.built++
	victims := p.overCapLocked()
	close(e.ready)
	p.mu.Unlock()
	p.closeAll(victims, OverCap)
	return nil
}

// make makes and configures user's Manager.
func (p *Pool) make(ctx context.Context, user string, prev chan struct{}) (*client.Manager, error) {
	if prev != nil {
		select {
		case <-prev:
		case <-ctx.Done():
			return nil, fmt.Errorf("mcpfleet: fleet: get %q: waiting for the close of the user's last fleet: %w", user, ctx.Err())
		}
	}
	var values map[string]string
	if p.cfg.Values != nil {
		var err error
		if values, err = p.cfg.Values(ctx, user); err != nil {
			return nil, fmt.Errorf("mcpfleet: fleet: get %q: values: %w", user, err)
		}
	}
	cfg, err := p.tmpl.Config(user, values)
	if err != nil {
		return nil, err
	}
	m := client.New(p.options(user)...)
	if _, err := m.Apply(ctx, cfg); err != nil {
		return m, scrub(err, user, values)
	}
	return m, nil
}

// options are the options of user's Manager.
func (p *Pool) options(user string) []client.Option {
	scope := user
	if p.cfg.TaskScope != nil {
		scope = p.cfg.TaskScope(user)
	}
	opts := []client.Option{
		client.WithUser(user),
		client.WithSharedState(p.shared),
		client.WithTasks(client.TaskOptions{SharedScope: scope}),
		client.WithCatalogIdentity(func(server string) string {
			id, ok := p.tmpl.identity[server]
			if !ok {
				return "" // not the template's: the Manager's own key
			}
			if p.private[server] {
				return id + "\x00user\x00" + user
			}
			return id
		}),
	}
	if p.cfg.Logger != nil {
		opts = append(opts, client.WithLogger(p.cfg.Logger.With("user", user)))
	}
	opts = append(opts, p.cfg.Options...)
	if p.cfg.UserOptions != nil {
		opts = append(opts, p.cfg.UserOptions(user)...)
	}
	return opts
}

// release ends one Get's hold on e.
func (p *Pool) release(e *entry) {
	p.mu.Lock()
	if p.users[e.user] != e || e.m == nil {
		p.mu.Unlock() // closed meanwhile (the pool)
		return
	}
	e.refs--
	e.lastUsed = p.clock.Now()
	var victims []*entry
	why := OverCap
	switch {
	case e.refs > 0:
	case e.evict:
		p.takeLocked(e)
		victims, why = []*entry{e}, Evicted
	default:
		// The janitor's next deadline is the front's: it changes only
		// when the list was empty.
		wake := p.idle.Len() == 0
		e.elem = p.idle.PushBack(e)
		victims = p.overCapLocked()
		if wake {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	}
	p.mu.Unlock()
	p.closeAll(victims, why)
}

// overCapLocked takes the idle fleets used least recently out while more
// than MaxLive are up, and returns them, to be closed. p.mu is held.
func (p *Pool) overCapLocked() []*entry {
	var out []*entry
	for p.live > p.cfg.MaxLive && p.idle.Len() > 0 {
		e := p.idle.Front().Value.(*entry)
		p.takeLocked(e)
		out = append(out, e)
	}
	return out
}

// takeLocked takes e, up, out of the pool, to be closed: a Get of its
// user from now on builds a new fleet, after this one's close. p.mu is
// held.
func (p *Pool) takeLocked(e *entry) {
	delete(p.users, e.user)
	p.live--
	if e.elem != nil {
		p.idle.Remove(e.elem)
		e.elem = nil
	}
	p.closing[e.user] = make(chan struct{})
}

// closeAll closes the Managers of entries taken out, each in a goroutine
// of the pool's: a close drains calls, and the caller (a Get, a Release)
// must not wait for it.
func (p *Pool) closeAll(es []*entry, why Reason) {
	for _, e := range es {
		p.wg.Go(func() {
			p.closeManager(e.user, e.m, why)
			p.mu.Lock()
			done := p.closing[e.user]
			delete(p.closing, e.user)
			p.mu.Unlock()
			close(done)
		})
	}
}

// closeManager closes user's Manager m and says so.
func (p *Pool) closeManager(user string, m *client.Manager, why Reason) {
	if err := m.Close(); err != nil {
		p.log.Warn("mcpfleet: fleet: closing a user's fleet", "user", user, "reason", why.String(), "error", err)
	}
	p.mu.Lock()
	p.ended++
	p.mu.Unlock()
	if p.cfg.OnClose != nil {
		p.cfg.OnClose(user, why)
	}
}

// janitor closes the fleets idle for the idle timeout, until Close.
func (p *Pool) janitor() {
	for {
		p.mu.Lock()
		now := p.clock.Now()
		var victims []*entry
		wait := time.Duration(-1)
		for p.idle.Len() > 0 {
			e := p.idle.Front().Value.(*entry)
			if d := e.lastUsed.Add(p.cfg.IdleTimeout).Sub(now); d > 0 {
				wait = d
				break
			}
			p.takeLocked(e)
			victims = append(victims, e)
		}
		p.mu.Unlock()
		p.closeAll(victims, Idle)
		var fire <-chan time.Time
		stopTimer := func() bool { return false }
		if wait > 0 {
			fire, stopTimer = p.clock.NewTimer(wait)
		}
		select {
		case <-fire:
		case <-p.wake:
		case <-p.stop:
			stopTimer()
			return
		}
		stopTimer()
	}
}

// Evict closes user's fleet, now if no one holds it, else when the last
// holder releases it: what a host does when the user logs out. It
// reports whether the user had a fleet up. What the user keeps in the
// shared store (tokens, tasks) stays; see client.Manager.ForgetAuthorization
// for the tokens.
func (p *Pool) Evict(user string) bool {
	p.mu.Lock()
	e := p.users[user]
	if e == nil || e.m == nil {
		p.mu.Unlock()
		return false
	}
	if e.refs > 0 {
		e.evict = true
		p.mu.Unlock()
		return true
	}
	p.takeLocked(e)
	p.mu.Unlock()
	p.closeAll([]*entry{e}, Evicted)
	return true
}

// Users returns the users whose fleets are up, sorted.
func (p *Pool) Users() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.users))
	for u, e := range p.users {
		if e.m != nil {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Live: p.live, Building: len(p.users) - p.live, InUse: p.live - p.idle.Len(),
		Closing: len(p.closing), Built: p.built, Closed: p.ended}
	return s
}

// Close closes every user's fleet, those in use too (their calls then
// fail with client.ErrClosed), waits for the closes and for the builds in
// progress, and makes every later Get fail with ErrClosed. The shared
// store is left open: it is the host's (or, by default, dropped with the
// pool).
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	var victims []*entry
	for _, e := range p.users {
		if e.m != nil {
			victims = append(victims, e)
		}
	}
	for _, e := range victims {
		p.takeLocked(e)
	}
	p.mu.Unlock()
	close(p.stop)
	p.closeAll(victims, PoolClosed)
	p.wg.Wait()
	return nil
}
