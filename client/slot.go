package client

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// slot is the stable home of one server from Add to Remove. Its methods
// live in files named after what they do: connect.go (starting a connect
// loop, installing a dial's lease), watch.go (a runtime's watcher: its
// death, list_changed refreshes, the idle probe), state.go (the one place
// the state is decided: the setter, a request's question, the one
// decision after a dial, the answers to a runtime's failure reports,
// Disable, Enable, Reconnect, reconfigure), failure.go (what a failed
// request means), teardown.go (detach, then close), status.go and
// stats.go, idle.go. The connect loop is not the slot's: its runner
// (runner.go; a dial in dial.go, the shared cooldown in cooldown.go) owns
// the loop's own state and hands each dial's result to the slot.
//
// Locking. The slot's lock is never held while doing I/O, closing a
// runtime or delivering an event: those happen after the state they
// depend on was changed under the lock. A method that expects the lock
// held says so with its Locked suffix. The lock order of the package, the
// one place it is written:
//
//	Manager.applyMu → Manager.mu → slot.mu (several: in name order, as
//	Watch takes them) → the Publisher's lock, bus.mu, bus.subMu
//
// The locks of the last group are leaves, as are lease.listen.mu,
// Manager.roots.mu, a server's oauth.Authorizer's and a progress sink's:
// nothing is locked while one of them is held, and a slot's lock is never
// taken under any of them.
//
// MCP tasks (task.go, taskpoll.go): a Task's mu is taken under its slot's
// lock, so that its events are numbered in order with the slot's, and is a
// leaf, as is the task registry's mu (the two are never held together). A
// Task's saveMu orders its records in the TaskStore: it is held while one
// is written, and a record is read under the Task's mu within it.
type slot struct {
	// Set at creation, read-only.
	m    *Manager
	name string

	// Their own synchronization.
	//
	// cfg is what the slot was configured with: read without the lock,
	// replaced whole, under mu, by reconfigure and setIdleTimeout.
	cfg atomic.Pointer[slotConfig]
	// rare holds what most slots never need (slotRare); nil until the
	// first of it is needed, then kept for the slot's life.
	rare atomic.Pointer[slotRare]
	// closing counts this slot's detached runtimes still being closed in
	// the background, and runners counts its connect loops, abandoned ones
	// included. Both are added to under mu only; Disable and Remove wait
	// for both after leaving the states that start either, so that no
	// runtime of the slot outlives them.
	closing sync.WaitGroup
	runners sync.WaitGroup
	// st are the slot's counters: atomics, counted where things happen
	// (the request path included).
	st slotStats
	// intercepting counts the host's requests inside the interceptor chain
	// (intercept.go), an approval awaited among them: use, for the idle
	// check, before any runtime is involved.
	intercepting atomic.Int32

	// Guarded by mu. The state machine's fields (state, stateSince,
	// changed) are written by setStateLocked alone; gen and lease by
	// installLocked and detachLocked; run by connectLocked, applyDial (the
	// loop's end) and the methods that abandon the loop (stopLocked,
	// reconnect, reconfigure); budget, health, lastErr and nextRetry by
	// applyDial and the answers to failure reports (state.go). The runner
	// writes none of them: it returns a dial's dialResult, which applyDial
	// applies, and keeps the loop's own state (the wait, probing) itself.
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
	// proven is set once a runtime of the current configuration connected:
	// from then on its dial failures are outages, never mistakes (see
	// mistakeLocked). startExits counts the dials in a row whose server
	// exited before its handshake in the way startExit says.
	proven bool
	legacy bool // the server rejected 2026-07-28: dial the older handshake first
	cached bool // the published catalog came from the catalog cache
	// authorizations counts the authorizations the user completed: a dial
	// that began before the last one and found no usable token dials
	// again at once rather than wait in NeedsAuthorization.
	authorizations uint64
	startExits     int
	startExit      string
	// rejoin is the session of the runtime lost to a fault, which the
	// next dial goes on in if the server still knows it (session.go);
	// nil when there is none, and once a dial settled it.
	rejoin *mcphttp.Rejoin
	// raw is the catalog the server last sent (or the cache gave), before
	// the tool filter: what is published, filtered, while anything is.
	// A filter change republishes it without asking the server.
	raw *catalog.Catalog
}

// slotRare is the part of a slot that most slots never need: what its
// limits dropped or refused, what the host asked of the server beyond its
// tools, and when it went idle. It is made on first need (slot.more) and
// kept, so that a fleet of servers that never use it does not carry it
// (about 300 bytes a slot).
type slotRare struct {
	// dropped and refused are what the slot's limits dropped and refused
	// (budget.go), for its status and its events: atomics and the report
	// goroutine's own; they live as long as the slot, across runtimes and
	// configurations.
	dropped tally                    // notifications over the rate
	refused [numServerRequests]tally // the server's requests of the host, by method

	// The rest is guarded by the slot's mu.
	//
	// What the host asked of the server, told again to every new runtime.
	logLevel mcp.LoggingLevel // SetLevel's; empty if never set
	subs     []string         // resource URIs subscribed to, in order
	// idleSince is when the runtime was closed for going unused (idle.go);
	// zero once the slot leaves Disconnected.
	idleSince time.Time
}

// more returns s.rare, made if it was not yet. It takes no lock, so that
// the transport's goroutine can count a drop with it.
func (s *slot) more() *slotRare {
	if r := s.rare.Load(); r != nil {
		return r
	}
	s.rare.CompareAndSwap(nil, new(slotRare))
	return s.rare.Load()
}

// logLevelLocked is the log level the host last set on the server, told
// again to every new runtime; empty if never set. The caller holds s.mu.
func (s *slot) logLevelLocked() mcp.LoggingLevel {
	if r := s.rare.Load(); r != nil {
		return r.logLevel
	}
	return ""
}

// subsLocked returns a copy of the resource URIs the host is subscribed to
// on the server, in order; subscribedLocked whether there is any. The
// caller holds s.mu.
func (s *slot) subsLocked() []string {
	if r := s.rare.Load(); r != nil {
		return slices.Clone(r.subs)
	}
	return nil
}

func (s *slot) subscribedLocked() bool {
	r := s.rare.Load()
	return r != nil && len(r.subs) > 0
}

// idleSinceLocked is when the runtime was closed for going unused; zero
// unless the slot is Disconnected for that. The caller holds s.mu.
func (s *slot) idleSinceLocked() time.Time {
	if r := s.rare.Load(); r != nil {
		return r.idleSince
	}
	return time.Time{}
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
	notes    *bucket
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
	// cached. cooldownKey names the upstream in the shared cooldowns
	// (cooldown.go); empty: not shared.
	cacheKey    string
	cooldownKey string
	// auth holds the server's OAuth tokens, for every runtime of this
	// configuration; nil without spec.OAuth.
	auth *oauth.Authorizer
}

func newSlotConfig(m *Manager, name string, spec ServerSpec, key string) *slotConfig {
	spec.ToolFilter = spec.ToolFilter.clone() // the caller's slices may change
	c := &slotConfig{spec: spec, prefix: spec.ToolPrefix, key: key, limits: spec.Limits.over(m.opts.limits)}
	c.transport, c.address, c.port = spec.describe()
	c.cacheKey = m.catalogKey(name, spec, key)
	c.cooldownKey = cooldownKey(spec)
	if spec.OAuth != nil && spec.HTTP != nil {
		opts := m.oauthOptions(name)
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
