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

// newBucket returns a token bucket of r a second in bursts of twice as
// many, full; nil if the limit is off.
func newBucket(r float64) *rate.Limiter {
	if !on(r) {
		return nil
	}
	return rate.NewLimiter(rate.Limit(r), burst(r))
}

// requestGate bounds the requests a server has open with the host and how
// fast it makes them, under one configuration of its slot. A request
// admitted under a configuration is released to the same one.
type requestGate struct {
	max    int64         // requests open at once; 0: no limit
	bucket *rate.Limiter // nil: no rate limit
	limits Limits        // for the messages
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
	if g.bucket != nil && !g.bucket.AllowN(now, 1) {
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
