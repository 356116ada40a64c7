//go:build linux

package soak

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// attributionWindow is how long after a fault's end a server's departure
// from Connected is still blamed on it: a fault no stream reports (an HTTP
// restart under a stateless server, a hang) is found by the next calls,
// whose timeouts take up to three call timeouts to trip the health check.
const attributionWindow = 15 * time.Second

// outage is a server's time away from Connected, from the fault that
// caused it (or from the departure itself, for an unprovoked one).
type outage struct {
	start time.Time
	fault *fault // nil for an unprovoked departure
	kind  faultKind
	// failed counts the dials that failed during the outage (EventRetry
	// and transitions carrying a cause), lastErr is the last one's cause:
	// what a slow recovery spent its time on.
	failed  int
	lastErr error
}

// unprovoked is the kind of an outage no fault explains.
const unprovoked faultKind = "unprovoked"

// recovery is one outage that ended in Connected.
type recovery struct {
	server string
	kind   faultKind
	fault  *fault
	took   time.Duration
	failed int   // dials that failed on the way
	last   error // the last of their causes
	// sinceBack is the part of took after the server could serve again
	// (fault.back): the Manager's own share.
	sinceBack time.Duration
	at        time.Time
}

// departure is a server leaving Connected with no fault to blame.
type departure struct {
	server string
	at     time.Time
	to     lifecycle.State
	cause  error
}

// tracker follows the event stream: recovery times (fault → Connected
// again, per server), unprovoked departures, PermanentlyFailed entries,
// dropped events.
type tracker struct {
	log   *faultLog
	led   *ledger
	clock *clock
	fleet []*member
	done  chan struct{}

	mu          sync.Mutex // guards everything below
	open        map[string]*outage
	recoveries  []recovery
	unprovoked  []departure
	permFailed  int
	dropped     uint64
	closeErrors int
	closeErr    string // the first close error's text
	transitions int
	// recent keeps each server's last events, for a failure that has to
	// say what a server was doing.
	recent map[string][]string
}

// recentEvents is how many events recent keeps per server.
const recentEvents = 8

func newTracker(log *faultLog, led *ledger, c *clock, fleet []*member) *tracker {
	return &tracker{log: log, led: led, clock: c, fleet: fleet, done: make(chan struct{}), open: map[string]*outage{},
		recent: map[string][]string{}}
}

// run consumes events until the channel is closed (by Close).
func (tr *tracker) run(events <-chan client.Event) {
	defer close(tr.done)
	for e := range events {
		tr.handle(e)
	}
}

func (tr *tracker) handle(e client.Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.dropped += e.Dropped
	if e.Kind == client.EventState || e.Kind == client.EventRetry || e.Kind == client.EventCloseError {
		line := fmt.Sprintf("%s %s %s->%s gen %d attempt %d", tr.clock.rel(e.Time), e.Kind, e.From, e.To, e.Generation, e.Attempt)
		if !e.NextRetry.IsZero() {
			line += fmt.Sprintf(" next retry in %v", e.NextRetry.Sub(e.Time).Round(time.Millisecond))
		}
		if e.Err != nil {
			line += ": " + e.Err.Error()
		}
		rs := append(tr.recent[e.Server], line)
		if len(rs) > recentEvents {
			rs = rs[len(rs)-recentEvents:]
		}
		tr.recent[e.Server] = rs
	}
	switch e.Kind {
	case client.EventCloseError:
		tr.closeErrors++
		if tr.closeErr == "" && e.Err != nil {
			tr.closeErr = e.Server + ": " + e.Err.Error()
		}
		return
	case client.EventRetry:
		if o := tr.open[e.Server]; o != nil {
			o.failed++
			o.lastErr = e.Err
		}
		return
	case client.EventState:
	default:
		return
	}
	tr.transitions++
	name := e.Server
	switch {
	case e.To == lifecycle.Disabling || e.To == lifecycle.Disabled || e.To == lifecycle.Closed:
		// Switched off on purpose: not an outage. Enable opens one.
		delete(tr.open, name)
	case e.From == lifecycle.Disabled:
		tr.open[name] = &outage{start: e.Time, fault: tr.log.latestBefore(name, e.Time), kind: faultToggle}
	case e.From == lifecycle.Connected:
		if f := tr.blame(name, e.Time); f != nil {
			tr.open[name] = &outage{start: f.start, fault: f, kind: f.kind}
		} else {
			tr.open[name] = &outage{start: e.Time, kind: unprovoked}
			tr.unprovoked = append(tr.unprovoked, departure{server: name, at: e.Time, to: e.To, cause: e.Err})
		}
	}
	if e.To == lifecycle.PermanentlyFailed {
		tr.permFailed++
		s := tr.member(name)
		f := tr.log.latestBefore(name, e.Time)
		tr.led.fail(failure{rule: rulePermFailed, server: s, fault: f, faultNote: "before", at: e.Time,
			detail: fmt.Sprintf("%s -> %s at %s, generation %d, attempt %d, cause: %v\n      its last events:\n        %s",
				e.From, e.To, tr.clock.rel(e.Time), e.Generation, e.Attempt, e.Err, strings.Join(tr.recent[name], "\n        ")),
			errText: fmt.Sprint(e.Err)})
	}
	if e.To == lifecycle.Connected {
		if o := tr.open[name]; o != nil {
			delete(tr.open, name)
			rc := recovery{server: name, kind: o.kind, fault: o.fault, took: e.Time.Sub(o.start), at: e.Time,
				failed: o.failed, last: o.lastErr}
			rc.sinceBack = rc.took
			if o.fault != nil && o.kind != faultToggle {
				tr.log.mu.Lock()
				back := o.fault.back
				tr.log.mu.Unlock()
				// A zero back is a fault still under way: the Manager
				// replaced a hung server before the hang ended, and took no
				// time after the server was back.
				rc.sinceBack = 0
				if !back.IsZero() {
					rc.sinceBack = max(0, e.Time.Sub(back))
				}
			}
			tr.recoveries = append(tr.recoveries, rc)
		}
	}
}

// history returns a server's last events, one per line, indented for a
// failure report.
func (tr *tracker) history(server string) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	rs := tr.recent[server]
	if len(rs) == 0 {
		return "        (no events)"
	}
	return "        " + strings.Join(rs, "\n        ")
}

// blame returns the fault a departure at t is attributed to, and marks it
// as having caused an outage; nil if none explains it.
func (tr *tracker) blame(server string, t time.Time) *fault {
	f := tr.log.latestBefore(server, t)
	if f == nil {
		return nil
	}
	tr.log.mu.Lock()
	defer tr.log.mu.Unlock()
	if !f.end.IsZero() && t.Sub(f.end) > attributionWindow {
		return nil
	}
	f.outage = true
	return f
}

func (tr *tracker) member(name string) *member {
	for _, s := range tr.fleet {
		if s.name == name {
			return s
		}
	}
	return nil
}

// recoveryStats summarizes the recoveries of one kind of outage.
type recoveryStats struct {
	n                int
	median, p95, max time.Duration
	worst            recovery
	// maxBack is the worst recovery counted from the server being back.
	maxBack   time.Duration
	worstBack recovery
}

func statsOf(rs []recovery) recoveryStats {
	if len(rs) == 0 {
		return recoveryStats{}
	}
	ds := make([]time.Duration, len(rs))
	st := recoveryStats{n: len(rs)}
	for i, r := range rs {
		ds[i] = r.took
		if r.took >= st.max {
			st.max, st.worst = r.took, r
		}
		if r.sinceBack >= st.maxBack {
			st.maxBack, st.worstBack = r.sinceBack, r
		}
	}
	slices.Sort(ds)
	st.median = ds[len(ds)/2]
	st.p95 = ds[min(len(ds)-1, len(ds)*95/100)]
	return st
}

// snapshot returns copies of what the report needs.
func (tr *tracker) snapshot() (recs []recovery, unprov []departure, open map[string]outage) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	open = map[string]outage{}
	for k, v := range tr.open {
		open[k] = *v
	}
	return slices.Clone(tr.recoveries), slices.Clone(tr.unprovoked), open
}
