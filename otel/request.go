package otel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/redact"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// requestKey carries a request's requestState in its context, from
// RequestStart to RequestAttempt and RequestEnd.
type requestKey struct{}

// requestState is what the Observer keeps of one request.
type requestState struct {
	span  trace.Span
	start time.Time
	// What the Observer knew of the server as the request began: the
	// newest generation whose dial it had been told of (the Manager tells
	// of a dial right after installing the runtime, from the dialing
	// goroutine), and the state, which state changes tell a moment later.
	dialed     uint64
	state      lifecycle.State
	stateKnown bool
}

// RequestStart starts the request's CLIENT span, a child of the caller's,
// and injects its context into the request's params._meta.
func (o *Observer) RequestStart(ctx context.Context, r *client.Request) context.Context {
	rs := &requestState{start: time.Now()}
	if s := o.lookup(r.Server); s != nil {
		rs.dialed = s.dialed.Load()
		rs.state, rs.stateKnown = lifecycle.State(s.state.Load()), s.seen.Load()
	}
	var kv [5]attribute.KeyValue
	attrs := append(kv[:0], semconv.McpMethodNameKey.String(r.Method), ServerKey.String(r.Server))
	attrs = targetAttrs(attrs, r)
	if isResource(r.Method) {
		attrs = append(attrs, semconv.McpResourceURIKey.String(r.Name))
	}
	ctx, rs.span = o.tracer.Start(ctx, spanName(r),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(rs.start),
		trace.WithAttributes(attrs...))
	o.propagator.Inject(ctx, metaCarrier{r})
	return context.WithValue(ctx, requestKey{}, rs)
}

func isResource(method string) bool {
	switch method {
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return true
	}
	return false
}

// RequestAttempt records a wait for a (re)connect before the first attempt
// and a retry before every later one, as span events, and remembers the
// runtime for the session metric.
func (o *Observer) RequestAttempt(ctx context.Context, r *client.Request, attempt int, cause error) {
	if s := o.serverState(r.Server); r.Generation != 0 {
		if rt := s.runtime.Load(); rt == nil || rt.gen != r.Generation {
			s.runtime.Store(&runtimeInfo{gen: r.Generation, req: client.Request{
				Protocol: r.Protocol, Transport: r.Transport, Address: r.Address, Port: r.Port}})
		}
	}
	rs, ok := ctx.Value(requestKey{}).(*requestState)
	if !ok || !rs.span.IsRecording() {
		return
	}
	gen := GenerationKey.Int64(int64(r.Generation))
	switch {
	case attempt > 1:
		attrs := []attribute.KeyValue{AttemptKey.Int(attempt), gen}
		if cause != nil {
			attrs = append(attrs, failureType(cause), RetryCauseKey.String(redact.Text(cause.Error())))
		}
		rs.span.AddEvent(EventRetry, trace.WithAttributes(attrs...))
	case r.Generation != rs.dialed:
		// The runtime the first attempt went to was dialled after the
		// request began: it waited for it.
		rs.span.AddEvent(EventWait, trace.WithAttributes(
			StateKey.String(rs.waitedIn().String()),
			WaitDurationKey.Float64(time.Since(rs.start).Seconds()),
			gen))
	}
}

// waitedIn returns the state the server was in as a request began that
// had to wait for a runtime: as the state changes told, unless they had
// not told yet of the runtime's loss.
func (rs *requestState) waitedIn() lifecycle.State {
	switch {
	case rs.stateKnown && rs.state != lifecycle.Connected:
		return rs.state
	case rs.dialed == 0:
		return lifecycle.Connecting
	}
	return lifecycle.Reconnecting
}

// RequestEnd ends the request's span, with the runtime it last went to and
// how it ended, and records its duration.
func (o *Observer) RequestEnd(ctx context.Context, r *client.Request, outcome client.Outcome, err error) {
	rs, ok := ctx.Value(requestKey{}).(*requestState)
	if !ok {
		return
	}
	end := time.Now()
	var kv [16]attribute.KeyValue
	attrs := runtimeAttrs(kv[:0], r)
	attrs, desc := errorAttrs(attrs, outcome, err)

	if rs.span.IsRecording() {
		spanAttrs := attrs
		if r.Generation != 0 {
			spanAttrs = append(spanAttrs, GenerationKey.Int64(int64(r.Generation)), TransportKey.String(r.Transport))
		}
		if r.SessionID != "" {
			spanAttrs = append(spanAttrs, semconv.McpSessionIDKey.String(r.SessionID))
		}
		rs.span.SetAttributes(spanAttrs...)
		if outcome != client.OutcomeOK {
			// The description is an error's text, or the server's: a URL
			// in it (a transport's, a server's) keeps no secret.
			rs.span.SetStatus(codes.Error, redact.Text(desc))
		}
	}
	rs.span.End(trace.WithTimestamp(end))

	if o.opDuration.Enabled(ctx) {
		// The span has taken its copy: the metric's attributes may reuse
		// the array. Record adds mcp.method.name; the session ID,
		// generation and resource URI stay out, for cardinality.
		attrs = targetAttrs(append(attrs, ServerKey.String(r.Server)), r)
		o.opDuration.Record(ctx, end.Sub(rs.start).Seconds(), mcpconv.MethodNameAttr(r.Method), attrs...)
	}
}

// metaCarrier writes trace context into a request's Meta, the entries the
// Manager sends in params._meta.
type metaCarrier struct{ r *client.Request }

func (c metaCarrier) Get(key string) string {
	v, _ := c.r.Meta[key].(string)
	return v
}

func (c metaCarrier) Set(key, value string) {
	if c.r.Meta == nil {
		c.r.Meta = make(map[string]any, 2)
	}
	c.r.Meta[key] = value
}

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c.r.Meta))
	for k := range c.r.Meta {
		keys = append(keys, k)
	}
	return keys
}
