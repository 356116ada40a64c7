package client

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// One place decides the state. The slot's state machine moves here and
// nowhere else: the one setter (setStateLocked), the request's question
// (admitLocked: go, wait, or fail fast with failFast's error), enable and
// redial, the owner's answers to what a runtime reports (lost, timedOut,
// succeeded, needsAuthorization), and the host's switches (disable, enable,
// reconnect, reconfigure). The connect loop's runner (runner.go) hands
// every dial's result here (applyDial), which decides through the same
// setter what becomes of the slot and of the loop; teardown.go's stopLocked and
// idle.go's idleLocked are the two ends of a runtime the host asked for.
// The request path (request.go) and the waits (WaitFor, WaitReady, Apply's)
// only ask.

// setStateLocked moves the slot to state to and emits the event. A same-state
// move does nothing; an illegal one is refused and recorded as a bug.
func (s *slot) setStateLocked(to lifecycle.State, cause error) bool {
	from := s.state
	if from == to {
		return true
	}
	if err := machine.Check(from, to); err != nil {
		s.m.bug(s.name, err)
		return false
	}
	s.state = to
	now := s.m.opts.clock.Now()
	s.stateSince = now
	if r := s.rare.Load(); r != nil && from == lifecycle.Disconnected {
		r.idleSince = time.Time{}
	}
	switch {
	case from == lifecycle.Connected && to == lifecycle.Reconnecting:
		s.st.reconnects.Add(1)
		s.st.lostAt.Store(now.UnixNano())
	case to == lifecycle.Connected:
		s.st.recovered(now)
	case !to.Accepting():
		s.st.lostAt.Store(0) // no recovery to time
	}
	close(s.changed)
	s.changed = make(chan struct{})
	e := Event{Kind: EventState, From: from, To: to, Err: cause}
	if to == lifecycle.Connected && s.lease != nil {
		e.Protocol = s.lease.protocol
	}
	if to == lifecycle.NeedsAuthorization {
		e.AuthorizationURL = s.authURL()
	}
	s.emitLocked(e)
	if from.Publishes() && !to.Publishes() {
		s.cached = false
		s.raw = nil
		if d, ok := s.m.pub.Unpublish(s.name, s.gen); ok && !d.Empty() {
			s.emitLocked(catalogEvent(d))
		}
	}
	if h := s.m.onTransition; h != nil {
		h(s, from, to)
	}
	return true
}

// failFastLocked returns the error of the slot's state if it is one that
// no wait ends, and nil otherwise. It is the one place those errors are
// built, for a request (acquire), Apply's wait for required servers and
// WaitFor and WaitReady alike:
//
//   - PermanentlyFailed: ErrPermanentlyFailed and the last cause (a mistake
//     in the spec, or the spent budget); the slow probe or Reconnect may
//     still revive it, but no wait does;
//   - NeedsAuthorization: an *AuthorizationError with the URL and the
//     cause: only the user can help;
//   - Disabling and Disabled: ErrDisabled; Closed: ErrClosed.
//
// The error is the cause alone: the caller puts it in the *ServerError
// that names its operation.
func (s *slot) failFastLocked() error {
	switch s.state {
	case lifecycle.PermanentlyFailed:
		return because(ErrPermanentlyFailed, notCanceled(s.lastErr))
	case lifecycle.NeedsAuthorization:
		return s.authorizationLocked()
	case lifecycle.Disabling, lifecycle.Disabled:
		return ErrDisabled
	case lifecycle.Closed:
		return ErrClosed
	}
	return nil
}

// admitLocked answers a request that wants a runtime: the live lease, with
// the request registered on it; or the error of a state no wait ends
// (failFastLocked); or neither, and the request waits for the next state
// change. What a request wants moves the machine here, not in the request
// path: a lazy or idle server is started, a backoff step is pulled forward
// (once per step: see runner.loop), and a runtime whose Conn is known dead
// but that its watcher has not reported yet is declared lost at once
// rather than be sent a request.
func (s *slot) admitLocked() (*lease, error) {
	if s.state == lifecycle.Connected {
		l := s.lease
		select {
		case <-l.conn.Done():
			s.lostLocked(connLost(l.conn))
			l.goCloseLocked()
		default:
			l.admit()
			return l, nil
		}
	}
	switch s.state {
	case lifecycle.Disconnected:
		s.connectLocked(lifecycle.Connecting, 0, false)
	case lifecycle.Connecting, lifecycle.Reconnecting:
		if s.run != nil {
			s.run.pullLocked()
		}
	}
	return nil, s.failFastLocked()
}

// stillError is the error of a wait for the server in state that ctx ended:
// it wraps ctx's error and the server's last cause, so that errors.Is finds
// both and the host reads why the server is not there yet, not only that
// its patience ran out. The cause's own context errors are hidden: they
// are not the caller's.
//
// A wait reads the cause when ctx ends, not when it began: a dial that fails
// leaves the state as it was (Connecting, Reconnecting), so no change of
// state wakes the wait to read it.
func (s *slot) stillError(ctx context.Context, state lifecycle.State) error {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	if last == nil {
		return fmt.Errorf("still %s: %w", state, ctx.Err())
	}
	return fmt.Errorf("still %s: %w (last error: %w)", state, ctx.Err(), notCanceled(last))
}

// enableLocked leaves Disabled: for Connecting, or Disconnected if lazy.
func (s *slot) enableLocked() {
	s.budget.Reset()
	s.lastErr = nil
	if s.config().spec.Lazy {
		s.setStateLocked(lifecycle.Disconnected, nil)
	} else {
		s.connectLocked(lifecycle.Connecting, 0, false)
	}
	s.publishCachedLocked()
}

// redialLocked leaves NeedsAuthorization for a dial: Connecting if the
// server never had a runtime, Reconnecting if it had.
func (s *slot) redialLocked() {
	s.lastErr = nil
	if s.gen == 0 {
		s.connectLocked(lifecycle.Connecting, 0, false)
		return
	}
	s.connectLocked(lifecycle.Reconnecting, 0, false)
}

// verdict is the slot's answer to a dial (applyDial): whether its
// connect loop ends, and if not, where it stands for the next dial.
type verdict struct {
	end       bool // the loop ends
	installed bool // it ends because the dial's lease was installed; a lease not installed is the runner's to close
	next      step // otherwise
}

// applyDial is the slot's one decision after a dial of its runner r: it
// keeps what the dial found out about the server, whatever became of the
// dial, and then decides. A dial of an abandoned runner (Disable, Remove,
// Reconnect or Close came while it dialled) is dropped: a lease it made is
// not installed, and the runner closes it;
// a lease is installed; a server that wants the user waits in
// NeedsAuthorization, or is dialled again at once if the user authorized
// it meanwhile (authorizations is the count read before the dial); a
// mistake settles in PermanentlyFailed; a failed pulled dial resumes its
// step; any other failure spends the budget (or the slow probe's).
//
// pulled says a waiting call pulled the dial forward. r.next, where the
// loop stood, is read on the loop's goroutine, which this is called on.
func (s *slot) applyDial(ctx context.Context, r *runner, res dialResult, pulled bool, authorizations uint64) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	l, err := res.lease, res.err
	if s.run != r || ctx.Err() != nil {
		// Abandoned while dialling: the slot has moved on, and the runner
		// closes its lease, if any, with no lock held.
		return verdict{end: true}
	}
	if err == nil {
		s.nextRetry = time.Time{}
		s.run = nil
		s.installLocked(l)
		return verdict{end: true, installed: true}
	}
	s.lastErr = err
	next := step{wait: r.next.wait, probing: r.next.probing}
	if needsUser(err) && s.authorizations != authorizations {
		// The user authorized the client while this dial ran without
		// the token: dial again at once, with it.
		next.wait = 0
		return verdict{next: next}
	}
	if needsUser(err) {
		// Only the user can help: no budget is spent and nothing is
		// dialled until the authorization is completed.
		s.nextRetry = time.Time{}
		s.run = nil
		s.setStateLocked(lifecycle.NeedsAuthorization, err)
		return verdict{end: true}
	}
	if !next.probing && !s.proven {
		if mistake := s.mistakeLocked(res); mistake != nil {
			// No retry can fix it: say so now, not after the budget.
			// The slow probe still finds it fixed.
			s.budget.Failed() // counted; the wait is the probe's
			err, s.lastErr = mistake, mistake
			s.nextRetry = time.Time{}
			s.setStateLocked(lifecycle.PermanentlyFailed, err)
			next.probing, pulled = true, false
		}
	}
	if pulled {
		// The extra dial failed: wait out the rest of the step.
		next.resumed = true
		s.emitLocked(Event{Kind: EventRetry, Err: err})
		return verdict{next: next}
	}
	if !next.probing {
		ok := false
		if res.exitedAtStart != "" && !s.proven {
			// Perhaps a server that cannot start: find out fast.
			next.wait, ok = s.budget.Quick()
		}
		if !ok {
			next.wait, ok = s.budget.Failed()
		}
		if !ok {
			s.nextRetry = time.Time{}
			s.setStateLocked(lifecycle.PermanentlyFailed, err)
			next.probing = true
		}
	}
	if next.probing {
		var ok bool
		if next.wait, ok = s.budget.ProbeWait(); !ok {
			s.nextRetry = time.Time{}
			s.run = nil
			return verdict{end: true}
		}
	}
	s.nextRetry = s.m.opts.clock.Now().Add(next.wait)
	s.emitLocked(Event{Kind: EventRetry, Err: err})
	return verdict{next: next}
}

// lost reports that l's runtime is dead. If l is still the slot's lease the
// slot detaches it, schedules a reconnect and closes it in the background;
// a report about any older runtime is ignored.
func (s *slot) lost(l *lease, cause error) {
	s.mu.Lock()
	if s.lease != l {
		s.mu.Unlock()
		return
	}
	s.lostLocked(cause)
	l.goCloseLocked()
	s.mu.Unlock()
}

// lostLocked detaches the current lease (the caller closes it) and starts
// the reconnect under the budget.
func (s *slot) lostLocked(cause error) {
	l := s.detachLocked()
	if l != nil {
		// A fault is not the host ending the session.
		s.keepSessionLocked(l, cause)
	}
	s.lastErr = cause
	wait, ok := s.budget.Lost(l != nil && l.answered.Load())
	if ok {
		s.connectLocked(lifecycle.Reconnecting, wait, false)
		return
	}
	// Connected has no edge to PermanentlyFailed: the loss is reported first.
	s.setStateLocked(lifecycle.Reconnecting, cause)
	if probe, ok := s.budget.ProbeWait(); ok {
		s.connectLocked(lifecycle.PermanentlyFailed, probe, true)
		return
	}
	s.setStateLocked(lifecycle.PermanentlyFailed, cause)
}

// succeeded clears the run of timeouts of l's generation.
func (s *slot) succeeded(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.health.Success(l.gen, s.m.opts.clock.Now()) {
		l.timedOut.Store(false)
	}
}

// timedOut counts a timeout against l's generation, and treats the runtime
// as lost when the run of timeouts reaches the threshold.
func (s *slot) timedOut(l *lease, err error) {
	s.mu.Lock()
	if s.lease != l {
		s.mu.Unlock()
		return
	}
	l.timedOut.Store(true)
	if !s.health.Timeout(l.gen, err) {
		s.mu.Unlock()
		return
	}
	s.lostLocked(fmt.Errorf("%w: %w", ErrTooManyTimeouts, err))
	l.goCloseLocked()
	s.mu.Unlock()
}

// needsAuthorization reports that a request on l found that only the user
// can authorize the server (a refused refresh token, a step-up). If l is
// still the slot's lease, the slot detaches it, closes it in the background
// and waits in NeedsAuthorization; no budget is spent.
func (s *slot) needsAuthorization(l *lease, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease != l {
		return
	}
	s.detachLocked().goCloseLocked()
	s.lastErr = cause
	s.setStateLocked(lifecycle.NeedsAuthorization, cause)
}

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
		s.detachLocked().goCloseLocked()
		s.budget.Reset()
		s.rejoin = nil // the host asked for a new connection
		s.connectLocked(lifecycle.Reconnecting, 0, false)
	case lifecycle.PermanentlyFailed:
		s.run = s.run.abandon() // the slow probe's loop
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
		if !spec.Lazy && s.idleSinceLocked().IsZero() {
			s.connectLocked(lifecycle.Connecting, 0, false)
		}
	case lifecycle.Connected:
		s.detachLocked().goCloseLocked()
		s.connectLocked(lifecycle.Reconnecting, 0, false)
	case lifecycle.NeedsAuthorization:
		s.redialLocked()
	case lifecycle.Connecting, lifecycle.Reconnecting, lifecycle.PermanentlyFailed:
		s.run = s.run.abandon() // it dials the old spec
		s.nextRetry = time.Time{}
		to := lifecycle.Reconnecting
		if s.state == lifecycle.Connecting {
			to = lifecycle.Connecting
		}
		s.connectLocked(to, 0, false)
	}
	return nil
}
