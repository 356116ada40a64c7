package otel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/mcpfleet/mcpfleet/otel"

// durationBuckets are the bucket boundaries, in seconds, the MCP
// conventions give their duration histograms; the lifecycle histograms
// use them too.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Observer is a client.Observer that records spans and metrics with
// OpenTelemetry (see the package documentation for what it records). Make
// one with New; it is safe for concurrent use, and may serve several
// Managers as long as their server names do not clash.
type Observer struct {
	// Set at creation, read-only.
	tracer        trace.Tracer
	propagator    propagation.TextMapPropagator
	opDuration    mcpconv.ClientOperationDuration
	sessionDur    mcpconv.ClientSessionDuration
	reconnects    metric.Int64Counter
	recovery      metric.Float64Histogram
	dialDuration  metric.Float64Histogram
	registration  metric.Registration
	serversGauges metric.Int64ObservableUpDownCounter

	mu      sync.RWMutex // guards servers (the map; each entry has its own synchronization)
	servers map[string]*serverState
}

var _ client.Observer = (*Observer)(nil)

// New returns an Observer that records with the providers the options set
// (the global ones by default). Close unregisters its callback from the
// MeterProvider when it is no longer used.
func New(opts ...Option) (*Observer, error) {
	c := newConfig(opts)
	o := &Observer{
		tracer: c.tracerProvider.Tracer(ScopeName,
			trace.WithSchemaURL(semconv.SchemaURL)),
		propagator: c.propagators,
		servers:    map[string]*serverState{},
	}
	meter := c.meterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	buckets := metric.WithExplicitBucketBoundaries(durationBuckets...)
	var errs [7]error
	o.opDuration, errs[0] = mcpconv.NewClientOperationDuration(meter, buckets)
	o.sessionDur, errs[1] = mcpconv.NewClientSessionDuration(meter, buckets)
	o.reconnects, errs[2] = meter.Int64Counter("mcpfleet.server.reconnects",
		metric.WithUnit("{reconnect}"),
		metric.WithDescription("Runtimes lost: a server went from Connected to Reconnecting."))
	o.recovery, errs[3] = meter.Float64Histogram("mcpfleet.server.recovery.duration",
		metric.WithUnit("s"), buckets,
		metric.WithDescription("From losing a server's runtime to the next one connecting."))
	o.dialDuration, errs[4] = meter.Float64Histogram("mcpfleet.server.dial.duration",
		metric.WithUnit("s"), buckets,
		metric.WithDescription("The duration of a connection attempt to a server, handshake included."))
	o.serversGauges, errs[5] = meter.Int64ObservableUpDownCounter("mcpfleet.server.count",
		metric.WithUnit("{server}"),
		metric.WithDescription("The servers in the Manager, by lifecycle state."))
	if errs[5] == nil {
		o.registration, errs[6] = meter.RegisterCallback(o.observeServers, o.serversGauges)
	}
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return o, nil
}

// Close unregisters the Observer's callback from the MeterProvider: the
// servers-by-state counts are no longer reported. The Observer still
// records everything else.
func (o *Observer) Close() error {
	if o.registration == nil {
		return nil
	}
	return o.registration.Unregister()
}

// serverState is what the Observer keeps of one server, from its state
// changes (and the runtime its requests last told of).
type serverState struct {
	// Written by StateChange, read by requests and the gauge callback.
	seen  atomic.Bool  // a state change was seen: the state is known
	state atomic.Int32 // lifecycle.State

	// dialed is the newest generation a successful Dial told of; written
	// by Dial, read by requests.
	dialed atomic.Uint64

	// Written by RequestAttempt when a request reaches a new generation,
	// read by StateChange as the session ends.
	runtime atomic.Pointer[runtimeInfo]

	// Only StateChange touches these; state changes are delivered from
	// one goroutine, in order.
	sessionStart, lostAt int64 // unix nanoseconds; 0 if none
	sessionGen           uint64
}

// runtimeInfo is what a request told of a runtime: the session metric's
// attributes.
type runtimeInfo struct {
	gen uint64
	req client.Request // its runtime fields
}

// lookup returns the state of server, nil if none is known.
func (o *Observer) lookup(server string) *serverState {
	o.mu.RLock()
	s := o.servers[server]
	o.mu.RUnlock()
	return s
}

// serverState returns the state of server, making it if need be.
func (o *Observer) serverState(server string) *serverState {
	if s := o.lookup(server); s != nil {
		return s
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.servers[server]
	if s == nil {
		s = &serverState{}
		o.servers[server] = s
	}
	return s
}

// observeServers reports how many servers are in each state, every state
// included so that one emptied reads zero rather than stale.
func (o *Observer) observeServers(_ context.Context, obs metric.Observer) error {
	counts := make([]int64, len(stateAttrs))
	o.mu.RLock()
	for _, s := range o.servers {
		if st := lifecycle.State(s.state.Load()); s.seen.Load() && st.Valid() {
			counts[st]++
		}
	}
	o.mu.RUnlock()
	for st, n := range counts {
		if lifecycle.State(st) != lifecycle.Closed { // a closed server is gone
			obs.ObserveInt64(o.serversGauges, n, stateAttrs[st])
		}
	}
	return nil
}

// stateAttrs are the attribute sets of the servers-by-state counts,
// indexed by state.
var stateAttrs = func() []metric.ObserveOption {
	out := make([]metric.ObserveOption, len(lifecycle.States()))
	for _, s := range lifecycle.States() {
		out[s] = metric.WithAttributes(StateKey.String(s.String()))
	}
	return out
}()
