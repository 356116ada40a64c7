package client

import (
	"context"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

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
		s.rejoin = nil // the host asked for a new connection
		s.connectLocked(lifecycle.Reconnecting, 0, false)
	case lifecycle.PermanentlyFailed:
		if r := s.run; r != nil { // the slow probe
			s.run = nil
			r.cancel()
		}
		s.budget.Reset()
		s.rejoin = nil
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
	s.legacy = false                  // a new server may speak the newer protocol
	s.rejoin = nil                    // nor is its session the old one's
	s.proven, s.startExits = false, 0 // a new configuration may be mistaken
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
