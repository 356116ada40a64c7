//go:build linux

package soak

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// run is one soak, phase by phase: start, soak, settle, shut down, report.
type run struct {
	t     *testing.T
	cfg   config
	fleet []*member
	m     *client.Manager
	clock *clock
	log   *faultLog
	led   *ledger
	tr    *tracker
	logs  *logCatcher

	// Set by the phases, read by the report.
	startedIn     time.Duration // Add → whole fleet Connected
	soakEnd       time.Time     // faults asked to stop
	faultsStopped time.Time     // the last fault finished
	settledIn     time.Duration // faultsStopped → every server Connected (or the limit)
	notConnected  int
	final         []client.ServerStatus // after the checks, before Close
	stats         client.Stats          // likewise
	closeTook     time.Duration
}

func newRun(t *testing.T, cfg config, tsBin, node, resumeScript string) *run {
	r := &run{t: t, cfg: cfg, clock: &clock{t0: time.Now()}, log: newFaultLog()}
	r.led = newLedger(r.clock, r.log)
	r.fleet = startFleet(t, tsBin, node, resumeScript)
	r.tr = newTracker(r.log, r.led, r.clock, r.fleet)
	r.logs = newLogCatcher(r.led, r.member)
	// The Manager runs on its defaults but for the logger: the soak is
	// about what a host gets without tuning.
	r.m = client.New(client.WithLogger(slog.New(r.logs)))
	// Registered after the HTTP servers' own cleanups, so it runs first if
	// the test stops early.
	t.Cleanup(func() { _ = r.m.Close() })
	return r
}

func (r *run) member(name string) *member {
	for _, s := range r.fleet {
		if s.name == name {
			return s
		}
	}
	return nil
}

// start adds the fleet and waits for all of it to be Connected.
func (r *run) start() {
	t := r.t
	begin := time.Now()
	for _, s := range r.fleet {
		if err := r.m.Add(context.Background(), s.name, s.spec); err != nil {
			t.Fatalf("Add(%s): %v", s, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.startup)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for _, s := range r.fleet {
		wg.Go(func() {
			if err := r.m.WaitFor(ctx, s.name, lifecycle.Connected); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s: %v; %s", s, err, r.statusLine(s.name)))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("the fleet did not connect within %v (before any fault):\n%s", r.cfg.startup, strings.Join(errs, "\n"))
	}
	r.startedIn = time.Since(begin)
	t.Logf("%d servers connected in %v", len(r.fleet), r.startedIn.Round(time.Millisecond))
}

// soak runs the callers and the faults for the configured duration, then
// stops the faults, waits for those in progress, and stops the callers.
func (r *run) soak() {
	// Every offset in the report counts from here.
	r.clock.t0 = time.Now()
	events, _ := r.m.Events(1 << 16) // ended by Close
	go r.tr.run(events)

	stopCallers := make(chan struct{})
	var callers sync.WaitGroup
	for i := range r.cfg.callers {
		rng := rand.New(rand.NewPCG(r.cfg.seed, uint64(i)+1))
		callers.Go(func() { r.caller(i, rng, stopCallers) })
	}
	in := &injector{tb: r.t, m: r.m, fleet: r.fleet, rng: rand.New(rand.NewPCG(r.cfg.seed, 0)),
		log: r.log, rep: r.led, clock: r.clock, callTimeout: r.cfg.callTimeout}
	stopFaults := make(chan struct{})
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		in.run(stopFaults)
	}()

	timer := time.NewTimer(r.cfg.duration)
	<-timer.C
	r.soakEnd = time.Now()
	close(stopFaults)
	<-injected
	r.faultsStopped = time.Now()
	close(stopCallers)

	// A call may take its timeout and may outlive it by lateLimit; what is
	// still out after that (and a margin) is stuck.
	limit := r.cfg.callTimeout + lateLimit + 5*time.Second
	done := make(chan struct{})
	go func() {
		callers.Wait()
		close(done)
	}()
	wait := time.NewTimer(limit)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
		for _, c := range r.led.stuck(time.Now()) {
			f := r.log.overlapping(c.server.name, c.start, time.Now(), inFlightSlack)
			note := "in flight"
			if f == nil {
				f, note = r.log.latestBefore(c.server.name, time.Now()), "before"
			}
			r.led.fail(failure{rule: ruleStuck, server: c.server, fault: f, faultNote: note,
				detail: fmt.Sprintf("call echo(%q) by caller %d started at %s, still out %v later; its deadline was %s; %s\n      its server's last events:\n%s",
					c.arg, c.caller, r.clock.rel(c.start), time.Since(c.start).Round(time.Millisecond), r.clock.rel(c.deadline),
					r.statusLine(c.server.name), r.tr.history(c.server.name))})
		}
	}
}

// caller calls random servers until stop is closed.
func (r *run) caller(id int, rng *rand.Rand, stop <-chan struct{}) {
	for seq := 1; ; seq++ {
		pause := r.cfg.pauseMin + time.Duration(rng.Int64N(int64(r.cfg.pauseMax-r.cfg.pauseMin)))
		timer := time.NewTimer(pause)
		select {
		case <-stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		s := r.fleet[rng.IntN(len(r.fleet))]
		r.callOnce(s, id, fmt.Sprintf("%s/c%d/%d", s.name, id, seq))
	}
}

// callOnce makes one call with its own timeout and accounts for it.
func (r *run) callOnce(s *member, caller int, arg string) class {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.callTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	c := r.led.begin(s, caller, arg, deadline)
	res, err := r.m.CallTool(ctx, s.name, s.tool(), s.args(arg))
	return r.led.end(c, res, err, ctx.Err())
}

// settle checks that every server is Connected within the settle time
// after the faults stopped, and that a call to each then succeeds.
func (r *run) settle() {
	ctx, cancel := context.WithDeadline(context.Background(), r.faultsStopped.Add(r.cfg.settle))
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		latest time.Time
	)
	for _, s := range r.fleet {
		wg.Go(func() {
			err := r.m.WaitFor(ctx, s.name, lifecycle.Connected)
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				latest = maxTime(latest, now)
				return
			}
			r.notConnected++
			f := r.log.latestBefore(s.name, now)
			r.led.fail(failure{rule: ruleNotConnected, server: s, fault: f, faultNote: "before",
				detail:  fmt.Sprintf("%v; %s\n      its last events:\n%s", err, r.statusLine(s.name), r.tr.history(s.name)),
				errText: r.stateOf(s.name)})
		})
	}
	wg.Wait()
	if !latest.IsZero() {
		r.settledIn = latest.Sub(r.faultsStopped)
	}

	// Status says Connected; a call must agree (DESIGN: status can never
	// say "connected" while calls fail).
	for _, s := range r.fleet {
		wg.Go(func() {
			if st, err := r.m.Status(s.name); err == nil && st.State == lifecycle.Connected {
				r.callOnce(s, -1, s.name+"/after-recovery")
			}
		})
	}
	wg.Wait()
	r.final = r.m.Statuses()
	r.stats = r.m.Stats()
}

// shutdown closes the Manager and checks that it left no child behind.
func (r *run) shutdown() {
	begin := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- r.m.Close() }()
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	select {
	case err := <-closed:
		r.closeTook = time.Since(begin)
		if err != nil {
			r.led.fail(failure{rule: ruleClose, detail: "Close() = " + err.Error(), errText: err.Error()})
		}
	case <-limit.C:
		r.led.fail(failure{rule: ruleClose, detail: "Close() did not return within a minute", errText: "hung"})
		return
	}
	// The HTTP servers are children too (server-everything): stop them
	// first, so that what is left is the Manager's.
	for _, s := range r.fleet {
		switch {
		case s.ts != nil:
			s.ts.Stop()
		case s.http != nil:
			s.http.Stop()
		case s.stop != nil:
			s.stop()
		}
		if s.proxy != nil {
			s.proxy.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), proctest.DefaultWait)
	defer cancel()
	if err := proctest.WaitNoChildren(ctx); err != nil {
		kids, _ := proctest.Children()
		for _, p := range kids {
			var s *member
			if name, ok := envOf(p.PID, markerEnv); ok {
				s = r.member(name)
			}
			r.led.fail(failure{rule: ruleChild, server: s, detail: describeChild(p), errText: p.Comm})
		}
	}
	events := time.NewTimer(10 * time.Second)
	defer events.Stop()
	select {
	case <-r.tr.done:
	case <-events.C:
		r.led.fail(failure{rule: ruleClose, detail: "the event channel was not closed 10s after Close returned", errText: "events"})
	}
}

// statusLine describes a server's status for a failure report.
func (r *run) statusLine(name string) string {
	st, err := r.m.Status(name)
	if err != nil {
		return "status: " + err.Error()
	}
	s := fmt.Sprintf("status %s, generation %d, attempt %d", st.State, st.Generation, st.Attempt)
	if !st.NextRetry.IsZero() {
		s += fmt.Sprintf(", next retry in %v", time.Until(st.NextRetry).Round(time.Millisecond))
	}
	if st.LastError != nil {
		s += ", last error: " + st.LastError.Error()
	}
	if n := len(st.Stderr); n > 0 {
		s += "; stderr: " + strings.Join(st.Stderr[max(0, n-3):], " | ")
	}
	return s
}

func (r *run) stateOf(name string) string {
	st, err := r.m.Status(name)
	if err != nil {
		return err.Error()
	}
	return st.State.String()
}

// failed reports every failure group on the test, worst first in the order
// they happened, each with enough to act on: the rule, the server kind, the
// servers hit, the fault in flight or before, and the first case in full.
func (r *run) failed() bool {
	groups := r.led.failures()
	for i, g := range groups {
		if i == 40 {
			r.t.Errorf("… and %d more failure groups", len(groups)-i)
			break
		}
		f := g.first
		where := "no server"
		if f.server != nil {
			where = fmt.Sprintf("%s on %s", f.server.kind, serverCounts(g.servers))
		}
		fault := "no fault"
		if f.fault != nil {
			fault = f.faultNote + ": " + r.log.describe(f.fault, r.clock)
		}
		r.t.Errorf("SOAK FAILURE: %s ×%d [%s]\n    fault: %s\n    first at %s: %s",
			f.rule, g.count, where, fault, r.clock.rel(f.at), f.detail)
	}
	return len(groups) > 0
}

func serverCounts(m map[string]int) string {
	var parts []string
	for _, name := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s×%d", name, m[name]))
	}
	return strings.Join(parts, " ")
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
