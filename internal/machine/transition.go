package machine

import (
	"fmt"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// numStates sizes the table; Closed is the last state.
const numStates = int(lifecycle.Closed) + 1

// legal is the one transition table. A slot moves only along these edges;
// anything else is a bug in the caller, reported by Check rather than applied.
//
// A slot is born Disabled and leaves it at once for Connecting (eager start)
// or Disconnected (lazy start), so that its first step is an ordinary
// transition with an ordinary event.
var legal = [numStates][numStates]bool{
	lifecycle.Disconnected: {
		lifecycle.Connecting: true, // the first call, or Reconnect, starts a connect
		lifecycle.Disabling:  true,
		lifecycle.Closed:     true,
	},
	lifecycle.Connecting: {
		lifecycle.Connected:          true,
		lifecycle.PermanentlyFailed:  true, // the budget ran out before the first success
		lifecycle.NeedsAuthorization: true, // the dial needs the user
		lifecycle.Disabling:          true,
		lifecycle.Closed:             true,
	},
	lifecycle.Connected: {
		lifecycle.Reconnecting:       true, // the runtime was lost, or Reconnect was asked for
		lifecycle.Disconnected:       true, // idle disconnect
		lifecycle.NeedsAuthorization: true, // a call found the token refused for good, or a step-up
		lifecycle.Disabling:          true,
		lifecycle.Closed:             true,
	},
	lifecycle.Reconnecting: {
		lifecycle.Connected:          true,
		lifecycle.PermanentlyFailed:  true,
		lifecycle.NeedsAuthorization: true, // the redial needs the user
		lifecycle.Disabling:          true,
		lifecycle.Closed:             true,
	},
	lifecycle.PermanentlyFailed: {
		lifecycle.Connected:          true, // the slow probe got through
		lifecycle.Reconnecting:       true, // Reconnect reset the budget
		lifecycle.NeedsAuthorization: true, // the slow probe found the server needs the user
		lifecycle.Disabling:          true,
		lifecycle.Closed:             true,
	},
	lifecycle.NeedsAuthorization: {
		lifecycle.Connecting:   true, // authorized before the server was ever connected
		lifecycle.Reconnecting: true, // authorized after a runtime; or Reconnect, Apply
		lifecycle.Disabling:    true,
		lifecycle.Closed:       true,
	},
	lifecycle.Disabling: {
		lifecycle.Disabled: true,
		lifecycle.Closed:   true,
	},
	lifecycle.Disabled: {
		lifecycle.Connecting:   true, // Enable, eager
		lifecycle.Disconnected: true, // Enable, lazy
		lifecycle.Closed:       true,
	},
	lifecycle.Closed: {},
}

// CanTransition reports whether a slot may move from one state to another.
// A same-state move is not a transition and reports false.
func CanTransition(from, to lifecycle.State) bool {
	if !from.Valid() || !to.Valid() {
		return false
	}
	return legal[from][to]
}

// TransitionError reports an attempt to take an edge the table does not have.
type TransitionError struct {
	From, To lifecycle.State
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("lifecycle: illegal transition %s -> %s", e.From, e.To)
}

// Check returns a *TransitionError unless from -> to is a legal transition.
// Same-state moves are no-ops, not transitions, and return nil; callers that
// need to tell them apart compare the states first.
func Check(from, to lifecycle.State) error {
	if from == to && from.Valid() {
		return nil
	}
	if !CanTransition(from, to) {
		return &TransitionError{From: from, To: to}
	}
	return nil
}
