package client

import (
	"fmt"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Idle shutdown (ServerSpec.IdleTimeout). A connected runtime under an idle
// timeout has one check armed on the Manager's clock: no goroutine waits
// for it, and nothing on the call path touches it. Uses only stamp the
// lease's lastUse (a request ending, a notification, a request of the
// server's answered); the check, when it fires, looks at the lease under
// the slot's lock and either closes the runtime or arms itself again for
// when the server could next be idle. A busy server (a request in flight,
// a server request being answered, a resource subscription) is looked at
// again a whole timeout later.

// SetIdleTimeout changes the idle timeout of server name (see
// ServerSpec.IdleTimeout) in place: no reconnect, no new generation. A
// connected server's check counts the new timeout from its last use (from
// now, if it had no timeout before), so a shorter one may close it at
// once; zero turns the check off.
//
// For a server that came from a config, the next Apply puts the entry's
// idleTimeout back.
func (m *Manager) SetIdleTimeout(name string, d time.Duration) error {
	if err := validateIdleTimeout(d); err != nil {
		return &ServerError{Server: name, Op: "set idle timeout", Err: fmt.Errorf("%w: %w", ErrInvalidSpec, err)}
	}
	s, err := m.slot(name)
	if err != nil {
		return withOp("set idle timeout", name, err)
	}
	return withOp("set idle timeout", name, s.setIdleTimeout(d))
}

// idleVerdict is what one idle check found, for tests (Manager.onIdle).
type idleVerdict int

const (
	idleNotYet     idleVerdict = iota // used within the timeout: checked again when it could be idle
	idleBusy                          // a request in flight or a server request pending
	idleSubscribed                    // the host is subscribed to a resource of the server
	idleClosed                        // idle: the runtime was closed
)

var idleVerdictNames = [...]string{"not yet", "busy", "subscribed", "closed"}

func (v idleVerdict) String() string { return idleVerdictNames[v] }

// used records a use of l, if its server has an idle timeout: a request
// ended, a notification came, a server request was answered.
func (l *lease) used() {
	if l.slot.config().spec.IdleTimeout > 0 {
		l.lastUse.Store(l.slot.m.opts.clock.Now().UnixNano())
	}
}

// armIdleLocked (re)arms l's idle check to run after d, replacing the one
// armed. The slot's lock is held, and l is the slot's lease.
func (s *slot) armIdleLocked(l *lease, d time.Duration) {
	stopIdleLocked(l)
	l.idleSeq++
	seq := l.idleSeq
	l.idleStop = s.m.afterFunc(max(d, 0), func() { s.idleCheck(l, seq) })
}

// stopIdleLocked disarms l's idle check, if one is armed. The slot's lock
// is held.
func stopIdleLocked(l *lease) {
	if l.idleStop != nil {
		l.idleStop()
		l.idleStop = nil
	}
}

// idleCheck runs when l's idle check fires: it closes l's runtime if the
// server went unused for its idle timeout, or arms the check again.
func (s *slot) idleCheck(l *lease, seq uint64) {
	s.mu.Lock()
	if s.lease != l || l.idleSeq != seq {
		s.mu.Unlock() // detached, or re-armed since
		return
	}
	l.idleStop = nil
	timeout := s.config().spec.IdleTimeout
	if timeout <= 0 {
		s.mu.Unlock() // turned off since
		return
	}
	var v idleVerdict
	now := s.m.opts.clock.Now()
	switch {
	case s.subscribedLocked():
		v = idleSubscribed
		s.armIdleLocked(l, timeout)
	case l.inflight.Load() > 0 || l.serving.Load() > 0 || s.intercepting.Load() > 0:
		v = idleBusy
		s.armIdleLocked(l, timeout)
	default:
		if wait := time.Unix(0, l.lastUse.Load()).Add(timeout).Sub(now); wait > 0 {
			v = idleNotYet
			s.armIdleLocked(l, wait)
		} else {
			v = idleClosed
			s.idleLocked(timeout)
		}
	}
	s.mu.Unlock()
	if h := s.m.onIdle; h != nil {
		h(s, v)
	}
}

// clockAfterFunc is a lifecycle.Clock that can run a function once a
// duration has passed without a goroutine waiting for it (the test clock
// can).
type clockAfterFunc interface {
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// afterFunc runs f in a goroutine of its own once d has passed on the
// Manager's clock, unless the returned stop is called first. Only a clock
// of the host's own that cannot schedule a function costs a goroutine
// while the wait lasts. It is called with a slot's lock held and that
// slot's lease current, so Close has not begun to wait for m.wg.
func (m *Manager) afterFunc(d time.Duration, f func()) (stop func() bool) {
	switch c := m.opts.clock.(type) {
	case lifecycle.SystemClock:
		return time.AfterFunc(d, f).Stop
	case clockAfterFunc:
		return c.AfterFunc(d, f)
	}
	ch, stopTimer := m.opts.clock.NewTimer(d)
	quit := make(chan struct{})
	var once sync.Once
	m.wg.Go(func() {
		select {
		case <-ch:
			f()
		case <-quit:
		case <-m.ctx.Done():
		}
	})
	return func() bool {
		once.Do(func() { close(quit) })
		return stopTimer()
	}
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
	s.more().idleSince = s.stateSince
	if l != nil {
		l.goCloseLocked()
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
