package machine_test

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestBudgetScheduleGrowsAndIsCapped(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	b := machine.NewBudget(lifecycle.Policy{
		InitialInterval: 100 * time.Millisecond,
		MaxInterval:     1 * time.Second,
		Multiplier:      2,
		Jitter:          -1, // none: exact schedule
		MaxAttempts:     8,
	}, clock)
	want := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000, 1000}
	for i, w := range want {
		got, ok := b.Failed()
		if !ok {
			t.Fatalf("attempt %d: budget exhausted early", i+1)
		}
		if got != w*time.Millisecond {
			t.Fatalf("attempt %d: wait %v, want %v", i+1, got, w*time.Millisecond)
		}
		clock.Advance(got)
	}
	if _, ok := b.Failed(); ok {
		t.Fatal("attempt 9: budget not exhausted after MaxAttempts=8")
	}
}

func TestBudgetJitterStaysInBounds(t *testing.T) {
	b := machine.NewBudget(lifecycle.Policy{
		InitialInterval: time.Second, MaxInterval: time.Second, Jitter: 0.5, MaxAttempts: -1,
	}, fakeclock.New(time.Unix(0, 0)))
	distinct := map[time.Duration]bool{}
	for range 200 {
		got, ok := b.Failed()
		if !ok {
			t.Fatal("forever budget exhausted")
		}
		if got < 500*time.Millisecond || got > 1500*time.Millisecond {
			t.Fatalf("wait %v outside [0.5s, 1.5s]", got)
		}
		distinct[got] = true
	}
	if len(distinct) < 10 {
		t.Fatalf("jitter produced only %d distinct waits in 200", len(distinct))
	}
}

func TestBudgetForever(t *testing.T) {
	b := machine.NewBudget(lifecycle.Policy{MaxAttempts: -1, Jitter: -1}, fakeclock.New(time.Unix(0, 0)))
	for i := range 10_000 {
		if _, ok := b.Failed(); !ok {
			t.Fatalf("negative MaxAttempts exhausted at attempt %d", i+1)
		}
	}
}

func TestBudgetMaxElapsed(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	b := machine.NewBudget(lifecycle.Policy{
		InitialInterval: time.Second, MaxInterval: time.Second, Jitter: -1,
		MaxAttempts: -1, MaxElapsed: 5 * time.Second,
	}, clock)
	// Time spent before the first failure does not count.
	clock.Advance(time.Hour)
	n := 0
	for {
		wait, ok := b.Failed()
		if !ok {
			break
		}
		n++
		clock.Advance(wait)
		if n > 100 {
			t.Fatal("MaxElapsed never exhausted the budget")
		}
	}
	if n < 4 || n > 6 {
		t.Fatalf("got %d attempts within a 5s MaxElapsed at 1s intervals", n)
	}
}

func TestBudgetDialSuccessResetsOnlyOnceHealthy(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	p := lifecycle.Policy{MaxAttempts: 3, Jitter: -1, StableAfter: 10 * time.Second}
	b := machine.NewBudget(p, clock)

	// A server that dies right after every connect spends one budget.
	b.Connected()
	for i := range 3 {
		clock.Advance(time.Second) // shorter than StableAfter, nothing answered
		if _, ok := b.Lost(false); !ok {
			t.Fatalf("exhausted at %d", i)
		}
		b.Connected()
	}
	if _, ok := b.Lost(false); ok {
		t.Fatal("crash loop was not cut off: a short-lived success reset the budget")
	}

	// A connection that answered is healthy at once: a fresh budget.
	b = machine.NewBudget(p, clock)
	b.Failed()
	b.Failed()
	b.Connected()
	if wait, ok := b.Lost(true); !ok || wait != 0 || b.Attempts() != 1 {
		t.Fatalf("loss of an answering connection: wait %v ok %v attempts %d, want 0 true 1", wait, ok, b.Attempts())
	}
	// So is one that stayed up for StableAfter without answering.
	b.Failed()
	b.Connected()
	clock.Advance(10 * time.Second)
	if wait, ok := b.Lost(false); !ok || wait != 0 || b.Attempts() != 1 {
		t.Fatalf("loss of a stable connection: wait %v ok %v attempts %d, want 0 true 1", wait, ok, b.Attempts())
	}
}

func TestBudgetFastRampAfterHealthyLoss(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	b := machine.NewBudget(lifecycle.Policy{Jitter: -1, MaxAttempts: 2}, clock)
	b.Connected()
	if wait, ok := b.Lost(true); !ok || wait != 0 {
		t.Fatalf("healthy loss: wait %v ok %v, want an immediate redial", wait, ok)
	}
	// The server is still down: the ramp, which spends nothing, then the
	// normal backoff, which does.
	want := []time.Duration{5, 10, 20, 40, 80, 160, 250, 500}
	for i, w := range want {
		got, ok := b.Failed()
		if !ok || got != w*time.Millisecond {
			t.Fatalf("failure %d: wait %v ok %v, want %v", i+1, got, ok, w*time.Millisecond)
		}
		clock.Advance(got)
	}
	if _, ok := b.Failed(); ok {
		t.Fatal("MaxAttempts=2 not exhausted after two dials outside the ramp")
	}
}

// A server restarted every 2 s for 10 minutes, whether it answered a call
// or not, never exhausts its budget, and each recovery takes one dial.
func TestBudgetServerThatKeepsComingBack(t *testing.T) {
	for _, answered := range []bool{true, false} {
		clock := fakeclock.New(time.Unix(0, 0))
		b := machine.NewBudget(lifecycle.Policy{}, clock) // the default policy
		b.Connected()
		for i := range 300 {
			clock.Advance(2 * time.Second)
			wait, ok := b.Lost(answered)
			if !ok || wait != 0 {
				t.Fatalf("answered=%v restart %d: wait %v ok %v, want an immediate redial", answered, i, wait, ok)
			}
			b.Connected() // the one dial succeeds
		}
	}
}

// A server that exits right after each handshake ends within its budget,
// having been dialled MaxAttempts+1 times, on a growing schedule; the probe
// then backs off from MaxInterval to ProbeInterval.
func TestBudgetCrashLoop(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	p := lifecycle.Policy{Jitter: -1} // the default policy, exact
	b := machine.NewBudget(p, clock)
	dials := 1
	b.Connected()
	start := clock.Now()
	for {
		clock.Advance(10 * time.Millisecond) // dies right after the handshake
		wait, ok := b.Lost(false)
		if !ok {
			break
		}
		clock.Advance(wait)
		dials++
		b.Connected()
		if dials > 100 {
			t.Fatal("a crash loop never exhausted the budget")
		}
	}
	if dials != lifecycle.DefaultMaxAttempts+1 {
		t.Fatalf("%d dials before PermanentlyFailed, want %d", dials, lifecycle.DefaultMaxAttempts+1)
	}
	if el := clock.Now().Sub(start); el < 30*time.Second {
		t.Fatalf("crash loop exhausted in %v: the schedule did not grow", el)
	}
	var probes []time.Duration
	for range 6 {
		w, ok := b.ProbeWait()
		if !ok {
			t.Fatal("probe off by default")
		}
		probes = append(probes, w)
	}
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if probes[i] != want[i] {
			t.Fatalf("probe waits %v, want %v", probes, want)
		}
	}
	if _, ok := machine.NewBudget(lifecycle.Policy{ProbeInterval: -1}, clock).ProbeWait(); ok {
		t.Fatal("a negative ProbeInterval did not turn the probe off")
	}
}

func TestBudgetReset(t *testing.T) {
	b := machine.NewBudget(lifecycle.Policy{MaxAttempts: 1, Jitter: -1}, nil)
	b.Failed()
	if _, ok := b.Failed(); ok {
		t.Fatal("not exhausted")
	}
	b.Reset()
	if wait, ok := b.Failed(); !ok || wait != lifecycle.DefaultInitialInterval {
		t.Fatalf("after Reset: %v, %v", wait, ok)
	}
}

func TestHealthIgnoresOtherGenerations(t *testing.T) {
	var h machine.Health
	h.Reset(2)
	now := time.Unix(100, 0)
	if h.Timeout(1, nil) || h.ConsecutiveTimeouts() != 0 {
		t.Fatal("a timeout of generation 1 counted against generation 2")
	}
	if h.Success(1, now) || !h.LastSuccess().IsZero() {
		t.Fatal("a success of generation 1 counted for generation 2")
	}
	if h.Timeout(2, nil) || h.Timeout(2, nil) {
		t.Fatal("tripped before the threshold")
	}
	if !h.Timeout(2, nil) {
		t.Fatal("did not trip at the default threshold")
	}
	if !h.Success(2, now) || h.ConsecutiveTimeouts() != 0 {
		t.Fatal("success did not clear the run of timeouts")
	}
}

func TestBudgetLost(t *testing.T) {
	clock := fakeclock.New(time.Unix(0, 0))
	b := machine.NewBudget(lifecycle.Policy{MaxAttempts: 3, Jitter: -1, StableAfter: time.Minute}, clock)

	// The first loss of a fresh budget redials at once, healthy or not.
	b.Connected()
	if wait, ok := b.Lost(false); !ok || wait != 0 {
		t.Fatalf("first loss: wait %v ok %v, want 0 true", wait, ok)
	}
	// A connection that dies quickly again backs off and counts.
	b.Connected()
	clock.Advance(time.Second)
	if wait, ok := b.Lost(false); !ok || wait != lifecycle.DefaultInitialInterval {
		t.Fatalf("second quick loss: wait %v ok %v", wait, ok)
	}
	b.Connected()
	clock.Advance(time.Second)
	b.Lost(false)
	b.Connected()
	if _, ok := b.Lost(false); ok {
		t.Fatal("a server that keeps dying right after connecting was never cut off")
	}
	// After a stable minute, a loss redials at once with a fresh budget.
	b.Connected()
	clock.Advance(time.Minute)
	if wait, ok := b.Lost(false); !ok || wait != 0 || b.Attempts() != 1 {
		t.Fatalf("loss after a stable period: wait %v ok %v attempts %d", wait, ok, b.Attempts())
	}
}

// TestBudgetQuickRampsWithoutSpending: a dial retried on the fast ramp
// waits FastInterval, doubling, spends nothing of MaxAttempts, and hands
// over to the normal schedule once the ramp reaches InitialInterval.
func TestBudgetQuickRampsWithoutSpending(t *testing.T) {
	b := machine.NewBudget(lifecycle.Policy{
		InitialInterval: 100 * time.Millisecond, FastInterval: 10 * time.Millisecond,
		Jitter: -1, MaxAttempts: 2,
	}, fakeclock.New(time.Unix(0, 0)))
	for _, want := range []time.Duration{10, 20, 40, 80} {
		got, ok := b.Quick()
		if !ok || got != want*time.Millisecond {
			t.Fatalf("Quick = %v, %v; want %v", got, ok, want*time.Millisecond)
		}
	}
	if _, ok := b.Quick(); ok {
		t.Fatal("Quick went on past InitialInterval")
	}
	// Nothing was spent: both attempts of the budget are left.
	for i := range 2 {
		if _, ok := b.Failed(); !ok {
			t.Fatalf("failed dial %d after the ramp: budget exhausted", i+1)
		}
	}
	if _, ok := b.Failed(); ok {
		t.Fatal("budget not exhausted after MaxAttempts failed dials")
	}
	off := machine.NewBudget(lifecycle.Policy{FastInterval: -1}, fakeclock.New(time.Unix(0, 0)))
	if _, ok := off.Quick(); ok {
		t.Fatal("Quick with the ramp off")
	}
}

// TestBudgetAttemptsNeverExceedMax: ramp dials and the failure that
// exhausts the budget count, but a status never reads more attempts than
// the policy allows.
func TestBudgetAttemptsNeverExceedMax(t *testing.T) {
	b := machine.NewBudget(lifecycle.Policy{MaxAttempts: 3, Jitter: -1}, fakeclock.New(time.Unix(0, 0)))
	for {
		b.Quick()
		if _, ok := b.Failed(); !ok {
			break
		}
		if b.Attempts() > 3 {
			t.Fatalf("Attempts = %d with MaxAttempts 3", b.Attempts())
		}
	}
	if b.Attempts() != 3 {
		t.Fatalf("Attempts = %d once exhausted, want 3", b.Attempts())
	}
}
