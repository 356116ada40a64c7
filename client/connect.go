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
	r := newRunner(s, cancel, step{wait: wait, probing: probing})
	s.run = r
	s.m.wg.Add(1)
	s.runners.Add(1)
	go r.loop(ctx)
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
