package machine_test

import (
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// wantLegal lists every legal edge, written out independently of the table
// in transition.go, so that a change to either shows up here.
var wantLegal = map[[2]lifecycle.State]bool{
	{lifecycle.Disconnected, lifecycle.Connecting}:              true,
	{lifecycle.Disconnected, lifecycle.Disabling}:               true,
	{lifecycle.Disconnected, lifecycle.Closed}:                  true,
	{lifecycle.Connecting, lifecycle.Connected}:                 true,
	{lifecycle.Connecting, lifecycle.PermanentlyFailed}:         true,
	{lifecycle.Connecting, lifecycle.Disabling}:                 true,
	{lifecycle.Connecting, lifecycle.Closed}:                    true,
	{lifecycle.Connected, lifecycle.Reconnecting}:               true,
	{lifecycle.Connected, lifecycle.Disconnected}:               true,
	{lifecycle.Connected, lifecycle.Disabling}:                  true,
	{lifecycle.Connected, lifecycle.Closed}:                     true,
	{lifecycle.Reconnecting, lifecycle.Connected}:               true,
	{lifecycle.Reconnecting, lifecycle.PermanentlyFailed}:       true,
	{lifecycle.Reconnecting, lifecycle.Disabling}:               true,
	{lifecycle.Reconnecting, lifecycle.Closed}:                  true,
	{lifecycle.PermanentlyFailed, lifecycle.Connected}:          true,
	{lifecycle.PermanentlyFailed, lifecycle.Reconnecting}:       true,
	{lifecycle.PermanentlyFailed, lifecycle.Disabling}:          true,
	{lifecycle.PermanentlyFailed, lifecycle.Closed}:             true,
	{lifecycle.Connecting, lifecycle.NeedsAuthorization}:        true,
	{lifecycle.Connected, lifecycle.NeedsAuthorization}:         true,
	{lifecycle.Reconnecting, lifecycle.NeedsAuthorization}:      true,
	{lifecycle.PermanentlyFailed, lifecycle.NeedsAuthorization}: true,
	{lifecycle.NeedsAuthorization, lifecycle.Connecting}:        true,
	{lifecycle.NeedsAuthorization, lifecycle.Reconnecting}:      true,
	{lifecycle.NeedsAuthorization, lifecycle.Disabling}:         true,
	{lifecycle.NeedsAuthorization, lifecycle.Closed}:            true,
	{lifecycle.Disabling, lifecycle.Disabled}:                   true,
	{lifecycle.Disabling, lifecycle.Closed}:                     true,
	{lifecycle.Disabled, lifecycle.Connecting}:                  true,
	{lifecycle.Disabled, lifecycle.Disconnected}:                true,
	{lifecycle.Disabled, lifecycle.Closed}:                      true,
}

func TestTransitionTable(t *testing.T) {
	for _, from := range lifecycle.States() {
		for _, to := range lifecycle.States() {
			name := from.String() + "->" + to.String()
			want := wantLegal[[2]lifecycle.State{from, to}]
			t.Run(name, func(t *testing.T) {
				if got := machine.CanTransition(from, to); got != want {
					t.Fatalf("CanTransition = %v, want %v", got, want)
				}
				err := machine.Check(from, to)
				switch {
				case from == to:
					if err != nil {
						t.Fatalf("same-state Check = %v, want nil (no-op)", err)
					}
				case want && err != nil:
					t.Fatalf("Check = %v, want nil", err)
				case !want:
					var te *machine.TransitionError
					if !errors.As(err, &te) || te.From != from || te.To != to {
						t.Fatalf("Check = %v, want *TransitionError{%v, %v}", err, from, to)
					}
				}
			})
		}
	}
}

func TestClosedIsTerminal(t *testing.T) {
	for _, to := range lifecycle.States() {
		if machine.CanTransition(lifecycle.Closed, to) {
			t.Errorf("Closed -> %v is legal; Closed must be terminal", to)
		}
	}
	for _, from := range lifecycle.States() {
		if from != lifecycle.Closed && !machine.CanTransition(from, lifecycle.Closed) {
			t.Errorf("%v -> Closed is illegal; every state must be closable", from)
		}
	}
}

func TestInvalidStates(t *testing.T) {
	bad := lifecycle.State(42)
	if got := bad.String(); got != "State(42)" {
		t.Errorf("String = %q", got)
	}
	if machine.CanTransition(bad, lifecycle.Connected) || machine.CanTransition(lifecycle.Connected, bad) {
		t.Error("transition with an invalid state reported legal")
	}
	if err := machine.Check(bad, bad); err == nil {
		t.Error("Check(invalid, invalid) = nil")
	}
	if _, err := bad.MarshalText(); err == nil {
		t.Error("MarshalText of an invalid state succeeded")
	}
}
