package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/machine"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// TestModel drives a manager with thousands of seeded random operations
// against in-process servers that can die, refuse dials and deliver outcomes
// late, and checks the design's invariants after every step:
//
//   - only legal transitions happen, each starting where the last one ended;
//   - a late outcome (loss, timeout, success) from an older generation
//     changes neither the state nor the health of the current one;
//   - no request reaches a runtime after it was closed, so after Disable
//     returns nothing reaches the old runtime;
//   - a Connected slot holds a lease of its current generation and publishes
//     that generation's catalog; losing it keeps the catalog published;
//   - Disabled and PermanentlyFailed publish nothing;
//   - after Close no connection is open and no goroutine is left (TestMain).
//
// MCPFLEET_MODEL_SEED=n replays one seed; MCPFLEET_MODEL_STEPS=n sets the
// number of steps per seed.
func TestModel(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if v := os.Getenv("MCPFLEET_MODEL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{n}
	}
	steps := 2000
	if v := os.Getenv("MCPFLEET_MODEL_STEPS"); v != "" {
		steps, _ = strconv.Atoi(v)
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runModel(t, seed, steps) })
	}
}

type model struct {
	t       *testing.T
	m       *Manager
	rng     *rand.Rand
	servers map[string]*testServer
	failing map[string]bool

	mu      sync.Mutex
	last    map[*slot]lifecycle.State // last state seen by the transition hook
	leases  map[*slot][]*lease        // every lease each slot ever installed
	badHook []string
}

func runModel(t *testing.T, seed uint64, steps int) {
	md := &model{
		t:       t,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		servers: map[string]*testServer{},
		failing: map[string]bool{},
		last:    map[*slot]lifecycle.State{},
		leases:  map[*slot][]*lease{},
	}
	md.m = New(
		WithPolicy(lifecycle.Policy{InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond,
			MaxAttempts: 2, ProbeInterval: -1, StableAfter: time.Hour}),
		WithTimeouts(Timeouts{Ready: 200 * time.Millisecond, Drain: 5 * time.Second, Close: time.Second}),
		WithTimeoutThreshold(1),
	)
	md.m.onTransition = md.hook
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		md.servers[n] = newTestServer()
	}
	ops := []struct {
		name   string
		weight int
		run    func(name string) string
	}{
		{"add", 12, md.add},
		{"remove", 3, md.remove},
		{"enable", 8, md.enable},
		{"disable", 6, md.disable},
		{"reconnect", 6, md.reconnect},
		{"kill", 10, md.kill},
		{"dial-fail", 6, md.toggleDialFailure},
		{"late-outcome", 10, md.lateOutcome},
		{"call", 20, md.call},
		{"call-crash", 4, md.callCrash},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	var trace []string
	for step := range steps {
		pick := md.rng.IntN(total)
		name := names[md.rng.IntN(len(names))]
		for _, o := range ops {
			if pick < o.weight {
				trace = append(trace, fmt.Sprintf("%d:%s(%s)%s", step, o.name, name, o.run(name)))
				break
			}
			pick -= o.weight
		}
		md.settle()
		if err := md.check(); err != nil {
			t.Fatalf("seed %d step %d: %v\nlast steps: %v", seed, step, err, trace[max(0, len(trace)-15):])
		}
	}
	if err := md.m.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	counts := map[string]int{}
	for _, line := range trace {
		for _, k := range []string{"old=", "state=Connected err=<nil>", "killed=1", "outcome unknown", "failing=true", "PermanentlyFailed"} {
			if strings.Contains(line, k) {
				counts[k]++
			}
		}
	}
	t.Logf("%d steps; exercised: %v", steps, counts)
	if counts["old="] == 0 || counts["killed=1"] == 0 || counts["state=Connected err=<nil>"] == 0 {
		t.Fatalf("the model did not exercise late outcomes, kills and calls: %v", counts)
	}
	for n, ts := range md.servers {
		if open := ts.openConns(); open != 0 {
			t.Errorf("server %s: %d connections left open after Close", n, open)
		}
	}
	md.mu.Lock()
	defer md.mu.Unlock()
	if len(md.badHook) > 0 {
		t.Fatalf("transition invariants broken: %v", md.badHook)
	}
}

// hook runs inside every transition, with the slot locked.
func (md *model) hook(s *slot, from, to lifecycle.State) {
	md.mu.Lock()
	defer md.mu.Unlock()
	bad := func(format string, args ...any) {
		md.badHook = append(md.badHook, fmt.Sprintf("%s %v->%v: ", s.name, from, to)+fmt.Sprintf(format, args...))
	}
	if prev, ok := md.last[s]; ok && prev != from {
		bad("previous transition ended in %v", prev)
	} else if !ok && from != lifecycle.Disabled {
		bad("a slot's first transition must leave Disabled")
	}
	md.last[s] = to
	if !machine.CanTransition(from, to) {
		bad("illegal")
	}
	// A reconnect whose catalog is unchanged keeps the View (and the
	// catalog's own Generation) as it was, so that hosts caching per version
	// do not churn; the publisher's generation is the one to check.
	c, published := s.m.pub.View().Catalog(s.name)
	pgen, _ := s.m.pub.Generation(s.name)
	switch {
	case to == lifecycle.Connected:
		md.leases[s] = append(md.leases[s], s.lease)
		if !published || pgen != s.gen || c.Generation > s.gen {
			bad("connected generation %d but published generation %d", s.gen, pgen)
		}
	case from == lifecycle.Connected && to == lifecycle.Reconnecting:
		if !published || pgen != s.gen {
			bad("last good catalog of generation %d not kept while reconnecting", s.gen)
		}
	case !to.Publishes() && published:
		bad("still publishes generation %d", c.Generation)
	}
}

func (md *model) add(name string) string {
	spec := ServerSpec{Dialer: md.servers[name].dialer(), Lazy: md.rng.IntN(5) == 0, Disabled: md.rng.IntN(5) == 0}
	err := md.m.Add(context.Background(), name, spec)
	if err != nil && !errors.Is(err, ErrDuplicateServer) {
		md.t.Fatalf("add: %v", err)
	}
	return fmt.Sprintf(" lazy=%v disabled=%v err=%v", spec.Lazy, spec.Disabled, err)
}

func (md *model) remove(name string) string {
	err := md.m.Remove(context.Background(), name)
	if err != nil && !errors.Is(err, ErrUnknownServer) {
		md.t.Fatalf("remove: %v", err)
	}
	if err == nil {
		if _, ok := md.m.View().Catalog(name); ok {
			md.t.Fatalf("removed server %s still published", name)
		}
	}
	return ""
}

func (md *model) enable(name string) string {
	if err := md.m.Enable(context.Background(), name); err != nil && !errors.Is(err, ErrUnknownServer) {
		md.t.Fatalf("enable: %v", err)
	}
	return ""
}

func (md *model) disable(name string) string {
	if err := md.m.Disable(context.Background(), name); err != nil && !errors.Is(err, ErrUnknownServer) {
		md.t.Fatalf("disable: %v", err)
	}
	if ts := md.servers[name]; ts.lateRequests() != 0 {
		md.t.Fatalf("a request reached a closed runtime of %s: %v", name, ts.lateMethods())
	}
	if st, err := md.m.Status(name); err == nil {
		if st.State != lifecycle.Disabled {
			md.t.Fatalf("Disable returned in state %v", st.State)
		}
		if open := md.servers[name].openConns(); open != 0 {
			md.t.Fatalf("Disable returned with %d runtimes of %s open", open, name)
		}
	}
	return ""
}

func (md *model) reconnect(name string) string {
	err := md.m.Reconnect(context.Background(), name)
	if err != nil && !errors.Is(err, ErrUnknownServer) && !errors.Is(err, ErrDisabled) {
		md.t.Fatalf("reconnect: %v", err)
	}
	return ""
}

func (md *model) kill(name string) string {
	return fmt.Sprintf(" killed=%d", md.servers[name].Kill(nil))
}

func (md *model) toggleDialFailure(name string) string {
	md.failing[name] = !md.failing[name]
	if md.failing[name] {
		md.servers[name].SetDialError(errDown)
	} else {
		md.servers[name].SetDialError(nil)
	}
	return fmt.Sprintf(" failing=%v", md.failing[name])
}

// lateOutcome replays, against the current generation, outcomes that an
// older runtime of the same slot reports late: a loss, a timeout, a success.
func (md *model) lateOutcome(name string) string {
	s, err := md.m.slot(name)
	if err != nil {
		return " no slot"
	}
	md.mu.Lock()
	var old *lease
	for _, l := range md.leases[s] {
		if l.gen < s.genLocked() {
			old = l
		}
	}
	md.mu.Unlock()
	if old == nil {
		return " no old lease"
	}
	before := s.snapshotForModel()
	cause := errors.New("late outcome from an old generation")
	s.lost(old, cause)
	s.timedOut(old, cause)
	s.succeeded(old)
	after := s.snapshotForModel()
	if before != after {
		md.t.Fatalf("late outcome of generation %d changed the slot: %+v -> %+v", old.gen, before, after)
	}
	return fmt.Sprintf(" old=%d current=%d", old.gen, before.gen)
}

func (md *model) call(name string) string {
	st, serr := md.m.Status(name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := md.m.CallTool(ctx, name, "echo", map[string]any{"text": "x"})
	if serr == nil && st.State == lifecycle.Connected && !md.failing[name] && err != nil {
		md.t.Fatalf("call on a settled Connected server failed: %v", err)
	}
	if serr == nil && st.State == lifecycle.Disabled && !errors.Is(err, ErrDisabled) {
		md.t.Fatalf("call on a Disabled server: %v", err)
	}
	if serr == nil && st.State == lifecycle.PermanentlyFailed && !errors.Is(err, ErrPermanentlyFailed) {
		md.t.Fatalf("call on a PermanentlyFailed server: %v", err)
	}
	return fmt.Sprintf(" state=%v err=%v", st.State, err)
}

func (md *model) callCrash(name string) string {
	st, serr := md.m.Status(name)
	_, err := md.m.CallTool(context.Background(), name, "crash", nil)
	if serr == nil && st.State == lifecycle.Connected && !errors.Is(err, ErrOutcomeUnknown) {
		md.t.Fatalf("a non-idempotent call lost in flight: %v, want ErrOutcomeUnknown", err)
	}
	return fmt.Sprintf(" err=%v", err)
}

// settle waits until no slot has a connect loop running or a dead runtime
// not yet noticed, so that invariants are checked at rest.
func (md *model) settle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{"a", "b", "c", "d"} {
		s, err := md.m.slot(name)
		if err != nil {
			continue
		}
		for {
			s.mu.Lock()
			var runDone, dead <-chan struct{}
			if s.run != nil {
				runDone = s.run.done
			}
			if s.lease != nil {
				dead = s.lease.conn.Done()
			}
			changed, state := s.changed, s.state
			s.mu.Unlock()
			busy := runDone != nil || state == lifecycle.Disabling
			if dead != nil {
				select {
				case <-dead:
					busy = true
				default:
				}
			}
			if !busy {
				break
			}
			select {
			case <-changed:
			case <-runDone:
			case <-ctx.Done():
				md.t.Fatalf("slot %s did not settle: state %v", name, state)
			}
		}
	}
}

func (md *model) check() error {
	if n := md.m.illegal.Load(); n != 0 {
		return fmt.Errorf("%d illegal transitions", n)
	}
	md.mu.Lock()
	if len(md.badHook) > 0 {
		defer md.mu.Unlock()
		return fmt.Errorf("transition invariants: %v", md.badHook)
	}
	md.mu.Unlock()
	for name, ts := range md.servers {
		if n := ts.lateRequests(); n != 0 {
			return fmt.Errorf("%s: %d requests reached closed runtimes: %v", name, n, ts.lateMethods())
		}
		s, err := md.m.slot(name)
		if err != nil {
			if _, ok := md.m.View().Catalog(name); ok {
				return fmt.Errorf("%s: removed but published", name)
			}
			continue
		}
		s.mu.Lock()
		state, l, gen := s.state, s.lease, s.gen
		hgen := s.health.Generation()
		s.mu.Unlock()
		c, published := md.m.View().Catalog(name)
		pgen, _ := md.m.pub.Generation(name)
		switch {
		case state == lifecycle.Connected:
			if l == nil || l.gen != gen || hgen != gen {
				return fmt.Errorf("%s: Connected gen %d with lease %v health gen %d", name, gen, l, hgen)
			}
			if !published || pgen != gen {
				return fmt.Errorf("%s: Connected gen %d but published generation %d", name, gen, pgen)
			}
		case l != nil:
			return fmt.Errorf("%s: %v with a lease", name, state)
		case !state.Publishes() && published:
			return fmt.Errorf("%s: %v but publishes generation %d", name, state, c.Generation())
		}
	}
	return nil
}

type slotFacts struct {
	state    lifecycle.State
	gen      uint64
	lease    *lease
	timeouts int
	lastErr  error
}

func (s *slot) snapshotForModel() slotFacts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slotFacts{s.state, s.gen, s.lease, s.health.ConsecutiveTimeouts(), s.lastErr}
}

func (s *slot) genLocked() uint64 { return s.gen }
