// Package lifecycle holds what a host reads or sets about a server slot's
// life: the State it is in (docs/DESIGN.md's state table says what calls and the
// catalog do in each), the reconnect Policy, and the Clock the manager's
// waits use. The machinery that applies them (the transition table, the
// reconnect budget, call health) is the manager's own and lives in
// internal/machine.
package lifecycle

import (
	"fmt"
	"strconv"
)

// State is what a server slot is doing. The zero value is Disconnected.
type State int

// The states of a slot. DESIGN.md's state table says what calls and the
// catalog do in each.
const (
	// Disconnected: enabled, no runtime, nothing scheduled. The first call
	// starts a connect and waits for it.
	Disconnected State = iota
	// Connecting: the first connect of this enable period, possibly retrying.
	Connecting
	// Connected: a live runtime lease; calls go through.
	Connected
	// Reconnecting: a runtime was lost; a backoff wait or a dial is under way.
	Reconnecting
	// PermanentlyFailed: the reconnect budget is exhausted. Calls fail fast;
	// a slow probe may still run, and Reconnect starts over.
	PermanentlyFailed
	// NeedsAuthorization: the server needs the user to authorize the
	// client (no token, a refused refresh token, or a step-up for more
	// scope). Calls fail fast; nothing is dialled until the authorization
	// is completed (or Reconnect asks to try again). It spends no
	// reconnect budget.
	NeedsAuthorization
	// Disabling: the host asked to disable; the runtime is detached and
	// draining or closing.
	Disabling
	// Disabled: off. Calls fail fast with ErrDisabled.
	Disabled
	// Closed: removed, or the manager was closed. Terminal.
	Closed

	numStates = int(Closed) + 1
)

var stateNames = [numStates]string{
	Disconnected:       "Disconnected",
	Connecting:         "Connecting",
	Connected:          "Connected",
	Reconnecting:       "Reconnecting",
	PermanentlyFailed:  "PermanentlyFailed",
	NeedsAuthorization: "NeedsAuthorization",
	Disabling:          "Disabling",
	Disabled:           "Disabled",
	Closed:             "Closed",
}

// String returns the state's stable name, or "State(n)" for an unknown value.
func (s State) String() string {
	if s.Valid() {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the defined states.
func (s State) Valid() bool { return s >= 0 && int(s) < numStates }

// ParseState returns the State whose String is name.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("lifecycle: unknown state %q", name)
}

// States returns every defined state, in order.
func States() []State {
	out := make([]State, numStates)
	for i := range out {
		out[i] = State(i)
	}
	return out
}

// MarshalText encodes the state as its stable name.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("lifecycle: invalid state %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a state from its stable name.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Accepting reports whether calls may wait in state s for the slot to become
// Connected (true), rather than failing fast.
func (s State) Accepting() bool {
	switch s {
	case Disconnected, Connecting, Connected, Reconnecting:
		return true
	}
	return false
}

// Publishes reports whether a slot in state s keeps its catalog published.
// Disabled, disabling, permanently failed, closed slots and slots that
// need authorization publish nothing: their calls fail fast.
func (s State) Publishes() bool { return s.Accepting() }
