package client

import (
	"context"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Observer sees what the Manager does, for metrics and traces, without
// the core depending on any telemetry library (package otel implements one
// for OpenTelemetry, in its own module). Set it with WithObserver.
//
// The request methods run on the caller's goroutine, and the others where
// the change happens, never under a lock of the Manager's: they must be
// quick, must not block, and must not call back into the Manager.
//
// Interceptors (WithInterceptor) run outside it: the Observer sees the
// requests that reach the servers, as interceptors rewrote them, and not
// the ones they refused or answered themselves; their time (an approval
// prompt) is not in a request's duration.
type Observer interface {
	// RequestStart is called as a request begins, before it waits for the
	// server. The context it returns is the request's from then on (a
	// tracer puts its span there); what it adds to r.Meta goes out in the
	// request's params._meta (W3C trace context: traceparent, tracestate).
	RequestStart(ctx context.Context, r *Request) context.Context
	// RequestAttempt is called each time the request goes to a runtime,
	// with r's runtime fields filled in. attempt counts from 1; a later
	// attempt comes after a transparent resend or replay, and cause says
	// why the one before did not do.
	RequestAttempt(ctx context.Context, r *Request, attempt int, cause error)
	// RequestEnd is called once, as the request ends.
	RequestEnd(ctx context.Context, r *Request, outcome Outcome, err error)
	// StateChange is called after a server's state changed.
	StateChange(server string, from, to lifecycle.State, generation uint64, cause error)
	// Dial is called as a connection attempt ends; generation is the one
	// the runtime got if err is nil.
	Dial(server string, generation uint64, took time.Duration, err error)
}

// Request describes one request for an Observer.
type Request struct {
	Server string
	// Method is the MCP method: "tools/call", "prompts/get",
	// "resources/read", ...
	Method string
	// Name is what the method is about: the tool's or the prompt's name on
	// the server, or the resource's URI.
	Name string

	// The runtime of the latest attempt: zero before the first.
	Generation uint64
	Protocol   string // the MCP protocol version it speaks
	SessionID  string // the MCP session, where the transport has one
	Transport  string // "stdio", "http", "sse" or "inprocess"
	// Address and Port are the HTTP server's host and port.
	Address string
	Port    int

	// Meta holds entries for the request's params._meta. An Observer
	// that propagates trace context sets them in RequestStart.
	Meta map[string]any
}

// Outcome is how a request ended, in the classes Stats counts.
type Outcome int

const (
	// OutcomeOK: the server answered with a result.
	OutcomeOK Outcome = iota
	// OutcomeToolError: the tool ran and its result has isError set.
	OutcomeToolError
	// OutcomeServerError: the server answered with a JSON-RPC error (or
	// a call run as a task failed, or could not be one: ErrTaskFailed,
	// ErrTaskUnsupported).
	OutcomeServerError
	// OutcomeUnknown: the connection was lost with the request in flight
	// (ErrOutcomeUnknown), or a call run as a task lost its task
	// (ErrTaskLost).
	OutcomeUnknown
	// OutcomeUnavailable: the server was not there to ask: reconnecting
	// past the ready timeout, or permanently failed.
	OutcomeUnavailable
	// OutcomeDisabled: the server is disabled, removed or closed.
	OutcomeDisabled
	// OutcomeTimeout: the caller's deadline (or the call's Timeout) passed.
	OutcomeTimeout
	// OutcomeCanceled: the caller's context was cancelled.
	OutcomeCanceled
	// OutcomeTooLarge: the answer was over the message size limit.
	OutcomeTooLarge

	numOutcomes = int(OutcomeTooLarge) + 1
)

var outcomeNames = [numOutcomes]string{"ok", "tool_error", "server_error", "outcome_unknown",
	"unavailable", "disabled", "timeout", "canceled", "too_large"}

// String returns the outcome's name, as used for error.type and metric
// labels ("ok", "tool_error", ...).
func (o Outcome) String() string {
	if o >= 0 && int(o) < numOutcomes {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// WithObserver sets the Observer of the Manager's requests, states and
// dials. Nil means none.
func WithObserver(o Observer) Option {
	return func(opts *options) { opts.observer = o }
}

// observerMetaKey carries a request's Request to the send function, for its
// Meta entries.
type observerMetaKey struct{}

// withMeta puts the call's progress token and its Observer's entries, if
// any, in meta. It copies meta before changing it.
func withMeta(ctx context.Context, meta *mcp.Meta) *mcp.Meta {
	meta = withProgressToken(ctx, meta)
	r, ok := ctx.Value(observerMetaKey{}).(*Request)
	if !ok || len(r.Meta) == 0 {
		return meta
	}
	cp := mcp.Meta{}
	if meta != nil {
		cp = *meta
	}
	fields := make(map[string]any, len(cp.AdditionalFields)+len(r.Meta))
	for k, v := range cp.AdditionalFields {
		fields[k] = v
	}
	for k, v := range r.Meta {
		fields[k] = v
	}
	cp.AdditionalFields = fields
	return &cp
}

// observeDial tells the Observer, if any, how a dial ended. Called with no
// lock held.
func (r *runner) observeDial(gen uint64, took time.Duration, err error) {
	if o := r.s.m.opts.observer; o != nil {
		o.Dial(r.s.name, gen, took, err)
	}
}
