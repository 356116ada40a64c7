package client

import (
	"context"
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
	s.run = s.run.abandon()
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
	l.drain(ctx, m.opts.drainTimeout)
	return l.close(ctx)
}
