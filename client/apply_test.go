package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// applyJSON parses js and applies it.
func applyJSON(t *testing.T, m *Manager, js string) ApplyResult {
	t.Helper()
	cfg, err := ParseConfig([]byte(js), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Apply(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A changed entry is reconfigured in its stable slot: the generation goes up
// by one, and a call that waits on it meanwhile succeeds on the new runtime.
func TestApplyReconfiguresInTheStableSlot(t *testing.T) {
	v1, v2 := newTestServer(), newTestServer()
	gate := make(chan struct{}) // holds the dial of v2 until the call waits
	// A fake clock shows when the call waits: its ready timeout is then
	// the only timer (the probe is off, and the reconnect dials at once).
	clock := fakeclock.New(time.Unix(0, 0))
	m := newTestManager(t, WithClock(clock), WithTimeouts(Timeouts{IdleProbe: -1}))
	m.opts.dialOverride = func(spec ServerSpec) Dialer {
		if slices.Contains(spec.Stdio.Args, "v2") {
			d := v2.dialer()
			return func(ctx context.Context) (transport.Conn, error) {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return d(ctx)
			}
		}
		return v1.dialer()
	}
	rec := record(m)
	applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv"}}}`)
	mustWait(t, m, "s", lifecycle.Connected)
	before, _ := m.Status("s")

	res := applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "args": ["v2"]}}}`)
	if !slices.Equal(res.Restarted, []string{"s"}) {
		t.Fatalf("Apply: %v", res)
	}
	mustWait(t, m, "s", lifecycle.Reconnecting)
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("the last good catalog was unpublished during the restart")
	}
	called := make(chan error, 1)
	go func() {
		r, err := m.Call(testCtx(t), "s__echo", map[string]any{"text": "hi"})
		if err == nil && text(r) != "hi" {
			err = fmt.Errorf("got %q", text(r))
		}
		called <- err
	}()
	// Let the new server answer once the call is waiting for it.
	if err := clock.WaitForTimers(testCtx(t), 1); err != nil {
		t.Fatalf("the call did not wait: %v", err)
	}
	close(gate)
	if err := <-called; err != nil {
		t.Fatalf("call waiting on the reconfigured server: %v", err)
	}
	after, _ := m.Status("s")
	if after.Generation != before.Generation+1 {
		t.Fatalf("generation %d -> %d, want one up", before.Generation, after.Generation)
	}
	if v1.calls.Load() != 0 || v2.calls.Load() != 1 {
		t.Fatalf("calls: old runtime %d, new runtime %d; want 0 and 1", v1.calls.Load(), v2.calls.Load())
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	// The old runtime is closed in the background, counted in the slot's
	// closing group: wait for that, then look.
	sl, err := m.slot("s")
	if err != nil {
		t.Fatal(err)
	}
	sl.closing.Wait()
	if n := v1.openConns(); n != 0 {
		t.Fatalf("old runtime still open: %d connections", n)
	}
}

// Changed servers restart at once, bounded by the dial limit: 20 servers
// with a limit of 8 have 8 dials of the new spec in flight together.
func TestApplyRestartsChangedServersConcurrently(t *testing.T) {
	const n, limit = 20, 8
	var (
		mu       sync.Mutex
		inflight int
		peak     int
		started  int
		release  = make(chan struct{})
		released atomic.Bool
	)
	ts := newTestServer()
	m := newTestManager(t, WithMaxConcurrentDials(limit))
	m.opts.dialOverride = func(spec ServerSpec) Dialer {
		d := ts.dialer()
		if !slices.Contains(spec.Stdio.Args, "v2") {
			return d
		}
		return func(ctx context.Context) (transport.Conn, error) {
			mu.Lock()
			inflight++
			started++
			peak = max(peak, inflight)
			if started == limit && released.CompareAndSwap(false, true) {
				close(release) // as many dials in flight as the limit allows
			}
			mu.Unlock()
			defer func() {
				mu.Lock()
				inflight--
				mu.Unlock()
			}()
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return d(ctx)
		}
	}
	entries := func(args string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"s%02d": {"command": "srv"%s}`, i, args)
		}
		return `{"mcpServers": {` + b.String() + `}}`
	}
	applyJSON(t, m, entries(""))
	for i := range n {
		mustWait(t, m, fmt.Sprintf("s%02d", i), lifecycle.Connected)
	}
	res := applyJSON(t, m, entries(`, "args": ["v2"]`))
	if len(res.Restarted) != n || len(res.Added)+len(res.Removed)+len(res.Unchanged)+len(res.Failed) != 0 {
		t.Fatalf("Apply: %v", res)
	}
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		mustWait(t, m, name, lifecycle.Connected)
		if st, _ := m.Status(name); st.Generation != 2 {
			t.Fatalf("%s: generation %d, want 2", name, st.Generation)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// Restarts one at a time would never have two dials in flight, and the
	// release would never come (the waits above would time out).
	if peak != limit {
		t.Fatalf("peak of concurrent dials %d, want the limit %d", peak, limit)
	}
}

// The summary names every server once, in the right group, and the
// disabled-and-changed case is dialled never.
func TestApplySummary(t *testing.T) {
	var dialled sync.Map
	ts := newTestServer()
	m := newTestManager(t)
	m.opts.dialOverride = func(spec ServerSpec) Dialer {
		d := ts.dialer()
		return func(ctx context.Context) (transport.Conn, error) {
			dialled.Store(spec.Stdio.Command+strings.Join(spec.Stdio.Args, ","), true)
			return d(ctx)
		}
	}
	res := applyJSON(t, m, `{"mcpServers": {
		"keep": {"command": "keep"}, "gone": {"command": "gone"}, "change": {"command": "change"},
		"on": {"command": "on", "disabled": true}, "off": {"command": "off"},
		"offchange": {"command": "offchange"}, "bad": {"command": "bad"}}}`)
	if got, want := res.String(), "added bad, change, gone, keep, off, offchange, on"; got != want {
		t.Fatalf("first Apply: %q, want %q", got, want)
	}
	for _, name := range []string{"keep", "gone", "change", "off", "offchange", "bad"} {
		mustWait(t, m, name, lifecycle.Connected)
	}
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"keep": {"command": "keep"}, "change": {"command": "change", "args": ["2"]},
		"on": {"command": "on"}, "off": {"command": "off", "disabled": true},
		"offchange": {"command": "offchange", "args": ["2"], "disabled": true},
		"bad": {"command": "bad"}, "new": {"command": "new", "lazy": true}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	bad := cfg.Servers["bad"] // changed after parsing, as no file could
	bad.Stdio = nil
	cfg.Servers["bad"] = bad
	res, err = m.Apply(testCtx(t), cfg)
	want := ApplyResult{Added: []string{"new"}, Removed: []string{"gone"}, Restarted: []string{"change"},
		Enabled: []string{"on"}, Disabled: []string{"off", "offchange"}, Unchanged: []string{"keep"},
		Failed: []string{"bad"}}
	if fmt.Sprint(res) != fmt.Sprint(want) || fmt.Sprintf("%#v", res) != fmt.Sprintf("%#v", want) {
		t.Fatalf("Apply:\n got %#v\nwant %#v", res, want)
	}
	if err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Apply error %v, want one naming bad", err)
	}
	mustWait(t, m, "change", lifecycle.Connected)
	mustWait(t, m, "on", lifecycle.Connected)
	if _, ok := dialled.Load("offchange2"); ok {
		t.Fatal("a changed entry that is now disabled was dialled")
	}
	if st, _ := m.Status("bad"); st.State != lifecycle.Connected || st.Generation != 1 {
		t.Fatalf("a bad entry touched its server: %+v", st)
	}
	if st, _ := m.Status("new"); st.State != lifecycle.Disconnected {
		t.Fatalf("new lazy server: %v", st.State)
	}
	// Enabled later, offchange dials its new spec.
	if err := m.Enable(testCtx(t), "offchange"); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "offchange", lifecycle.Connected)
	if _, ok := dialled.Load("offchange2"); !ok {
		t.Fatal("offchange did not take its new spec")
	}
}
