package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestPolicyDefaultsAndValidate(t *testing.T) {
	d := lifecycle.Policy{}.WithDefaults()
	if d.InitialInterval != lifecycle.DefaultInitialInterval || d.MaxAttempts != lifecycle.DefaultMaxAttempts ||
		d.ProbeInterval != lifecycle.DefaultProbeInterval || d.StableAfter != lifecycle.DefaultStableAfter {
		t.Fatalf("defaults not applied: %+v", d)
	}
	for _, tc := range []struct {
		p     lifecycle.Policy
		field string
	}{
		{lifecycle.Policy{InitialInterval: -1}, "initialInterval"},
		{lifecycle.Policy{InitialInterval: 2 * time.Second, MaxInterval: time.Second}, "maxInterval"},
		{lifecycle.Policy{Multiplier: 0.5}, "multiplier"},
		{lifecycle.Policy{Jitter: 1}, "jitter"},
		{lifecycle.Policy{MaxElapsed: -1}, "maxElapsed"},
	} {
		err := tc.p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tc.p, err, tc.field)
		}
	}
	if err := (lifecycle.Policy{}).Validate(); err != nil {
		t.Errorf("zero policy invalid: %v", err)
	}
}

func TestStateNamesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range lifecycle.States() {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(b)] {
			t.Fatalf("duplicate name %q", b)
		}
		seen[string(b)] = true
		var back lifecycle.State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Fatalf("round trip of %v = %v, %v", s, back, err)
		}
	}
	if _, err := lifecycle.ParseState("Connectd"); err == nil {
		t.Fatal("ParseState accepted a misspelling")
	}
}
