package client

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestCallDuringReconnectingSucceedsOnceBack(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: 5 * time.Millisecond, MaxAttempts: -1, Jitter: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)

	ts.SetDialError(errDown)
	ts.Kill(nil)
	rec.wait(t, func(e Event) bool { return e.Kind == EventRetry }) // a redial failed: really down

	done := make(chan error, 1)
	go func() {
		res, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "back"})
		if err == nil && text(res) != "back" {
			err = errors.New("wrong content: " + text(res))
		}
		done <- err
	}()
	// The call is waiting: let the server come back.
	ts.SetDialError(nil)
	if err := <-done; err != nil {
		t.Fatalf("call during Reconnecting: %v", err)
	}
	st, _ := m.Status("s")
	if st.State != lifecycle.Connected || st.Generation != 2 {
		t.Fatalf("status %v gen %d, want Connected gen 2", st.State, st.Generation)
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
}

func TestCallDuringReconnectingGivesUnavailableAfterReadyTimeout(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t,
		WithPolicy(lifecycle.Policy{InitialInterval: time.Hour, MaxAttempts: -1, Jitter: -1}),
		WithTimeouts(Timeouts{Ready: 50 * time.Millisecond}))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	ts.SetDialError(errDown)
	ts.Kill(nil)
	rec := record(m)
	// The immediate redial fails, then the next is an hour away.
	_ = rec
	waitRetry(t, m, "s")

	start := time.Now()
	_, err := m.CallTool(testCtx(t), "s", "echo", nil)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, errDown) {
		t.Fatalf("err = %v, want *UnavailableError wrapping the cause", err)
	}
	if ue.State != lifecycle.Reconnecting || ue.Generation != 1 || ue.NextRetry.IsZero() || ue.Server != "s" {
		t.Fatalf("UnavailableError %+v: want state Reconnecting, generation 1, a next retry", ue)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("waited %v for a 50ms ready timeout", waited)
	}

	// The caller's context bounds the wait too, and its ending is the
	// caller's own error: the context's, and no sentinel (issue 17). No
	// in-flight limit, so that a context that ends before the call gets to
	// wait for the server (a loaded machine) still ends in that wait.
	m2 := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: time.Hour, MaxAttempts: -1}), WithTimeouts(Timeouts{Ready: time.Hour}))
	ts2 := newTestServer()
	ts2.SetDialError(errDown)
	mustAdd(t, m2, "s", ServerSpec{Dialer: ts2.dialer(), MaxInFlight: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = m2.CallTool(ctx, "s", "echo", nil)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) ||
		!strings.Contains(err.Error(), `"s"`) || !strings.Contains(err.Error(), "Connecting") {
		t.Fatalf("err = %v, want DeadlineExceeded naming the server and its state, not ErrUnavailable", err)
	}
}

// waitRetry waits until the slot has a retry scheduled.
func waitRetry(t *testing.T, m *Manager, name string) {
	t.Helper()
	s, _ := m.slot(name)
	ctx := testCtx(t)
	for {
		s.mu.Lock()
		scheduled, ch := !s.nextRetry.IsZero(), s.changed
		s.mu.Unlock()
		if scheduled {
			return
		}
		select {
		case <-ch:
		case <-time.After(time.Millisecond): // nextRetry changes without a state change; poll, bounded by ctx
		case <-ctx.Done():
			t.Fatal("no retry scheduled")
		}
	}
}

func TestBudgetExhaustionThenReconnect(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	ts := newTestServer()
	ts.SetDialError(errDown)
	m := newTestManager(t, WithClock(clock), WithPolicy(lifecycle.Policy{
		InitialInterval: time.Second, MaxInterval: 4 * time.Second, Jitter: -1, MaxAttempts: 3, ProbeInterval: -1,
	}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})

	// Each failed dial schedules the next on the fake clock: 1s, 2s, 4s.
	var waits []time.Duration
	for range 3 {
		e := rec.wait(t, func(e Event) bool { return e.Kind == EventRetry && e.Attempt == len(waits)+1 })
		waits = append(waits, e.NextRetry.Sub(clock.Now()))
		if err := clock.WaitForTimers(testCtx(t), 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(e.NextRetry.Sub(clock.Now()))
	}
	if !slices.Equal(waits, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}) {
		t.Fatalf("schedule %v", waits)
	}
	mustWait(t, m, "s", lifecycle.PermanentlyFailed)
	if got := ts.Dials(); got != 4 {
		t.Fatalf("%d dials, want 4 (first + 3 retries)", got)
	}
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); !errors.Is(err, ErrPermanentlyFailed) || !errors.Is(err, errDown) {
		t.Fatalf("call in PermanentlyFailed: %v", err)
	}
	if _, ok := m.View().Catalog("s"); ok {
		t.Fatal("PermanentlyFailed server has a published catalog")
	}

	ts.SetDialError(nil)
	if err := m.Reconnect(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	st, _ := m.Status("s")
	if st.Attempt != 0 || st.Generation != 1 {
		t.Fatalf("after Reconnect: attempt %d generation %d", st.Attempt, st.Generation)
	}
	rec.waitStates(t, "s", "Connecting", "PermanentlyFailed", "Reconnecting", "Connected")
}

func TestCloseErrorsDoNotCountAgainstBudget(t *testing.T) {
	ts := newTestServer()
	ts.closeErr = errors.New("test: close failed")
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: time.Millisecond, MaxAttempts: 1, Jitter: -1, ProbeInterval: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	// Reconnect closes the old runtime (which fails) three times over: a
	// budget of one attempt would be spent if close errors counted.
	for i := range 3 {
		if err := m.Reconnect(testCtx(t), "s"); err != nil {
			t.Fatal(err)
		}
		rec.wait(t, func(e Event) bool {
			return e.Kind == EventState && e.To == lifecycle.Connected && e.Generation == uint64(i+2)
		})
	}
	rec.wait(t, func(e Event) bool { return e.Kind == EventCloseError && e.Generation >= 3 })
	st, _ := m.Status("s")
	if st.State != lifecycle.Connected || st.Attempt != 0 {
		t.Fatalf("state %v attempt %d after failed closes", st.State, st.Attempt)
	}
}

func TestDisableDrainsInFlightAndNothingReachesOldRuntime(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithTimeouts(Timeouts{Drain: 10 * time.Second}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)

	inflight := callBlocked(t, m, ts)

	disabled := make(chan error, 1)
	go func() { disabled <- m.Disable(testCtx(t), "s") }()
	rec.wait(t, func(e Event) bool { return e.To == lifecycle.Disabling })
	// New calls fail fast while the old runtime drains.
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); !errors.Is(err, ErrDisabled) {
		t.Fatalf("call while Disabling: %v", err)
	}
	select {
	case err := <-disabled:
		t.Fatalf("Disable returned (%v) with a call in flight inside the drain timeout", err)
	default:
	}
	close(ts.block)
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight call was not allowed to finish: %v", err)
	}
	if err := <-disabled; err != nil {
		t.Fatal(err)
	}
	if ts.openConns() != 0 {
		t.Fatal("Disable returned before the runtime was closed")
	}
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); !errors.Is(err, ErrDisabled) {
		t.Fatalf("call after Disable: %v", err)
	}
	if n := ts.lateRequests(); n != 0 {
		t.Fatalf("%d requests reached the runtime after it was closed", n)
	}
	if _, ok := m.View().Catalog("s"); ok {
		t.Fatal("disabled server still published")
	}

	if err := m.Enable(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	if st, _ := m.Status("s"); st.Generation != 2 {
		t.Fatalf("generation %d after re-enable, want 2", st.Generation)
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Disabling", "Disabled", "Connecting", "Connected")
}

func TestDisableForcesCloseAfterDrainTimeout(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithTimeouts(Timeouts{Drain: 20 * time.Millisecond}))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	inflight := callBlocked(t, m, ts)
	if err := m.Disable(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	close(ts.block) // the handler finishes after its connection was closed
	if err := <-inflight; !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("call cut off by a forced close: %v, want ErrOutcomeUnknown", err)
	}
}

func TestRetryRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tool      string
		stale     bool
		wantErr   error // nil: success
		wantCalls int64 // executions on the server
		wantGen   uint64
	}{
		{name: "stale session is retried transparently", tool: "incr", stale: true, wantCalls: 1, wantGen: 2},
		{name: "lost non-idempotent call is not replayed", tool: "crash", wantErr: ErrOutcomeUnknown, wantCalls: 1, wantGen: 2},
		{name: "lost read-only call is replayed once", tool: "crash-readonly", wantCalls: 2, wantGen: 2},
		{name: "tool error is a result", tool: "fail", wantGen: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer()
			m := newTestManager(t)
			mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
			mustWait(t, m, "s", lifecycle.Connected)
			ts.staleNext.Store(tc.stale)
			res, err := m.CallTool(testCtx(t), "s", tc.tool, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.tool == "fail" && (res == nil || !res.IsError) {
				t.Fatalf("tool error not returned as a result: %+v", res)
			}
			if got := ts.calls.Load(); got != tc.wantCalls {
				t.Fatalf("server executed %d calls, want %d", got, tc.wantCalls)
			}
			mustWait(t, m, "s", lifecycle.Connected)
			if st, _ := m.Status("s"); st.Generation != tc.wantGen {
				t.Fatalf("generation %d, want %d", st.Generation, tc.wantGen)
			}
		})
	}
}

func TestTimeoutsTripHealthOnlyForTheirGeneration(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithTimeoutThreshold(2))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	call := func() error {
		// Long enough that the call reaches the server before it times
		// out, even on a loaded machine: one that times out waiting for
		// an in-flight slot never had a runtime to count against.
		_, err := m.CallTool(testCtx(t), "s", "block", nil, WithCallTimeout(100*time.Millisecond))
		return err
	}
	if err := call(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if st, _ := m.Status("s"); st.Generation != 1 || st.State != lifecycle.Connected {
		t.Fatalf("one timeout changed the runtime: %+v", st)
	}
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); err != nil {
		t.Fatal(err)
	}
	// The success reset the run; two more in a row trip it.
	call()
	call()
	mustWait(t, m, "s", lifecycle.Connected)
	st, _ := m.Status("s")
	if st.Generation != 2 {
		t.Fatalf("generation %d after the timeout threshold, want 2", st.Generation)
	}
	for range len(ts.entered) {
		<-ts.entered
	}
}

func TestSlowSubscriberNeverBlocksTheManager(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	stuck, cancel := m.Events(1) // never read until the end
	defer cancel()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	for i := range 20 {
		mustWait(t, m, "s", lifecycle.Connected)
		if err := m.Reconnect(testCtx(t), "s"); err != nil {
			t.Fatal(err)
		}
		_ = i
	}
	mustWait(t, m, "s", lifecycle.Connected)
	first := <-stuck
	if first.Seq != 1 {
		t.Fatalf("first event seq %d", first.Seq)
	}
	// Trigger one more event and read it: it says how many were lost.
	if err := m.Reconnect(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	next := <-stuck
	if next.Dropped == 0 {
		t.Fatalf("dropped count not reported: %+v", next)
	}
}

func TestEventsAreOrderedAndLegal(t *testing.T) {
	ts := newTestServer()
	// Ten kills of connections that answered nothing are a crash loop
	// that ends a budget (Policy.StableAfter): this one never ends.
	forever := fastPolicy
	forever.MaxAttempts = -1
	m := newTestManager(t, WithPolicy(forever))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	// Each kill waits for the n-th Connected, the runtime after the last
	// kill: right after a kill the slot may still show the dead one
	// Connected, and a kill then found no connection or hit the next one
	// in its handshake, a failed dial.
	for n := 1; n <= 11; n++ {
		seen := 0
		rec.wait(t, func(e Event) bool {
			if e.Kind == EventState && e.To == lifecycle.Connected {
				seen++
			}
			return seen >= n
		})
		if n <= 10 && ts.Kill(nil) == 0 {
			t.Fatalf("kill %d found no connection", n)
		}
	}
	m.Close()
	<-rec.done
	prev := lifecycle.Disabled
	var seq uint64
	for _, e := range rec.snapshot() {
		if e.Seq != seq+1 {
			t.Fatalf("event seq %d after %d", e.Seq, seq)
		}
		seq = e.Seq
		if e.Kind != EventState {
			continue
		}
		if e.From != prev || !machine.CanTransition(e.From, e.To) {
			t.Fatalf("event %d: %v -> %v after %v", e.Seq, e.From, e.To, prev)
		}
		prev = e.To
	}
	if prev != lifecycle.Closed {
		t.Fatalf("last state %v, want Closed", prev)
	}
}

func TestConcurrentTriggersCoalesce(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	ts.SetDialError(errDown)
	ts.Kill(nil)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { _ = m.Reconnect(testCtx(t), "s") })
	}
	wg.Wait()
	s, _ := m.slot("s")
	s.mu.Lock()
	hasRunner := s.run != nil
	s.mu.Unlock()
	ts.SetDialError(nil)
	if err := m.Reconnect(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	if st, _ := m.Status("s"); st.Generation != 2 {
		t.Fatalf("50 concurrent Reconnects made generation %d, want one reconnect (2)", st.Generation)
	}
	_ = hasRunner
	// The killed runtime is closed in the background, after the loss
	// moved the state on: on a loaded machine, after the new runtime was
	// installed, too.
	closesDone(t, m, "s")
	if n := ts.openConns(); n != 1 {
		t.Fatalf("%d open connections, want 1", n)
	}
}

func TestLazyServerConnectsOnFirstCall(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), Lazy: true})
	if st, _ := m.Status("s"); st.State != lifecycle.Disconnected || ts.Dials() != 0 {
		t.Fatalf("lazy server: %v, %d dials", st.State, ts.Dials())
	}
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); err != nil {
		t.Fatal(err)
	}
	if ts.Dials() != 1 {
		t.Fatalf("%d dials", ts.Dials())
	}
}

func TestInFlightLimit(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), MaxInFlight: 2})
	mustWait(t, m, "s", lifecycle.Connected)
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := m.CallTool(testCtx(t), "s", "block", nil)
			errs <- err
		}()
	}
	<-ts.entered
	<-ts.entered
	// A third call cannot have entered: the limit holds it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	select {
	case <-ts.entered:
		t.Fatal("a third call ran with MaxInFlight 2")
	case <-ctx.Done():
	}
	if st, _ := m.Status("s"); st.InFlight != 2 {
		t.Fatalf("in flight %d", st.InFlight)
	}
	close(ts.block)
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailFastStatesAndErrors(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), Disabled: true})
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); !errors.Is(err, ErrDisabled) {
		t.Fatalf("disabled: %v", err)
	}
	if _, err := m.CallTool(testCtx(t), "nope", "echo", nil); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("unknown: %v", err)
	}
	// By qualified name too: the server is known by its prefix, and says
	// why it cannot be called, rather than that the tool is unknown.
	if _, err := m.Call(testCtx(t), "s__echo", nil); !errors.Is(err, ErrDisabled) || errors.Is(err, ErrToolNotFound) {
		t.Fatalf("disabled, by qualified name: %v", err)
	}
	if _, err := m.Call(testCtx(t), "nope__echo", nil); !errors.Is(err, ErrToolNotFound) {
		t.Fatalf("tool not found: %v", err)
	}
	if err := m.Add(testCtx(t), "s", ServerSpec{Dialer: ts.dialer()}); !errors.Is(err, ErrDuplicateServer) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := m.Add(testCtx(t), "bad", ServerSpec{}); err == nil {
		t.Fatal("spec without a dialer accepted")
	}
	if err := m.Reconnect(testCtx(t), "s"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("reconnect disabled: %v", err)
	}
	if err := m.Remove(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Status("s"); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("status after remove: %v", err)
	}
	m.Close()
	if _, err := m.CallTool(testCtx(t), "s", "echo", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := m.Add(testCtx(t), "t", ServerSpec{Dialer: ts.dialer()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("add after close: %v", err)
	}
}

func TestCatalogKeptWhileReconnectingAndListChangedRefresh(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: time.Hour, MaxAttempts: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	v := m.View()
	if _, ok := v.Tool("s__echo"); !ok {
		t.Fatal("echo not published")
	}
	// A tool added at runtime reaches the View through list_changed.
	ts.MCPServer().AddTool(newTool("late"), nil)
	rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog && slices.Contains(e.Diff.Added, "s__late") })
	if _, ok := m.View().Tool("s__late"); !ok {
		t.Fatal("refreshed tool not in the View")
	}

	ts.SetDialError(errDown)
	ts.Kill(nil)
	mustWait(t, m, "s", lifecycle.Reconnecting)
	waitRetry(t, m, "s")
	c, ok := m.View().Catalog("s")
	if !ok || c.Generation() != 1 || len(c.Tools()) == 0 {
		t.Fatalf("last good catalog not kept while Reconnecting: %v %v", c, ok)
	}
}

func TestToolNameCollisionQuarantinesTheNewcomer(t *testing.T) {
	first, second := newTestServer(), newTestServer()
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "one", ServerSpec{Dialer: first.dialer(), ToolPrefix: "shared"})
	mustWait(t, m, "one", lifecycle.Connected)
	mustAdd(t, m, "two", ServerSpec{Dialer: second.dialer(), ToolPrefix: "shared"})
	mustWait(t, m, "two", lifecycle.Connected)

	e := rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog && e.Server == "two" })
	if len(e.Diff.Quarantined) == 0 {
		t.Fatalf("catalog event of the newcomer reports no quarantine: %+v", e.Diff)
	}
	tool, ok := m.View().Tool("shared__echo")
	if !ok || tool.Server() != "one" {
		t.Fatalf("shared__echo held by %q, want the first server", tool.Server())
	}
	st, _ := m.Status("two")
	if len(st.Quarantined) != len(first.MCPServer().ListTools()) || st.Quarantined[0].Holder != "one" {
		t.Fatalf("status of the newcomer: quarantined %+v", st.Quarantined)
	}
	// The rest of the View is unaffected, and calls by server still work.
	if _, err := m.CallTool(testCtx(t), "two", "echo", nil); err != nil {
		t.Fatal(err)
	}
	// When the holder goes, the newcomer's tool takes the name.
	if err := m.Disable(testCtx(t), "one"); err != nil {
		t.Fatal(err)
	}
	if tool, ok := m.View().Tool("shared__echo"); !ok || tool.Server() != "two" {
		t.Fatalf("after the holder left: held by %q, %v", tool.Server(), ok)
	}
}

// A connection that dies while its catalog refresh waits for an answer is
// noticed at once, not when the refresh times out: mcp-go's SSE transport
// waits for an answer on a stream that is gone, and the watcher that runs
// the refresh is the one that notices the death (TestHTTPRestart's
// everything-sse case hung on this under load).
func TestConnDeathDuringRefreshIsNoticed(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithTimeouts(Timeouts{Dial: time.Hour})) // the refresh's own bound
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	base := ts.listCalls.Load()

	gate := make(chan struct{}) // tools/list waits for it or its context
	ts.listGate.Store(&gate)
	ts.MCPServer().SendNotificationToAllClients("notifications/tools/list_changed", nil)
	waitCount(t, &ts.listCalls, base+1) // the refresh waits at the gate
	ts.Kill(nil)
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting")
	ts.listGate.Store(nil)
	close(gate)
	mustWait(t, m, "s", lifecycle.Connected)
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("the catalog was lost")
	}
	if st, _ := m.Status("s"); st.CatalogError != nil {
		t.Fatalf("the refresh that the death ended was recorded as a catalog error: %v", st.CatalogError)
	}
}

func TestListChangedStormCoalesces(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	base := ts.listCalls.Load() // the catalog fetch at connect

	gate := make(chan struct{})
	ts.listGate.Store(&gate)
	notify := func() { ts.MCPServer().SendNotificationToAllClients("notifications/tools/list_changed", nil) }
	notify()
	waitCount(t, &ts.listCalls, base+1) // the first refresh is in flight, held at the gate
	for range 100 {
		notify()
	}
	close(gate)
	waitCount(t, &ts.listCalls, base+2) // the storm queued exactly one more
	// A sentinel change made after the storm shows up with one refresh of
	// its own: the 100 notifications did not queue 100 refreshes.
	ts.MCPServer().AddTool(newTool("sentinel"), nil)
	ctx := testCtx(t)
	for {
		v := m.View()
		if _, ok := v.Tool("s__sentinel"); ok {
			break
		}
		select {
		case <-v.Changed():
		case <-ctx.Done():
			t.Fatal("sentinel tool never published")
		}
	}
	// The second refresh may already have seen the sentinel, in which case
	// the sentinel's own notification makes a third or is still queued.
	if got := ts.listCalls.Load() - base; got < 2 || got > 3 {
		t.Fatalf("%d refreshes for a storm of 101 notifications and one sentinel, want 2 or 3", got)
	}
}

// waitCount waits until c reaches n; the counter has no event to wait on,
// so it is polled, bounded by the test's context.
func waitCount(t *testing.T, c interface{ Load() int64 }, n int64) {
	t.Helper()
	ctx := testCtx(t)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.Load() < n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("counter at %d, want %d", c.Load(), n)
		}
	}
}

func TestFailedRefreshKeepsLastGoodCatalog(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	before := m.View()

	// tools/list now fails: the server is up but its list is broken.
	gate := make(chan struct{})
	ts.listGate.Store(&gate)
	ts.MCPServer().AddTool(newTool("late"), nil)
	waitCount(t, &ts.listCalls, 2)
	ts.listFail.Store(true)
	close(gate)
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventCatalogError })
	if e.Err == nil || e.Server != "s" {
		t.Fatalf("catalog error event: %+v", e)
	}
	st, _ := m.Status("s")
	if st.CatalogError == nil || st.State != lifecycle.Connected {
		t.Fatalf("status after a failed refresh: %+v", st)
	}
	if m.View() != before {
		t.Fatal("a failed refresh replaced the View")
	}
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("last good tools lost")
	}
}

func TestNilArgumentsAreLeftOut(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	var nilMap map[string]any
	for _, args := range []any{nil, nilMap, (*struct{})(nil)} {
		if got := omitNil(args); got != nil {
			t.Fatalf("omitNil(%#v) = %#v, want nil", args, got)
		}
		if _, err := m.CallTool(testCtx(t), "s", "echo", args); err != nil {
			t.Fatalf("call with %#v: %v", args, err)
		}
	}
	if got := omitNil(map[string]any{}); got == nil {
		t.Fatal("an empty, non-nil map was dropped")
	}
}
