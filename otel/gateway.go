package otel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"

	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Attributes of the served side's metrics.
const (
	// IdentityKey is the identity a request or session is of (a Team's
	// member; empty for a gateway served alone).
	IdentityKey = attribute.Key("mcpfleet.identity")
	// OutcomeKey is how a request to a server ended (gateway.Outcome…).
	OutcomeKey = attribute.Key("mcpfleet.outcome")
	// PolicyRuleKey is the rule of a policy that decided.
	PolicyRuleKey = attribute.Key("mcpfleet.policy.rule")
	// PolicyDecisionKey is "allowed" or "denied".
	PolicyDecisionKey = attribute.Key("mcpfleet.policy.decision")
	// AuthReasonKey is why a request was refused 401 (gateway.AuthInfo).
	AuthReasonKey = attribute.Key("mcpfleet.auth.reason")
	// ModernKey marks a 2026-07-28 client's session, which has no MCP
	// session.
	ModernKey = attribute.Key("mcpfleet.session.modern")
)

// GatewayObserver is a gateway.Observer that records what the served side
// of a gateway (or a Team's gateways) does as OpenTelemetry metrics:
//
//   - mcp.server.operation.duration (the MCP conventions' histogram, s):
//     every request to a server (tools/call, prompts/get,
//     resources/read), with mcp.method.name, gen_ai.tool.name or
//     gen_ai.prompt.name, error.type (the outcome, when it is not "ok"),
//     mcpfleet.identity and mcpfleet.server;
//   - mcp.server.session.duration (histogram, s): every downstream
//     session, at its end, with mcpfleet.identity;
//   - mcpfleet.gateway.sessions (UpDownCounter): the sessions open, by
//     mcpfleet.identity;
//   - mcpfleet.gateway.calls (Counter): requests by mcpfleet.identity,
//     mcpfleet.server, mcp.method.name, gen_ai.tool.name and
//     mcpfleet.outcome, refused ones included ("denied", "refused");
//   - mcpfleet.gateway.policy.decisions (Counter): a policy's decisions by
//     mcpfleet.identity, mcpfleet.server, mcpfleet.policy.rule and
//     mcpfleet.policy.decision;
//   - mcpfleet.gateway.auth.refused (Counter): requests refused with 401,
//     by mcpfleet.auth.reason;
//   - mcpfleet.gateway.upstream.state (Gauge, observed): for each server
//     and each lifecycle state, how many of the fleets served have that
//     server in that state (one fleet for a gateway alone: 1 in its state,
//     0 in the others; a Team: one per identity whose gateway is up).
//
// mcpfleet.identity has as many values as the team has people: keep that
// in mind for a backend that prices series.
type GatewayObserver struct {
	gateway.NopObserver

	// Set at creation, read-only.
	opDuration   mcpconv.ServerOperationDuration
	sessionDur   mcpconv.ServerSessionDuration
	sessions     metric.Int64UpDownCounter
	calls        metric.Int64Counter
	decisions    metric.Int64Counter
	refused      metric.Int64Counter
	upstream     metric.Int64ObservableGauge
	registration metric.Registration

	mu      sync.Mutex // guards states and servers
	states  map[upstreamKey]lifecycle.State
	servers map[string]int // servers known, with how many fleets have them
}

type upstreamKey struct{ identity, server string }

var _ gateway.Observer = (*GatewayObserver)(nil)

// NewGatewayObserver returns a GatewayObserver that records with the meter
// provider the options set (the global one by default); pass it to a
// gateway with gateway.WithObserver (and to a Team in its
// TeamConfig.Observer and Options). Close unregisters its gauge's
// callback.
func NewGatewayObserver(opts ...Option) (*GatewayObserver, error) {
	c := newConfig(opts)
	meter := c.meterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	buckets := metric.WithExplicitBucketBoundaries(durationBuckets...)
	o := &GatewayObserver{states: map[upstreamKey]lifecycle.State{}, servers: map[string]int{}}
	var errs [8]error
	o.opDuration, errs[0] = mcpconv.NewServerOperationDuration(meter, buckets)
	o.sessionDur, errs[1] = mcpconv.NewServerSessionDuration(meter, buckets)
	o.sessions, errs[2] = meter.Int64UpDownCounter("mcpfleet.gateway.sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Downstream sessions open."))
	o.calls, errs[3] = meter.Int64Counter("mcpfleet.gateway.calls", metric.WithUnit("{request}"),
		metric.WithDescription("Requests to the fleet's servers, by identity, server, tool and outcome."))
	o.decisions, errs[4] = meter.Int64Counter("mcpfleet.gateway.policy.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions of a policy on requests, by the rule that made them."))
	o.refused, errs[5] = meter.Int64Counter("mcpfleet.gateway.auth.refused", metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused for want of a good credential."))
	o.upstream, errs[6] = meter.Int64ObservableGauge("mcpfleet.gateway.upstream.state", metric.WithUnit("{fleet}"),
		metric.WithDescription("The connection state of each server of the fleets served: how many fleets have it in each state."))
	if errs[6] == nil {
		o.registration, errs[7] = meter.RegisterCallback(o.observe, o.upstream)
	}
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return o, nil
}

// Close unregisters the gauge's callback.
func (o *GatewayObserver) Close() error {
	if o.registration == nil {
		return nil
	}
	return o.registration.Unregister()
}

// SessionStarted counts a session open.
func (o *GatewayObserver) SessionStarted(s gateway.SessionInfo) {
	o.sessions.Add(context.Background(), 1, metric.WithAttributes(IdentityKey.String(s.Identity)))
}

// SessionEnded counts a session closed and records how long it lasted.
func (o *GatewayObserver) SessionEnded(s gateway.SessionInfo) {
	ctx := context.Background()
	id := IdentityKey.String(s.Identity)
	o.sessions.Add(ctx, -1, metric.WithAttributes(id))
	o.sessionDur.Record(ctx, s.Duration.Seconds(), id, ModernKey.Bool(s.Modern))
}

// Call counts a request and records its duration.
func (o *GatewayObserver) Call(c gateway.CallInfo) {
	ctx := context.Background()
	attrs := []attribute.KeyValue{IdentityKey.String(c.Identity), ServerKey.String(c.Server)}
	switch c.Method {
	case "tools/call":
		attrs = append(attrs, semconv.GenAIToolName(c.Name))
	case "prompts/get":
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", c.Name))
	}
	o.calls.Add(ctx, 1, metric.WithAttributes(append(attrs, semconv.McpMethodNameKey.String(c.Method), OutcomeKey.String(c.Outcome))...))
	if c.Outcome != gateway.OutcomeDenied && c.Outcome != gateway.OutcomeRefused {
		if c.Outcome != gateway.OutcomeOK {
			attrs = append(attrs, semconv.ErrorTypeKey.String(c.Outcome))
		}
		o.opDuration.Record(ctx, c.Duration.Seconds(), mcpconv.MethodNameAttr(c.Method), attrs...)
	}
}

// PolicyDecision counts a decision.
func (o *GatewayObserver) PolicyDecision(p gateway.PolicyInfo) {
	d := "denied"
	if p.Decision.Allowed {
		d = "allowed"
	}
	o.decisions.Add(context.Background(), 1, metric.WithAttributes(IdentityKey.String(p.Identity),
		ServerKey.String(p.Server), PolicyRuleKey.String(p.Decision.Rule), PolicyDecisionKey.String(d)))
}

// AuthRefused counts a request refused with 401.
func (o *GatewayObserver) AuthRefused(a gateway.AuthInfo) {
	o.refused.Add(context.Background(), 1, metric.WithAttributes(AuthReasonKey.String(a.Reason)))
}

// UpstreamState keeps the state of a fleet's server for the gauge.
func (o *GatewayObserver) UpstreamState(u gateway.UpstreamInfo) {
	k := upstreamKey{u.Identity, u.Server}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, known := o.states[k]
	switch {
	case u.Present:
		o.states[k] = u.State
		if !known {
			o.servers[u.Server]++
		}
	case known:
		delete(o.states, k)
		if o.servers[u.Server]--; o.servers[u.Server] <= 0 {
			delete(o.servers, u.Server)
		}
	}
}

// observe reports, for each server known, how many fleets have it in each
// state, every state but Closed reported, zero included.
func (o *GatewayObserver) observe(_ context.Context, obs metric.Observer) error {
	o.mu.Lock()
	counts := map[string]map[lifecycle.State]int64{}
	for srv := range o.servers {
		counts[srv] = map[lifecycle.State]int64{}
	}
	for k, st := range o.states {
		counts[k.server][st]++
	}
	o.mu.Unlock()
	for srv, byState := range counts {
		for _, st := range lifecycle.States() {
			if st == lifecycle.Closed {
				continue
			}
			obs.ObserveInt64(o.upstream, byState[st], metric.WithAttributes(ServerKey.String(srv), StateKey.String(st.String())))
		}
	}
	return nil
}
