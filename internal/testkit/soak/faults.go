//go:build linux

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// faultKind is one kind of fault the soak injects.
type faultKind string

const (
	// faultKill: SIGKILL of a stdio child; every live connection of an
	// in-process server killed.
	faultKill faultKind = "kill"
	// faultRestart: an HTTP server stopped and started again on its port.
	faultRestart faultKind = "restart"
	// faultHang: SIGSTOP, a while, SIGCONT (stdio children, server-everything
	// over HTTP); requests held unanswered (Go HTTP servers); the echo tool
	// blocked (in process).
	faultHang faultKind = "hang"
	// faultToggle: Disable, a short pause, Enable.
	faultToggle faultKind = "toggle"
	// faultReconnect: Manager.Reconnect.
	faultReconnect faultKind = "reconnect"
	// faultCut: every TCP connection to the server broken by its proxy,
	// as a network fault does; the server lives on.
	faultCut faultKind = "cut"
	// faultPartition: every connection broken and new ones refused by the
	// server's HTTP proxy for a while (a network partition); the server
	// lives on, and keeps its sessions.
	faultPartition faultKind = "partition"
)

// faultKinds in report order, with the weight the schedule draws them by.
// A hang costs the most (calls wait out their timeout), so it is the rarest.
var faultWeights = []struct {
	kind   faultKind
	weight int
}{
	{faultKill, 3},
	{faultRestart, 3},
	{faultHang, 1},
	{faultToggle, 2},
	{faultReconnect, 2},
	{faultCut, 2},
	{faultPartition, 1},
}

// The fault schedule's knobs.
const (
	faultEveryMin = 100 * time.Millisecond
	faultEveryMax = 500 * time.Millisecond
	hangMin       = 500 * time.Millisecond
	// hangMax is above the call timeout, so that some hangs outlast the
	// calls sent into them and trip the consecutive-timeout threshold.
	hangMax      = 8 * time.Second
	toggleOffMax = 500 * time.Millisecond
	// partitionMax is above the time a Conn tries to reopen its stream
	// (about 0.7 s), so that some partitions make the server Reconnecting
	// and its next runtime rejoin the session.
	partitionMax = 3 * time.Second
	// apiTimeout bounds Disable, Enable and Reconnect; Disable may wait out
	// the drain timeout (5 s) on its own.
	apiTimeout = 30 * time.Second
)

// fault is one injected fault. start is taken before it acts; end when its
// effect stops: the action returned, or for a hang, when the calls sent
// into it have timed out.
type fault struct {
	seq    int
	server *member
	kind   faultKind
	start  time.Time
	end    time.Time // zero while it acts
	// back is when the server could serve again: the kill itself (the
	// respawn is the Manager's job), the restarted server listening, the
	// SIGCONT, the Enable, the Reconnect call. Recovery measured from it is
	// the Manager's share alone.
	back   time.Time
	detail string // what exactly was done: "SIGKILL pid 123", "held 1.2s"
	// outage is set by the tracker when a departure from Connected is
	// attributed to this fault.
	outage bool
}

// faultLog records every fault, per server, for the classification of
// calls (was a fault in flight?) and for recovery times.
type faultLog struct {
	mu       sync.Mutex // guards everything below and the faults' mutable fields
	all      []*fault
	byServer map[string][]*fault
}

func newFaultLog() *faultLog { return &faultLog{byServer: map[string][]*fault{}} }

func (l *faultLog) add(f *fault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f.seq = len(l.all) + 1
	l.all = append(l.all, f)
	l.byServer[f.server.name] = append(l.byServer[f.server.name], f)
}

func (l *faultLog) finish(f *fault, end, back time.Time, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f.end, f.back = end, back
	if detail != "" {
		f.detail = detail
	}
}

// overlapping returns the latest fault on server whose span, extended by
// slack, meets [from, to]; nil if none.
func (l *faultLog) overlapping(server string, from, to time.Time, slack time.Duration, kinds ...faultKind) *fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.byServer[server]
	for i := len(fs) - 1; i >= 0; i-- {
		f := fs[i]
		if len(kinds) > 0 && !hasKind(kinds, f.kind) {
			continue
		}
		if f.start.After(to) {
			continue
		}
		if f.end.IsZero() || !f.end.Add(slack).Before(from) {
			return f
		}
	}
	return nil
}

// latestBefore returns the last fault on server that started at or before
// t; nil if none.
func (l *faultLog) latestBefore(server string, t time.Time) *fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.byServer[server]
	for i := len(fs) - 1; i >= 0; i-- {
		if !fs[i].start.After(t) {
			return fs[i]
		}
	}
	return nil
}

func hasKind(kinds []faultKind, k faultKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// injector runs the fault schedule.
type injector struct {
	tb          testing.TB
	m           *client.Manager
	fleet       []*member
	rng         *rand.Rand // drawn from by run's goroutine alone
	log         *faultLog
	rep         *ledger
	clock       *clock
	callTimeout time.Duration
	wg          sync.WaitGroup // faults in progress
}

// run injects a fault every faultEveryMin..faultEveryMax until stop is
// closed, then waits for the faults in progress (hangs resumed, toggled
// servers enabled) and returns.
func (in *injector) run(stop <-chan struct{}) {
	defer in.wg.Wait()
	for {
		wait := faultEveryMin + time.Duration(in.rng.Int64N(int64(faultEveryMax-faultEveryMin)))
		timer := time.NewTimer(wait)
		select {
		case <-stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		k := in.drawKind()
		// Drawn here, on the schedule's goroutine, so that a seed replays
		// the same durations.
		hold := hangMin + time.Duration(in.rng.Int64N(int64(hangMax-hangMin)))
		switch k {
		case faultToggle:
			hold = time.Duration(in.rng.Int64N(int64(toggleOffMax)))
		case faultPartition:
			hold = time.Duration(in.rng.Int64N(int64(partitionMax)))
		}
		s := in.pick(k)
		if s == nil {
			continue
		}
		f := &fault{server: s, kind: k, start: time.Now()}
		in.log.add(f)
		in.wg.Go(func() {
			defer s.busy.Store(false)
			in.inject(f, hold)
		})
	}
}

func (in *injector) drawKind() faultKind {
	total := 0
	for _, w := range faultWeights {
		total += w.weight
	}
	n := in.rng.IntN(total)
	for _, w := range faultWeights {
		if n < w.weight {
			return w.kind
		}
		n -= w.weight
	}
	return faultWeights[0].kind
}

// pick chooses a server for a fault of kind k among those that support it,
// are not under another fault, and are Connected. Faults strike connected
// servers only: the soak is about servers that keep coming back, and a
// server killed again and again while it starts is a crash loop, which the
// budget is right to give up on.
func (in *injector) pick(k faultKind) *member {
	var cands []*member
	for _, s := range in.fleet {
		if !hasKind(s.faultKinds(), k) || s.busy.Load() {
			continue
		}
		if st, err := in.m.Status(s.name); err != nil || st.State != lifecycle.Connected {
			continue
		}
		cands = append(cands, s)
	}
	for len(cands) > 0 {
		i := in.rng.IntN(len(cands))
		if cands[i].busy.CompareAndSwap(false, true) {
			return cands[i]
		}
		cands = append(cands[:i], cands[i+1:]...)
	}
	return nil
}

// inject carries out f. A fault that cannot be carried out (no process
// found, an API error) is reported; it never stops the soak.
func (in *injector) inject(f *fault, hold time.Duration) {
	s := f.server
	var end, back time.Time
	detail := ""
	defer func() {
		now := time.Now()
		if end.IsZero() {
			end = now
		}
		if back.IsZero() {
			back = now
		}
		in.log.finish(f, end, back, detail)
	}()
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		in.rep.fail(failure{rule: ruleFault, server: s, fault: f, faultNote: "in flight", at: time.Now(),
			detail: msg, errText: msg})
	}
	switch f.kind {
	case faultKill:
		if s.inproc != nil {
			detail = fmt.Sprintf("killed %d in-process connection(s)", s.inproc.Kill(nil))
			return
		}
		pids, err := childrenWithEnv(markerEnv, s.name, "")
		if err != nil || len(pids) == 0 {
			detail = fmt.Sprintf("no child found to kill (%v)", err)
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		detail = fmt.Sprintf("SIGKILL pid %v", pids)
	case faultRestart:
		detail = "restarted on " + in.addr(s)
		tries, err := in.restart(s)
		if err != nil {
			fail("restart of %s failed %d times, the last: %v", s.name, tries, err)
		}
		if tries > 1 {
			detail += fmt.Sprintf(" (started %d times: the first did not listen in time)", tries)
		}
	case faultHang:
		resume, what := in.hang(s)
		if resume == nil {
			detail = what
			return
		}
		t := time.NewTimer(hold)
		<-t.C
		resume()
		back = time.Now()
		// A request sent into the hang is answered only if it is still
		// waiting; the others end with their own timeout, up to
		// callTimeout after the resume. Until then the hang's effects count
		// as in flight.
		end = time.Now().Add(in.callTimeout)
		detail = fmt.Sprintf("%s, held %v", what, hold.Round(time.Millisecond))
	case faultToggle:
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		if err := in.m.Disable(ctx, s.name); err != nil {
			fail("Disable(%s) = %v", s.name, err)
		}
		t := time.NewTimer(hold)
		<-t.C
		back = time.Now()
		if err := in.m.Enable(ctx, s.name); err != nil {
			fail("Enable(%s) = %v", s.name, err)
		}
		detail = fmt.Sprintf("off for %v", hold.Round(time.Millisecond))
	case faultCut:
		detail = fmt.Sprintf("cut %d connection(s)", s.cut())
	case faultPartition:
		s.proxy.Down()
		t := time.NewTimer(hold)
		<-t.C
		s.proxy.Up()
		back = time.Now()
		detail = fmt.Sprintf("unreachable for %v", hold.Round(time.Millisecond))
	case faultReconnect:
		back = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		if err := in.m.Reconnect(ctx, s.name); err != nil {
			fail("Reconnect(%s) = %v", s.name, err)
		}
	}
}

func (in *injector) addr(s *member) string {
	switch {
	case s.ts != nil:
		return s.ts.Addr()
	case s.http != nil:
		return s.http.Addr()
	}
	return "?"
}

// restart restarts an HTTP server. A node server that does not listen
// within its start timeout (30 s: seen on a machine at a load of 20 and
// more) is started again, up to restartTries in all: the fault is a
// restart, and the server must come back for the soak to judge the
// Manager rather than the machine. tries says how many starts it took.
func (in *injector) restart(s *member) (tries int, err error) {
	for tries = 1; ; tries++ {
		err = in.restartOnce(s)
		if err == nil || tries == restartTries {
			return tries, err
		}
	}
}

// restartTries bounds the starts of one restart fault.
const restartTries = 3

// restartOnce is one restart. The httpserver helpers report a failed
// start with t.Fatalf, which only the test goroutine may call; faultTB
// turns it into an error here.
func (in *injector) restartOnce(s *member) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(faultAbort)
			if !ok {
				panic(r)
			}
			err = a
		}
	}()
	tb := faultTB{in.tb}
	switch {
	case s.ts != nil:
		s.ts.Restart(tb)
	case s.http != nil:
		s.http.Restart(tb)
	}
	return nil
}

// hang makes s stop answering and returns how to resume it, or nil and why
// it could not.
func (in *injector) hang(s *member) (resume func(), what string) {
	switch {
	case s.gate != nil:
		s.gate.shut()
		return s.gate.open, "echo tool blocked"
	case s.http != nil:
		s.http.SetHang(true)
		return func() { s.http.SetHang(false) }, "requests held"
	}
	var (
		pids []int
		err  error
	)
	if s.ts != nil {
		_, port, _ := net.SplitHostPort(s.ts.Addr())
		pids, err = childrenWithEnv("PORT", port, "streamableHttp")
	} else {
		pids, err = childrenWithEnv(markerEnv, s.name, "")
	}
	if err != nil || len(pids) == 0 {
		return nil, fmt.Sprintf("no process found to stop (%v)", err)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	return func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}, "SIGSTOP pid " + fmt.Sprint(pids)
}

// faultAbort is a t.Fatalf from a helper running on a fault goroutine.
type faultAbort string

func (a faultAbort) Error() string { return string(a) }

// faultTB lets a helper that reports through testing.TB run off the test
// goroutine: Fatal and Fatalf panic with a faultAbort for the caller to
// recover, instead of calling runtime.Goexit on the wrong goroutine.
type faultTB struct{ testing.TB }

func (faultTB) Helper() {}

func (faultTB) Fatalf(format string, args ...any) { panic(faultAbort(fmt.Sprintf(format, args...))) }

func (faultTB) Fatal(args ...any) { panic(faultAbort(fmt.Sprint(args...))) }

// faultCounts counts faults by kind, in report order.
func (l *faultLog) counts() map[faultKind]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[faultKind]int{}
	for _, f := range l.all {
		out[f.kind]++
	}
	return out
}

// countOf counts the faults of kind on server.
func (l *faultLog) countOf(server string, kind faultKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.byServer[server] {
		if f.kind == kind {
			n++
		}
	}
	return n
}

// describe says what f was and when, relative to the soak's start.
func (l *faultLog) describe(f *fault, c *clock) string {
	if f == nil {
		return "none"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := fmt.Sprintf("#%d %s of %s at %s", f.seq, f.kind, f.server.name, c.rel(f.start))
	if f.detail != "" {
		s += " (" + f.detail + ")"
	}
	return s
}
