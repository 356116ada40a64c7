package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
)

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

// budgetFor returns a fresh reconnect budget under spec's policy, or the
// manager's.
func (m *Manager) budgetFor(spec ServerSpec) *machine.Budget {
	policy := m.opts.policy
	if spec.Reconnect != nil {
		policy = *spec.Reconnect
	}
	return machine.NewBudget(policy, m.opts.clock)
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
	resumed := false          // the rest of a step whose pulled dial failed
	up, stopUp := s.watchUp() // cooldown.go: nil unless shared
	defer stopUp()
	woken := false
	for {
		pulled, kicked := false, false
		if wait > 0 {
			due := clock.Now().Add(wait)
			var ok bool
			if ok, pulled, kicked = s.waitStep(ctx, r, wait, !probing && !resumed, up, &woken); !ok {
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
		legacy, authorizations := s.legacy, s.authorizations
		s.mu.Unlock()

		var t turn
		if up != nil {
			s.mu.Lock()
			fresh := s.gen == 0
			s.mu.Unlock()
			if t = s.takeTurn(ctx, r, up, fresh, kicked, &woken); !t.ok {
				return
			}
		}
		began := s.m.opts.clock.Now()
		res := s.dial(ctx, legacy)
		if up != nil {
			woken = false
			s.dialed(t, res.err)
		}
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
				l.close(context.Background())
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
		if needsUser(err) && s.authorizations != authorizations {
			// The user authorized the client while this dial ran without
			// the token: dial again at once, with it.
			wait = 0
			s.mu.Unlock()
			continue
		}
		if needsUser(err) {
			// Only the user can help: no budget is spent and nothing is
			// dialled until the authorization is completed.
			s.nextRetry = time.Time{}
			s.run = nil
			s.setStateLocked(lifecycle.NeedsAuthorization, err)
			s.mu.Unlock()
			return
		}
		if !probing && !s.proven {
			if mistake := s.mistakeLocked(res); mistake != nil {
				// No retry can fix it: say so now, not after the budget.
				// The slow probe still finds it fixed.
				s.budget.Failed() // counted; the wait is the probe's
				err, s.lastErr = mistake, mistake
				s.nextRetry = time.Time{}
				s.setStateLocked(lifecycle.PermanentlyFailed, err)
				probing, pulled = true, false
			}
		}
		if pulled {
			// The extra dial failed: wait out the rest of the step.
			resumed = true
			s.emitLocked(Event{Kind: EventRetry, Err: err})
			s.mu.Unlock()
			continue
		}
		if !probing {
			ok := false
			if res.exitedAtStart != "" && !s.proven {
				// Perhaps a server that cannot start: find out fast.
				wait, ok = s.budget.Quick()
			}
			if !ok {
				wait, ok = s.budget.Failed()
			}
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

// mistakeExits is how many times in a row a server must exit the same way
// before it answers its handshake, on its first connect, for the connect
// loop to take it for a server that cannot start.
const mistakeExits = 3

// mistakeLocked judges a failed dial of a server that never connected
// under its configuration. It returns the cause to settle in
// PermanentlyFailed with when the failure is a mistake that no retry can
// fix without a person (see transport.ErrMisconfigured), or when the
// server exited before answering its handshake mistakeExits times in a
// row, the same way; nil when it may be an outage, to retry.
func (s *slot) mistakeLocked(res dialResult) error {
	if errors.Is(res.err, transport.ErrMisconfigured) {
		return res.err
	}
	if res.exitedAtStart == "" {
		s.startExits = 0
		return nil
	}
	if res.exitedAtStart != s.startExit {
		s.startExit, s.startExits = res.exitedAtStart, 0
	}
	s.startExits++
	if s.startExits < mistakeExits {
		return nil
	}
	return &startLoopError{times: s.startExits, how: s.startExit, err: res.err}
}

// startLoopError is the cause of a server that exited before answering its
// handshake, the same way, every time it was started.
type startLoopError struct {
	times int
	how   string
	err   error // the last attempt's
}

func (e *startLoopError) Error() string {
	return fmt.Sprintf("the server exited before answering initialize %d times in a row, each with %s: %v", e.times, e.how, e.err)
}

func (e *startLoopError) Unwrap() error { return e.err }

// applyDialLocked keeps what a connection attempt found out about the
// server, whatever became of the attempt.
func (s *slot) applyDialLocked(res dialResult) {
	if res.legacy {
		s.legacy = true
	}
	if res.lease != nil || res.rejoinDeclined || sessionGone(res.err) {
		s.rejoin = nil // settled: rejoined, or the server (or its process) forgot it
	}
	if res.lease != nil && rejoined(res.lease.conn) {
		s.st.rejoins.Add(1)
	}
	if res.stderr != nil {
		s.lastStderr = res.stderr
	}
}

// waitStep waits out one backoff step, or less if Reconnect kicks the loop
// or, when pullable, a waiting call pulls the dial forward. It reports
// whether the loop should go on, whether a call (and not Reconnect)
// ended the wait, and whether Reconnect did. Probes are not pullable:
// calls fail fast in PermanentlyFailed.
//
// up, when not nil, is the upstream's shared wake-up (cooldown.go): a
// replica found it back, so the wait ends and woken is set.
func (s *slot) waitStep(ctx context.Context, r *runner, wait time.Duration, pullable bool, up <-chan struct{}, woken *bool) (ok, pulled, kicked bool) {
	// Pullable before the timer exists: a call that sees the step begun
	// (its timer armed) must find it pullable.
	s.mu.Lock()
	r.pullable = pullable
	s.mu.Unlock()
	c, stop := s.m.opts.clock.NewTimer(wait)
	defer stop()
	select {
	case <-c:
	case <-r.kick:
		kicked = true
	case <-up:
		*woken = true
	case <-r.pull:
		pulled = true
	case <-ctx.Done():
		return false, false, false
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
			pulled, kicked = false, true
		default:
		}
	}
	s.mu.Unlock()
	return true, pulled, kicked
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
	s.proven = true
	s.startExits = 0
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
