package client

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

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
	s.rejoin = nil // the host ends the session
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

// closeLease closes a detached runtime, bounded by the close timeout. Close
// is teardown, not a transaction: its error is reported in an event and
// changes neither the state nor the budget.
func (s *slot) closeLease(l *lease) error {
	return s.closeLeaseIn(context.Background(), l)
}

// closeLeaseIn is closeLease bounded by parent too: once parent ends, the
// Conn forces what has not finished (a child is killed, not asked). It
// waits for the requests the Manager made on l by itself (l.own) first.
func (s *slot) closeLeaseIn(parent context.Context, l *lease) error {
	m := s.m
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
