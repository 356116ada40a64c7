package client

// The notification budget and the limits on a server's requests of the host:
// what enforces Limits.NotificationRate, MaxServerRequests and
// ServerRequestRate. (The reconnect budget is another thing: machine.Budget.)

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/time/rate"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Errors of the limits a server is held to.
var (
	// ErrNotificationRate: the server sent notifications faster than its
	// Limits.NotificationRate; the excess was dropped. It is the cause
	// carried by an EventNotificationsDropped.
	ErrNotificationRate = errors.New("over the notification rate")
	// ErrServerRequestLimit: the server asked something of the host
	// (sampling, elicitation, roots) beyond its Limits.MaxServerRequests or
	// ServerRequestRate. The server got a JSON-RPC error with this message,
	// naming the limit; the host's handler never saw the request, and the
	// host learns of it from an EventServerRequestRefused.
	ErrServerRequestLimit = errors.New("over the server request limit")
)

// reportEvery is the least time between two events that report what one
// limit of one server dropped or refused: however fast a server breaks a
// limit, the events saying so stay this rare.
const reportEvery = time.Second

// The requests a server may make of the host, in the order of the
// per-method counts of a slot.
const (
	reqSampling = iota
	reqElicitation
	reqRoots
	numServerRequests
)

var serverRequestMethods = [numServerRequests]string{
	reqSampling:    string(mcp.MethodSamplingCreateMessage),
	reqElicitation: string(mcp.MethodElicitationCreate),
	reqRoots:       string(mcp.MethodListRoots),
}

// burst is the bucket of a rate: twice the rate, at least one.
func burst(r float64) int {
	return int(math.Max(1, math.Min(math.Ceil(2*r), 1<<30)))
}

// bucket is a token bucket of r a second in bursts of twice as many,
// made full on its first use: a bucket nobody drew from is full whenever
// it is first drawn from, so it is the same bucket as one made with its
// configuration, and a server that never sends a notification or a
// request does not carry one (80 bytes each). A nil bucket, or one whose
// rate is off, admits everything.
type bucket struct {
	r float64
	b atomic.Pointer[rate.Limiter]
}

// newBucket returns the bucket of rate r; nil if the limit is off.
func newBucket(r float64) *bucket {
	if !on(r) {
		return nil
	}
	return &bucket{r: r}
}

// allow spends one token at now, or reports that there is none.
func (k *bucket) allow(now time.Time) bool {
	if k == nil || !on(k.r) {
		return true
	}
	b := k.b.Load()
	if b == nil {
		k.b.CompareAndSwap(nil, rate.NewLimiter(rate.Limit(k.r), burst(k.r)))
		b = k.b.Load()
	}
	return b.AllowN(now, 1)
}

// requestGate bounds the requests a server has open with the host and how
// fast it makes them, under one configuration of its slot. A request
// admitted under a configuration is released to the same one.
type requestGate struct {
	max    int64   // requests open at once; 0: no limit
	bucket *bucket // nil: no rate limit
	limits Limits  // for the messages
	open   atomic.Int64
}

func newRequestGate(l Limits) *requestGate {
	g := &requestGate{bucket: newBucket(l.ServerRequestRate), limits: l}
	if on(l.MaxServerRequests) {
		g.max = int64(l.MaxServerRequests)
	}
	return g
}

// admit takes a place for one request, or says which limit it is over. A
// request refused for want of a place spends none of the rate.
func (g *requestGate) admit(now time.Time) error {
	if g.max > 0 {
		for {
			n := g.open.Load()
			if n >= g.max {
				return fmt.Errorf("%w: %d requests already open with the host (limits.maxServerRequests = %d)",
					ErrServerRequestLimit, n, g.max)
			}
			if g.open.CompareAndSwap(n, n+1) {
				break
			}
		}
	}
	if !g.bucket.allow(now) {
		g.release()
		r := g.limits.ServerRequestRate
		return fmt.Errorf("%w: more than %g requests a second (limits.serverRequestRate = %g, in bursts of %d)",
			ErrServerRequestLimit, r, r, burst(r))
	}
	return nil
}

// release gives back the place of an admitted request.
func (g *requestGate) release() {
	if g.max > 0 {
		g.open.Add(-1)
	}
}

// notificationRateError is the cause of an EventNotificationsDropped.
func notificationRateError(l Limits) error {
	r := l.NotificationRate
	return fmt.Errorf("%w: %g a second (limits.notificationRate = %g, in bursts of %d)",
		ErrNotificationRate, r, r, burst(r))
}

// tally counts what one limit of a slot dropped or refused, for the slot's
// status and for the events that report it (slot.report). It has its own
// synchronization: the counts are atomic, and at most one report goroutine
// runs at a time, the one that set running.
type tally struct {
	total   atomic.Uint64 // ever, for ServerStatus
	pending atomic.Uint64 // since the last event
	lastErr atomic.Pointer[error]
	running atomic.Bool
	// last is when the last event was emitted; only the report goroutine
	// that holds running touches it.
	last time.Time
}

// add counts one, with its error if it has one of its own.
func (t *tally) add(err error) {
	t.total.Add(1)
	t.pending.Add(1)
	if err != nil {
		e := err // escapes only on this path: a drop allocates nothing
		t.lastErr.Store(&e)
	}
}

// claim reports whether the caller is to start the report goroutine.
func (t *tally) claim() bool {
	return !t.running.Load() && t.running.CompareAndSwap(false, true)
}

// err returns the last error added, if any.
func (t *tally) err() error {
	if p := t.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// The methods below write only the slot's tallies (atomics, and the report
// goroutine's own) and read the rest under the slot's lock.

// allowNotification spends one notification of the budget, or counts it
// as dropped and reports it. It runs on the transport's goroutine for every
// notification: it never blocks, and allocates nothing (but the bucket, on
// the first).
func (s *slot) allowNotification() bool {
	if s.config().notes.allow(s.m.opts.clock.Now()) {
		return true
	}
	s.tallied(&s.more().dropped, Event{Kind: EventNotificationsDropped}, nil)
	return false
}

// admitRequest takes a place in g for a request of the host by the server
// (method: one of req…), or refuses it: the error, naming the server,
// the method and the limit, goes back to the server, and is counted and
// reported. An admitted request is released to g.
func (s *slot) admitRequest(g *requestGate, method int) error {
	err := g.admit(s.m.opts.clock.Now())
	if err == nil {
		return nil
	}
	name := serverRequestMethods[method]
	err = &ServerError{Server: s.name, Op: name, Err: err}
	s.tallied(&s.more().refused[method], Event{Kind: EventServerRequestRefused, Method: name}, err)
	return err
}

// tallied counts one in t and makes sure a report goroutine will tell the
// host: e is the event to report with, its Count filled in. No goroutine is
// started for a closed slot, so that Close, which waits for the manager's
// goroutines after closing every slot, never waits for one started late.
func (s *slot) tallied(t *tally, e Event, err error) {
	t.add(err)
	if !t.claim() {
		return // the running report will see it
	}
	s.mu.Lock()
	if s.state == lifecycle.Closed {
		s.mu.Unlock()
		t.running.Store(false)
		return
	}
	s.m.wg.Add(1)
	s.mu.Unlock()
	go s.report(t, e)
}

// report emits e with what t counted since its last event, and goes on
// while more comes, at most one event every reportEvery: the first at once,
// the rest summed up. A report of dropped notifications also starts a
// catalog refresh that a dropped list_changed left pending, so that no
// change of the server's lists is lost to the budget for longer than that.
// The manager's log gets one record per event, never one per drop.
func (s *slot) report(t *tally, e Event) {
	defer s.m.wg.Done()
	clock := s.m.opts.clock
	for {
		if !t.last.IsZero() {
			if wait := t.last.Add(reportEvery).Sub(clock.Now()); wait > 0 {
				c, stop := clock.NewTimer(wait)
				select {
				case <-c:
				case <-s.m.ctx.Done():
					stop()
					t.running.Store(false)
					return
				}
			}
		}
		n := t.pending.Swap(0)
		if e.Kind == EventNotificationsDropped {
			e.Err = &ServerError{Server: s.name, Op: "notifications", Err: notificationRateError(s.config().limits)}
		} else {
			e.Err = t.err()
		}
		// The record is written before the event is queued, so that whoever
		// sees the event finds the record already there.
		if n > 0 {
			s.m.opts.logger.Warn("mcpfleet: a server is over its limits", "server", s.name,
				"event", e.Kind.String(), "count", n, "error", e.Err)
		}
		s.mu.Lock()
		closed := s.state == lifecycle.Closed
		if n > 0 && !closed {
			e.Count = n
			s.emitLocked(e)
		}
		if l := s.lease; l != nil && e.Kind == EventNotificationsDropped {
			l.refreshIfDirty()
		}
		s.mu.Unlock()
		t.last = clock.Now()
		t.running.Store(false)
		if closed || t.pending.Load() == 0 || !t.claim() {
			return
		}
	}
}
