package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// ApplyResult says what Apply did, server by server. Every server of the
// config and every server Apply removed is in exactly one list; each list is
// sorted.
type ApplyResult struct {
	Added   []string // new in the config: added, and started unless disabled or lazy
	Removed []string // gone from the config: closed and forgotten
	// Restarted: the entry changed (anything but its disabled and required
	// flags, its tool filter and its idleTimeout). The server was
	// reconfigured in its slot: its old runtime was detached and closed and
	// the new spec dialled, one generation up. A changed entry that is
	// disabled only took the new spec, for its next Enable; one that became
	// disabled is in Disabled.
	Restarted []string
	Enabled   []string // the disabled flag went off
	Disabled  []string // the disabled flag went on
	Unchanged []string
	// Reconfigured: only the entry's tool filter changed. The catalog was
	// republished through the new filter in place: same runtime, same
	// generation, nothing sent to the server.
	Reconfigured []string
	// Failed: the entry could not be applied (its error is in Apply's
	// error, naming it); the server, if it existed, is as it was.
	Failed []string
}

// String lists the non-empty groups, as "added a, b; restarted c", or says
// "no changes".
func (r ApplyResult) String() string {
	var parts []string
	for _, g := range []struct {
		what  string
		names []string
	}{{"added", r.Added}, {"removed", r.Removed}, {"restarted", r.Restarted},
		{"reconfigured", r.Reconfigured}, {"enabled", r.Enabled}, {"disabled", r.Disabled}, {"failed", r.Failed}} {
		if len(g.names) > 0 {
			parts = append(parts, g.what+" "+strings.Join(g.names, ", "))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, "; ")
}

// applyAction is what Apply does to one server.
type applyAction int

const (
	applyUnchanged applyAction = iota
	applyAdded
	applyRemoved
	applyRestarted
	applyEnabled
	applyDisabled
	applyFailed
	applyReconfigured
)

// Apply makes the manager's servers match cfg, touching only what changed,
// and returns what it did:
//   - servers new in cfg are added;
//   - servers gone from it are removed;
//   - servers whose entry changed only in its tool filter have their
//     catalog republished through the new filter, with no reconnect and
//     the generation unchanged (see ToolFilter);
//   - servers whose entry changed otherwise (anything but its disabled,
//     required and tool filter fields) are reconfigured in their stable
//     slot, under the new filter too: the old runtime is
//     detached and closed, the new spec is dialled and its generation is
//     one up, and calls waiting on it (or arriving meanwhile) see
//     Reconnecting, as after a crash, and go to the new runtime;
//   - servers whose disabled flag flipped are disabled or enabled in place;
//   - a changed idleTimeout takes effect in place, with no restart (alone,
//     it leaves the server Unchanged).
//
// Untouched servers see no blip: same slot, same runtime, same generation.
// All the changes run at once; dials are bounded by the manager's dial
// limit, and removals and disables each wait for their runtime's close.
//
// Apply manages the servers that came from a config (through Apply); servers
// added with Add are left alone, and a config entry with the same name as
// one of them is an error. Once the changes are made, Apply waits (bounded
// by ctx) for every enabled server marked required to be Connected.
// Problems are reported together, each naming its server; one bad entry
// does not stop the others. Concurrent Applies run one after the other.
func (m *Manager) Apply(ctx context.Context, cfg *Config) (ApplyResult, error) {
	if cfg == nil {
		return ApplyResult{}, errors.New("mcpfleet: apply: config is nil")
	}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()

	slots, closed := m.slotList()
	if closed {
		return ApplyResult{}, fmt.Errorf("mcpfleet: apply: %w", ErrClosed)
	}
	current := make(map[string]*slot, len(slots))
	for _, s := range slots {
		current[s.name] = s
	}

	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		errs     []error
		actions  = map[string]applyAction{}
		required []string
	)
	done := func(name string, a applyAction, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			if a != applyRemoved { // a removed server is gone even if its close failed
				a = applyFailed
			}
		}
		actions[name] = a
	}
	for name, s := range current {
		if _, keep := cfg.Servers[name]; !keep && s.config().key != "" {
			wg.Go(func() {
				err := m.Remove(ctx, name) // names its op
				if errors.Is(err, ErrUnknownServer) {
					err = nil // removed meanwhile by the host
				}
				done(name, applyRemoved, err)
			})
		}
	}
	for _, name := range sortedKeys(cfg.Servers) {
		sc := cfg.Servers[name]
		spec, err := sc.Spec()
		if err != nil {
			done(name, applyFailed, &ServerError{Server: name, Op: "apply " + cfg.Source,
				Err: fmt.Errorf("%w: %w", ErrInvalidSpec, err)})
			continue
		}
		key := sc.key()
		s, exists := current[name]
		if exists && s.config().key == "" {
			done(name, applyFailed, &ServerError{Server: name, Op: "apply " + cfg.Source,
				Err: fmt.Errorf("%w: added with Add, not managed by Apply", ErrDuplicateServer)})
			continue
		}
		if sc.Required && !sc.Disabled {
			required = append(required, name)
		}
		wg.Go(func() {
			var (
				a   = applyAdded
				err error
			)
			if exists {
				a, err = s.apply(ctx, spec, key, sc.Disabled)
			} else {
				err = m.add(ctx, name, spec, key)
			}
			done(name, a, withOp("apply "+cfg.Source, name, err))
		})
	}
	wg.Wait()

	var waitFor []string
	for _, name := range required {
		if actions[name] != applyFailed {
			waitFor = append(waitFor, name)
		}
	}
	if err := m.waitRequired(ctx, "apply "+cfg.Source, waitFor); err != nil {
		errs = append(errs, err)
	}
	return summarize(actions), errors.Join(errs...)
}

// waitRequired waits for the required servers named, together, until every
// one is Connected (or connected and went idle), or until one of them
// settles in a state that only a person can get it out of
// (PermanentlyFailed, NeedsAuthorization) or is switched off: then it
// returns at once, with that server's error and cause, rather than wait
// out ctx. When ctx ends first, it names every server still not connected
// and its last error.
func (m *Manager) waitRequired(ctx context.Context, op string, names []string) error {
	var slots []*slot
	for _, name := range names {
		if s, err := m.slot(name); err == nil { // else removed meanwhile by the host
			slots = append(slots, s)
		}
	}
	return waitAll(ctx, slots, false, func(s *slot, err error) error {
		return &ServerError{Server: s.name, Op: op, Err: fmt.Errorf("required server: %w", err)}
	})
}

// waitAll waits for the slots together (awaitReady's whole says what
// counts as ready), and returns the error of the first that settles short
// of ready at once, the others' waits ended; or, when ctx ends first, the
// errors of every slot not ready, joined. name makes a slot's error the
// caller's, naming the server and the operation.
func waitAll(ctx context.Context, slots []*slot, whole bool, name func(*slot, error) error) error {
	if len(slots) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		settled error   // the first server that settled short of ready
		late    []error // those still not ready when ctx ended
	)
	for _, s := range slots {
		wg.Go(func() {
			err := s.awaitReady(ctx, whole)
			if err == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, context.Canceled) && settled != nil {
				return // another server settled: the wait is over
			}
			err = name(s, err)
			if ctx.Err() == nil && settled == nil {
				settled = err
				cancel()
				return
			}
			late = append(late, err)
		})
	}
	wg.Wait()
	if settled != nil {
		return settled
	}
	return errors.Join(late...)
}

// awaitReady waits until the slot is Connected, or was and went idle. It
// fails at once, with failFastLocked's error, once the slot is in a state
// that no waiting ends: PermanentlyFailed, NeedsAuthorization, Disabled,
// Closed; and with the state and the last cause when ctx ends
// (stillError). whole is WaitReady's wait for the whole fleet, in which a
// server switched off, or lazy and never started, is ready too.
func (s *slot) awaitReady(ctx context.Context, whole bool) error {
	for {
		s.mu.Lock()
		state, ch := s.state, s.changed
		var ready bool
		switch state {
		case lifecycle.Connected:
			ready = true
		case lifecycle.Disconnected:
			// Gone idle after it connected, or (for the whole fleet) lazy:
			// its next request starts it.
			ready = whole || !s.idleSinceLocked().IsZero()
		case lifecycle.Disabling, lifecycle.Disabled:
			ready = whole
		}
		var err error
		if !ready {
			err = s.failFastLocked()
		}
		s.mu.Unlock()
		if ready || err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s.stillError(ctx, state)
		}
	}
}

// apply brings a server already in the fleet in line with its entry.
func (s *slot) apply(ctx context.Context, spec ServerSpec, key string, disabled bool) (applyAction, error) {
	wasOff := s.off()
	refilter := false
	if s.config().key == key && !s.config().spec.ToolFilter.equal(spec.ToolFilter) {
		// The filter is not in the key: it changes in place.
		if err := s.setToolFilter(spec.ToolFilter); err != nil {
			return applyFailed, err
		}
		refilter = true
	}
	if s.config().key != key {
		if disabled && !wasOff {
			// Switched off first, so that the new spec is never dialled.
			if err := s.disable(ctx); err != nil {
				return applyFailed, err
			}
			return applyDisabled, s.reconfigure(ctx, spec, key)
		}
		if err := s.reconfigure(ctx, spec, key); err != nil {
			return applyFailed, err
		}
		if !disabled && wasOff {
			return applyEnabled, s.enable(ctx)
		}
		return applyRestarted, nil
	}
	if err := s.setIdleTimeout(spec.IdleTimeout); err != nil { // not in the key: no restart
		return applyFailed, err
	}
	switch {
	case disabled && !wasOff:
		return applyDisabled, s.disable(ctx)
	case !disabled && wasOff:
		return applyEnabled, s.enable(ctx)
	case refilter:
		return applyReconfigured, nil
	}
	return applyUnchanged, nil
}

// off reports whether the slot is switched off, or on its way there.
func (s *slot) off() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == lifecycle.Disabled || s.state == lifecycle.Disabling
}

func summarize(actions map[string]applyAction) ApplyResult {
	var r ApplyResult
	lists := map[applyAction]*[]string{
		applyUnchanged: &r.Unchanged, applyAdded: &r.Added, applyRemoved: &r.Removed,
		applyRestarted: &r.Restarted, applyEnabled: &r.Enabled, applyDisabled: &r.Disabled,
		applyFailed: &r.Failed, applyReconfigured: &r.Reconfigured,
	}
	for name, a := range actions {
		*lists[a] = append(*lists[a], name)
	}
	for _, l := range lists {
		slices.Sort(*l)
	}
	return r
}
