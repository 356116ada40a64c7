package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// The Manager-level half of lifecycle's budget tests (issue 9): a server
// that keeps coming back never ends PermanentlyFailed and recovers with one
// dial each time, a crash loop ends there within its budget. The fake-clock
// tests cover ten minutes in no time; the real-process ones run on the wall
// clock.

// waitGen waits for server's Connected event of generation gen, or fails
// if it reaches PermanentlyFailed first.
func waitGen(t *testing.T, rec *recorder, gen uint64) {
	t.Helper()
	e := rec.wait(t, func(e Event) bool {
		return e.Kind == EventState && (e.To == lifecycle.PermanentlyFailed ||
			e.To == lifecycle.Connected && e.Generation == gen)
	})
	if e.To == lifecycle.PermanentlyFailed {
		t.Fatalf("PermanentlyFailed waiting for generation %d: %v", gen, e.Err)
	}
}

func TestServerThatKeepsComingBackNeverFailsFakeClock(t *testing.T) {
	for _, answered := range []bool{false, true} {
		name := "silent"
		if answered {
			name = "answering"
		}
		t.Run(name, func(t *testing.T) {
			clock := fakeclock.New(time.Unix(1000, 0))
			ts := newTestServer()
			m := newTestManager(t, WithClock(clock), WithPolicy(lifecycle.Policy{}), WithTimeouts(Timeouts{IdleProbe: -1}))
			rec := record(m)
			mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
			waitGen(t, rec, 1)
			// Killed every 2 s for 10 minutes.
			for i := range 300 {
				if answered {
					if _, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "hi"}); err != nil {
						t.Fatal(err)
					}
				}
				clock.Advance(2 * time.Second)
				ts.Kill(nil)
				waitGen(t, rec, uint64(i+2))
				if d := ts.Dials(); d != int64(i+2) {
					t.Fatalf("restart %d: %d dials in all, want one per recovery (%d)", i+1, d, i+2)
				}
			}
		})
	}
}

func TestCrashLoopEndsPermanentlyFailedFakeClock(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	ts := newTestServer()
	m := newTestManager(t, WithClock(clock), WithPolicy(lifecycle.Policy{ProbeInterval: -1}), WithTimeouts(Timeouts{IdleProbe: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	start := clock.Now()
	// connectedOrFailed waits for generation gen to connect, or for the
	// budget to run out; it reports the latter.
	connectedOrFailed := func(gen uint64) bool {
		e := rec.wait(t, func(e Event) bool {
			return e.Kind == EventState && (e.To == lifecycle.PermanentlyFailed ||
				e.To == lifecycle.Connected && e.Generation == gen)
		})
		return e.To == lifecycle.PermanentlyFailed
	}
	if connectedOrFailed(1) {
		t.Fatal("PermanentlyFailed before the first connect")
	}
	for gen := uint64(1); ; gen++ {
		// It dies right after its handshake, having answered nothing.
		ts.Kill(nil)
		e := rec.wait(t, func(e Event) bool {
			return e.Kind == EventState && e.From == lifecycle.Connected && e.Generation == gen
		})
		if !e.NextRetry.IsZero() {
			if err := clock.WaitForTimers(testCtx(t), 1); err != nil {
				t.Fatal(err)
			}
			clock.Advance(e.NextRetry.Sub(clock.Now()))
		}
		if connectedOrFailed(gen + 1) {
			break
		}
		if gen > 50 {
			t.Fatal("a crash loop never ended")
		}
	}
	if d := ts.Dials(); d != lifecycle.DefaultMaxAttempts+1 {
		t.Fatalf("%d dials before PermanentlyFailed, want %d", d, lifecycle.DefaultMaxAttempts+1)
	}
	if el := clock.Now().Sub(start); el < 30*time.Second {
		t.Fatalf("the crash loop ran out in %v: its backoff did not grow", el)
	}
}

// A real stdio child killed again and again: one spawn per kill, never
// PermanentlyFailed, each generation found by one dial. A connection
// proves healthy, which resets the budget at its loss, in one of two ways
// (internal/machine.Budget.Lost), and each subtest leaves the child only
// the one it tests:
//
//   - answering: each generation answers a call and is killed at once.
//     StableAfter is an hour, so only the answer makes it healthy.
//   - silent: no call; each generation is killed a little more than
//     StableAfter (150 ms) after its Connected event. The budget compares
//     timestamps (the loss, seen after the kill, against the connect,
//     taken before the event), so the wait only has to be longer than
//     StableAfter, never short: a slow machine makes it longer still.
//
// MaxAttempts is 2: a budget that did not reset would end PermanentlyFailed
// at the third loss of an unhealthy connection, and 10 kills are more than
// three times that. The kills are counted, not timed: how fast this
// machine respawns a child cannot fail the test.
func TestServerThatKeepsComingBackRealProcess(t *testing.T) {
	const kills = 10
	for _, tt := range []struct {
		name        string
		answer      bool
		stableAfter time.Duration
		wait        time.Duration // from the Connected event to the kill
	}{
		{"answering", true, time.Hour, 0},
		{"silent", false, 150 * time.Millisecond, 200 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := newTestManager(t, WithPolicy(lifecycle.Policy{MaxAttempts: 2, StableAfter: tt.stableAfter}))
			rec := record(m)
			mustAdd(t, m, "s", faultSpec(""))
			waitGen(t, rec, 1)
			for gen := uint64(1); gen <= kills; gen++ {
				if tt.answer {
					if _, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "hi"}); err != nil {
						t.Fatalf("generation %d: %v", gen, err)
					}
				}
				if tt.wait > 0 {
					// A bounded wait on nothing: what is tested is the
					// schedule of faults, not a state.
					ctx, cancel := context.WithTimeout(context.Background(), tt.wait)
					<-ctx.Done()
					cancel()
				}
				pid, g := childPID(t, m, "s")
				if g != gen {
					t.Fatalf("runtime of generation %d, want %d: a recovery took more than one dial", g, gen)
				}
				kill(t, pid)
				waitGen(t, rec, gen+1)
			}
			if st, _ := m.Status("s"); st.State != lifecycle.Connected || st.Generation != kills+1 {
				t.Fatalf("after %d kills: %s at generation %d, want Connected at %d", kills, st.State, st.Generation, kills+1)
			}
			if _, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "hi"}); err != nil {
				t.Fatalf("after %d kills: %v", kills, err)
			}
		})
	}
}

// A real stdio child killed right after every handshake ends
// PermanentlyFailed after MaxAttempts+1 spawns.
func TestCrashLoopRealProcess(t *testing.T) {
	// StableAfter is long, so that how fast this machine gets from the
	// Connected event to the kill cannot make a connection healthy.
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: 10 * time.Millisecond,
		MaxAttempts: 3, ProbeInterval: -1, StableAfter: time.Hour}))
	rec := record(m)
	mustAdd(t, m, "s", faultSpec(""))
	for gen := uint64(1); ; gen++ {
		e := rec.wait(t, func(e Event) bool {
			return e.Kind == EventState && (e.To == lifecycle.PermanentlyFailed ||
				e.To == lifecycle.Connected && e.Generation == gen)
		})
		if e.To == lifecycle.PermanentlyFailed {
			if gen-1 != 4 {
				t.Fatalf("PermanentlyFailed after %d spawns, want 4 (MaxAttempts+1)", gen-1)
			}
			return
		}
		pid, _ := childPID(t, m, "s")
		kill(t, pid)
	}
}

// A cause from a context other than the caller's (a run of call timeouts, a
// dial that timed out, a runtime closed under a call) reaches the caller
// inside *UnavailableError, ErrPermanentlyFailed or ErrOutcomeUnknown; it
// must not also pass for the caller's own context error, while the rest of
// its chain still matches: one class per error (issue 17).
func TestForeignContextErrorsAreNotTheCallers(t *testing.T) {
	m := newTestManager(t)
	s := newSlot(m, "s", ServerSpec{}, "")
	for _, cause := range []error{
		// What mcp-go returns for a request whose context ended.
		fmt.Errorf("%w: %w", ErrTooManyTimeouts, mcptransport.NewError(context.DeadlineExceeded)),
		fmt.Errorf("initialize: %w", mcptransport.NewError(context.DeadlineExceeded)),
		mcptransport.NewError(fmt.Errorf("Post \"http://x\": %w", context.Canceled)),
	} {
		s.mu.Lock()
		s.lastErr = cause
		ue := s.unavailableLocked(nil)
		s.mu.Unlock()
		for _, err := range []error{ue, serverError(ErrPermanentlyFailed, "s", notCanceled(cause)),
			serverError(ErrOutcomeUnknown, "s", notCanceled(cause))} {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("%v passes for the caller's context error", err)
			}
			var te *mcptransport.Error
			if !errors.As(err, &te) {
				t.Errorf("%v lost the rest of its chain (*mcptransport.Error)", err)
			}
			if errors.Is(cause, ErrTooManyTimeouts) && !errors.Is(err, ErrTooManyTimeouts) {
				t.Errorf("%v lost ErrTooManyTimeouts from its chain", err)
			}
			if err.Error() == "" || !strings.Contains(err.Error(), cause.Error()) {
				t.Errorf("%q does not say its cause %q", err, cause)
			}
		}
	}
}

// Issue 10 hygiene: a non-positive option value keeps the default instead of
// breaking every dial, and no String panics.
func TestOptionZeroKeepsDefaultAndStringsDoNotPanic(t *testing.T) {
	ts := newTestServer()
	m := New(WithTimeouts(Timeouts{Dial: 0, Ready: -1, Close: 0, Drain: 0}),
		WithMaxConcurrentDials(0), WithTimeoutThreshold(0), WithMaxInFlight(0))
	defer m.Close()
	if m.opts.dialTimeout != DefaultDialTimeout || m.opts.readyTimeout != DefaultReadyTimeout ||
		m.opts.maxDials != DefaultMaxConcurrentDials || m.opts.maxInFlight != DefaultMaxInFlight {
		t.Fatalf("zero options changed the defaults: %+v", m.opts)
	}
	if err := m.Add(testCtx(t), "s", ServerSpec{Dialer: ts.dialer()}); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(testCtx(t), "s", lifecycle.Connected); err != nil {
		t.Fatalf("WithTimeouts(Timeouts{Dial: 0}) broke the dial: %v", err)
	}
	for _, k := range []EventKind{-1, 1 << 20} {
		if got := k.String(); got != "unknown" {
			t.Errorf("EventKind(%d).String() = %q", int(k), got)
		}
	}
}

// Call by qualified name waits for (and starts) a server that has no
// catalog yet, as CallTool does, instead of failing with ErrToolNotFound
// (issue 10 item 6).
func TestCallByQualifiedNameWaitsForLazyServer(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "lazy", ServerSpec{Dialer: ts.dialer(), Lazy: true})
	mustWait(t, m, "lazy", lifecycle.Disconnected)
	if _, ok := m.View().Catalog("lazy"); ok {
		t.Fatal("a lazy server has a catalog before its first connect")
	}
	res, err := m.Call(testCtx(t), "lazy__echo", map[string]any{"text": "hi"})
	if err != nil || res.IsError {
		t.Fatalf("Call of a lazy server's tool: %v, %v", res, err)
	}
	if st, _ := m.Status("lazy"); st.State != lifecycle.Connected {
		t.Fatalf("after the call: %s, want Connected", st.State)
	}
	// Once it has a catalog, an unknown tool is unknown at once.
	if _, err := m.Call(testCtx(t), "lazy__nope", nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("unknown tool of a connected server: %v, want ErrToolNotFound", err)
	}
	if _, err := m.Call(testCtx(t), "other__echo", nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("a name no server's prefix begins: %v, want ErrToolNotFound", err)
	}
}
