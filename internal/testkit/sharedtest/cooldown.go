package sharedtest

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// replicas is how many replicas the cooldown scenarios run: Managers each
// with a client of its own to the store, as processes have.
const replicas = 4

// steps returns how many steps of p's backoff (without jitter: the
// schedule every replica reads from the shared cooldown) begin within d.
func steps(p lifecycle.Policy, d time.Duration) int {
	n, at := 0, time.Duration(0)
	for at <= d {
		step := time.Duration(float64(p.InitialInterval) * math.Pow(p.Multiplier, float64(n)))
		at += min(step, p.MaxInterval)
		n++
	}
	return n
}

// Cooldown: an upstream down for a while (2 s here: a 30 s outage scaled
// down fifteen times, with the backoff scaled alike) receives, from four
// replicas sharing their cooldown through the store, at most one connect
// per backoff step (plus the first connect of each fresh replica, made
// before any of them found the upstream down), counted at the upstream:
// not one per replica. Once it is back, every replica connects.
func Cooldown(t *testing.T, b Backend) {
	const outage = 2 * time.Second
	policy := lifecycle.Policy{InitialInterval: 20 * time.Millisecond, MaxInterval: 160 * time.Millisecond,
		Multiplier: 2, Jitter: -1, MaxAttempts: -1, FastInterval: -1}
	u := startUpstream(t)
	ms := make([]*client.Manager, replicas)
	for i := range ms {
		ms[i] = newManager(t, client.WithSharedState(b.Open(t)), client.WithPolicy(policy))
	}
	spec := client.ServerSpec{HTTP: &mcphttp.Spec{URL: u.URL()}}
	began := time.Now()
	for _, m := range ms {
		if err := m.Add(testCtx(t), "up", spec); err != nil {
			t.Fatal(err)
		}
	}
	<-time.After(outage) // the outage's length, not a state
	elapsed := time.Since(began)
	connects, all := u.connects()
	dials := uint64(0)
	for _, m := range ms {
		dials += m.Stats().Total.Dials
	}
	fit := steps(policy, elapsed)
	t.Logf("%d connects at the upstream (%d dials by the Managers; requests %v) in %v from %d replicas; %d backoff steps fit",
		connects, dials, all, elapsed.Round(time.Millisecond), replicas, fit)
	if limit := fit + replicas; connects > limit {
		t.Errorf("%d connects reached the upstream in %v from %d replicas; at most %d (%d steps + the first %d)",
			connects, elapsed, replicas, limit, fit, replicas)
	}
	if connects < 2 {
		t.Errorf("%d connects: the replicas stopped trying", connects)
	}
	u.up.Store(true)
	for _, m := range ms {
		mustWait(t, m, "up", lifecycle.Connected)
	}
}

// WakeUp: replicas whose next dial of a down upstream is an hour away all
// connect within seconds of one replica finding it back (here the host's
// Reconnect on one): the wake-up through the store, and nothing else,
// brings them back. Until that replica has been answered, the upstream
// refuses the others, so that none finds it back by itself.
func WakeUp(t *testing.T, b Backend) {
	policy := lifecycle.Policy{InitialInterval: time.Hour, MaxInterval: time.Hour, Multiplier: 2, Jitter: -1,
		MaxAttempts: -1, FastInterval: -1}
	u := startUpstream(t)
	var first atomic.Bool // the first replica was answered
	u.admit = func(r *http.Request) bool {
		if r.Header.Get("X-Replica") == "0" {
			first.Store(true)
			return true
		}
		return first.Load()
	}
	ms := make([]*client.Manager, replicas)
	for i := range ms {
		st := &cooling{Shared: b.Open(t), cooled: make(chan struct{}, 1)}
		ms[i] = newManager(t, client.WithSharedState(st), client.WithPolicy(policy))
		events, stop := ms[i].Events(64)
		spec := client.ServerSpec{HTTP: &mcphttp.Spec{URL: u.URL(), Headers: map[string]string{"X-Replica": strconv.Itoa(i)}}}
		if err := ms[i].Add(testCtx(t), "up", spec); err != nil {
			t.Fatal(err)
		}
		// Its first connect failed, or it found another's failure in the
		// store: either way its next dial is an hour away.
		waitCooled(t, events, st.cooled)
		stop()
	}
	u.up.Store(true)
	if err := ms[0].Reconnect(testCtx(t), "up"); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		mustWait(t, m, "up", lifecycle.Connected)
	}
}

// cooling is a store that says when the Manager read a cooldown in
// effect, which it then waits out (or a wake-up).
type cooling struct {
	store.Shared
	cooled chan struct{}
}

func (c *cooling) Cooldown(ctx context.Context, server string) (store.Cooldown, error) {
	cd, err := c.Shared.Cooldown(ctx, server)
	if err == nil && cd.Attempts > 0 && time.Until(cd.Until) > 30*time.Minute {
		select {
		case c.cooled <- struct{}{}:
		default:
		}
	}
	return cd, err
}

// waitCooled waits for a retry an hour away among events, or a cooldown
// read.
func waitCooled(t *testing.T, events <-chan client.Event, cooled <-chan struct{}) {
	t.Helper()
	ctx := testCtx(t)
	for {
		select {
		case ev := <-events:
			if ev.Kind == client.EventRetry && !ev.NextRetry.IsZero() {
				if wait := time.Until(ev.NextRetry); wait < 30*time.Minute {
					t.Fatalf("the next dial is in %v, not an hour", wait)
				}
				return
			}
		case <-cooled:
			return
		case <-ctx.Done():
			t.Fatal("no retry was scheduled and no cooldown read")
		}
	}
}
