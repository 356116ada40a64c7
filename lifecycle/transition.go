package lifecycle

import "fmt"

// legal is the one transition table. A slot moves only along these edges;
// anything else is a bug in the caller, reported by Check rather than applied.
//
// A slot is born Disabled and leaves it at once for Connecting (eager start)
// or Disconnected (lazy start), so that its first step is an ordinary
// transition with an ordinary event.
var legal = [numStates][numStates]bool{
	Disconnected: {
		Connecting: true, // the first call, or Reconnect, starts a connect
		Disabling:  true,
		Closed:     true,
	},
	Connecting: {
		Connected:         true,
		PermanentlyFailed: true, // the budget ran out before the first success
		Disabling:         true,
		Closed:            true,
	},
	Connected: {
		Reconnecting: true, // the runtime was lost, or Reconnect was asked for
		Disconnected: true, // idle disconnect
		Disabling:    true,
		Closed:       true,
	},
	Reconnecting: {
		Connected:         true,
		PermanentlyFailed: true,
		Disabling:         true,
		Closed:            true,
	},
	PermanentlyFailed: {
		Connected:    true, // the slow probe got through
		Reconnecting: true, // Reconnect reset the budget
		Disabling:    true,
		Closed:       true,
	},
	Disabling: {
		Disabled: true,
		Closed:   true,
	},
	Disabled: {
		Connecting:   true, // Enable, eager
		Disconnected: true, // Enable, lazy
		Closed:       true,
	},
	Closed: {},
}

// CanTransition reports whether a slot may move from one state to another.
// A same-state move is not a transition and reports false.
func CanTransition(from, to State) bool {
	if !from.Valid() || !to.Valid() {
		return false
	}
	return legal[from][to]
}

// TransitionError reports an attempt to take an edge the table does not have.
type TransitionError struct {
	From, To State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("lifecycle: illegal transition %s -> %s", e.From, e.To)
}

// Check returns a *TransitionError unless from -> to is a legal transition.
// Same-state moves are no-ops, not transitions, and return nil; callers that
// need to tell them apart compare the states first.
func Check(from, to State) error {
	if from == to && from.Valid() {
		return nil
	}
	if !CanTransition(from, to) {
		return &TransitionError{From: from, To: to}
	}
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
// Disabled, disabling, permanently failed and closed slots publish nothing.
func (s State) Publishes() bool { return s.Accepting() }
