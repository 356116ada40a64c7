package client

import (
	"context"
	"time"
)

// runner owns one connect loop of a slot: a goroutine that waits out a
// backoff step, takes its turn at a shared upstream (cooldown.go), dials
// (dial.go) and hands the result to the slot, whose one decision after a
// dial (applyDial, state.go) says what the loop does next: end, or wait
// and dial again. A slot has at most one runner at a time (slot.run),
// which is how concurrent reconnect triggers coalesce; one that was
// abandoned (Disable, Remove, Reconnect, a new spec) finds out from
// applyDial, or from its cancelled context, and ends.
//
// The runner writes none of the slot's fields: what a dial found out
// travels in its dialResult, and the slot applies it. It reads the slot's
// fields it needs (the handshake to try, the session to rejoin, the
// budget's policy) under the slot's lock.
type runner struct {
	// Set at creation, read-only.
	s      *slot
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has ended
	kick   chan struct{} // capacity 1: dial now, skipping the wait
	pull   chan struct{} // capacity 1: a waiting call asks for a dial now

	// Guarded by the slot's mu: pullable is set while the loop waits out
	// a step that no call has pulled forward yet (pullLocked).
	pullable bool

	// The loop's own, read and written by its goroutine alone.
	//
	// next is where the loop stands: the slot's answer to the last dial,
	// or how connectLocked started it. up is the upstream's shared
	// wake-up (nil unless its cooldown is shared), and woken says a
	// replica found the upstream back since the loop's last dial.
	next  step
	up    <-chan struct{}
	woken bool
}

// step is where a connect loop stands before its next dial.
type step struct {
	wait time.Duration // before the dial; 0: dial at once
	// probing: the slot is PermanentlyFailed and the waits are the slow
	// probe's. Calls fail fast then, so no call pulls them forward.
	probing bool
	// resumed: the wait is the rest of a step whose pulled dial failed;
	// a step is pulled forward once at most.
	resumed bool
}

// newRunner returns the runner of a connect loop that begins with next;
// the caller starts it (go r.loop(ctx)) with the context whose cancel it
// is given.
func newRunner(s *slot, cancel context.CancelFunc, next step) *runner {
	return &runner{s: s, cancel: cancel, done: make(chan struct{}),
		kick: make(chan struct{}, 1), pull: make(chan struct{}, 1), next: next}
}

// abandon cancels the loop, if there is one, and returns nil for the
// slot's field: `s.run = s.run.abandon()` is how a slot that no longer wants
// the loop's dials (a stop, a reconnect, a new spec) lets it go. The loop
// learns it from its context and ends without touching the slot; a dial it
// has in flight is dropped by applyDial, which finds s.run no longer it.
func (r *runner) abandon() *runner {
	if r != nil {
		r.cancel()
	}
	return nil
}

// loop dials until a lease is installed, the loop is cancelled or
// abandoned, or the budget is exhausted. In PermanentlyFailed it keeps
// probing on the budget's slow probe schedule, without further state
// changes until one succeeds.
//
// A call waiting for the server may pull the next dial forward, once per
// step: the pulled dial is an extra one, so if it fails it spends nothing
// and the step's own dial still comes when it was due. A server that is
// back before its backoff ends is found by the first call that needs it,
// and a stream of calls cannot run a budget down faster than its schedule.
func (r *runner) loop(ctx context.Context) {
	s := r.s
	defer s.m.wg.Done()
	defer s.runners.Done()
	defer close(r.done)
	defer r.cancel()
	clock := s.m.opts.clock
	var stopUp func()
	r.up, stopUp = r.watchUp() // cooldown.go: nil unless shared
	defer stopUp()
	for {
		pulled, kicked := false, false
		if r.next.wait > 0 {
			due := clock.Now().Add(r.next.wait)
			var ok bool
			if ok, pulled, kicked = r.waitStep(ctx, !r.next.probing && !r.next.resumed); !ok {
				return
			}
			if pulled {
				if remaining := due.Sub(clock.Now()); remaining > 0 {
					r.next.wait = remaining
				} else {
					pulled = false // due anyway: an ordinary dial
				}
			}
		}
		s.mu.Lock()
		legacy, authorizations := s.legacy, s.authorizations
		s.mu.Unlock()

		var t turn
		if r.up != nil {
			if t = r.takeTurn(ctx, kicked); !t.ok {
				return
			}
		}
		began := clock.Now()
		res := r.dial(ctx, legacy)
		if r.up != nil {
			r.woken = false
			// A dial that failed as the loop ended (Disable, Remove,
			// Close, a new spec) most likely failed of that end and says
			// nothing of the upstream: recorded, it would put the
			// upstream in cooldown for every replica. One that the server
			// answered (a success, its refusal of the user's
			// credentials) says it is up, whenever it came.
			if ctx.Err() == nil || res.err == nil || userFailure(res.err) {
				r.dialed(t, res.err)
			}
		}
		took := clock.Now().Sub(began)
		s.st.dials.Add(1)
		if res.err != nil {
			s.st.dialFailures.Add(1)
			r.observeDial(0, took, res.err)
		}

		v := s.applyDial(ctx, r, res, pulled, authorizations)
		switch {
		case v.installed:
			r.observeDial(res.lease.gen, took, nil)
		case res.lease != nil: // the loop was abandoned while it dialled
			res.lease.close(context.Background())
		}
		if v.end {
			return
		}
		r.next = v.next
	}
}

// waitStep waits out one backoff step, or less if Reconnect kicks the loop
// or, when pullable, a waiting call pulls the dial forward. It reports
// whether the loop should go on, whether a call (and not Reconnect)
// ended the wait, and whether Reconnect did. Probes are not pullable:
// calls fail fast in PermanentlyFailed.
//
// A wake-up of the upstream (r.up: a replica found it back) ends the wait
// too, and sets r.woken.
func (r *runner) waitStep(ctx context.Context, pullable bool) (ok, pulled, kicked bool) {
	s := r.s
	// Pullable before the timer exists: a call that sees the step begun
	// (its timer armed) must find it pullable.
	s.mu.Lock()
	r.pullable = pullable
	s.mu.Unlock()
	c, stop := s.m.opts.clock.NewTimer(r.next.wait)
	defer stop()
	select {
	case <-c:
	case <-r.kick:
		kicked = true
	case <-r.up:
		r.woken = true
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

// pullLocked lets a waiting call pull the next dial forward, if the loop
// is waiting out a step that nobody pulled yet. The slot's mu is held.
func (r *runner) pullLocked() {
	if r.pullable {
		r.pullable = false
		select {
		case r.pull <- struct{}{}:
		default:
		}
	}
}
