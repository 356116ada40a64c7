package client

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A transition into a backoff wait says in its event when the next dial is
// due, as the contract asks of every transition.
func TestReconnectingEventCarriesNextRetry(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: time.Hour, MaxInterval: time.Hour,
		MaxAttempts: 5, ProbeInterval: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	ts.Kill(nil) // the first loss redials at once
	rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Connected && e.Generation == 2 })
	before := time.Now()
	ts.Kill(nil) // the second backs off
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Reconnecting && e.Generation == 2 })
	st, _ := m.Status("s")
	if st.NextRetry.IsZero() || !st.NextRetry.After(before) {
		t.Fatalf("status NextRetry %v: no backoff wait scheduled", st.NextRetry)
	}
	if !e.NextRetry.Equal(st.NextRetry) {
		t.Fatalf("Reconnecting event NextRetry %v, status says the next dial is due at %v", e.NextRetry, st.NextRetry)
	}
}

// So does the move to PermanentlyFailed when a slow probe is scheduled.
func TestPermanentlyFailedEventCarriesTheProbeTime(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: time.Hour, MaxAttempts: 1,
		ProbeInterval: time.Hour}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	ts.Kill(nil) // the first loss redials at once
	rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Connected && e.Generation == 2 })
	ts.Kill(nil) // the second exhausts the budget
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.PermanentlyFailed })
	st, _ := m.Status("s")
	if st.NextRetry.IsZero() || !e.NextRetry.Equal(st.NextRetry) {
		t.Fatalf("PermanentlyFailed event NextRetry %v, status says the probe is due at %v", e.NextRetry, st.NextRetry)
	}
}
