package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Observer is told what the served side of a gateway does, for metrics
// (github.com/mcpfleet/mcpfleet/otel's GatewayObserver records them with
// OpenTelemetry). Its methods are called on the goroutines of the requests
// and of the gateway, some with a lock of the gateway held: they must be
// quick, safe for concurrent use, and must not call into the gateway.
// Embed NopObserver to implement only some of them.
type Observer interface {
	// SessionStarted and SessionEnded bracket a downstream session (an MCP
	// session, or the requests of one 2026-07-28 client program).
	SessionStarted(SessionInfo)
	SessionEnded(SessionInfo)
	// Call is told of every request that went, or was to go, to a server:
	// tools/call, prompts/get, resources/read, once it ended, refused ones
	// included (denied by the policy, over a limit).
	Call(CallInfo)
	// PolicyDecision is told of every decision of a Team's policy on a
	// request (allowed and denied), with the rule that made it.
	PolicyDecision(PolicyInfo)
	// UpstreamState is told the connection state of each server of a fleet
	// served: each one's state when the gateway starts, every change, and
	// Present false when the gateway stops serving it (the server was
	// removed, the gateway closed, an identity's fleet closed).
	UpstreamState(UpstreamInfo)
	// AuthRefused is told of every request a Team refused with 401, and why.
	AuthRefused(AuthInfo)
}

// SessionInfo is one downstream session.
type SessionInfo struct {
	// Identity is the ID of the identity the session is of (a Team's); ""
	// for a gateway served alone.
	Identity string
	// Modern is set for a 2026-07-28 client's requests, which have no MCP
	// session.
	Modern bool
	// Duration is, at its end, how long the session lasted.
	Duration time.Duration
}

// Outcomes of CallInfo.
const (
	OutcomeOK                 = "ok"
	OutcomeToolError          = "tool_error"          // the tool ran; its result is isError
	OutcomeDenied             = "denied"              // the policy refused it
	OutcomeRefused            = "refused"             // over a limit of the client's, or the session ended
	OutcomeUnavailable        = "unavailable"         // the server was reconnecting and did not come back in time
	OutcomeNeedsAuthorization = "needs_authorization" // the user must authorize the server
	OutcomeFailed             = "failed"              // the server has failed for good, or is disabled
	OutcomeOutcomeUnknown     = "outcome_unknown"     // lost in flight
	OutcomeNotFound           = "not_found"           // no such tool
	OutcomeServerError        = "server_error"        // the server answered with a JSON-RPC error
	OutcomeTimeout            = "timeout"
	OutcomeCanceled           = "canceled"
	OutcomeError              = "error" // anything else
)

// CallInfo is one request to a server, ended.
type CallInfo struct {
	Identity string
	Method   string // "tools/call", "prompts/get", "resources/read"
	Server   string
	// Name is the tool's or prompt's own name on its server; "" for a
	// resource read (a URI is not a label of low cardinality).
	Name     string
	Outcome  string // one of the Outcome… constants
	Duration time.Duration
	Err      error // the failure, if the outcome is not OutcomeOK
}

// PolicyInfo is one decision of a policy.
type PolicyInfo struct {
	Identity string
	Server   string
	Tool     string // "" for a server's prompts and resources
	Decision Decision
}

// UpstreamInfo is the connection state of one server of a fleet served.
type UpstreamInfo struct {
	Identity string
	Server   string
	State    lifecycle.State
	// Present is false when the gateway stopped serving the server: forget
	// it.
	Present bool
}

// AuthInfo is a request refused for want of a good credential.
type AuthInfo struct {
	// Reason is "missing" (no bearer token), "invalid" (malformed, a bad
	// signature, an unknown API key), "expired", "audience" (issued for
	// another resource), "issuer" (an issuer not trusted), "unknown_key"
	// (signed by a key the issuer does not publish), or "unavailable" (the
	// issuer's keys could not be fetched).
	Reason string
}

// NopObserver does nothing; embed it in an Observer that implements only
// some of the methods.
type NopObserver struct{}

// SessionStarted does nothing.
func (NopObserver) SessionStarted(SessionInfo) {}

// SessionEnded does nothing.
func (NopObserver) SessionEnded(SessionInfo) {}

// Call does nothing.
func (NopObserver) Call(CallInfo) {}

// PolicyDecision does nothing.
func (NopObserver) PolicyDecision(PolicyInfo) {}

// UpstreamState does nothing.
func (NopObserver) UpstreamState(UpstreamInfo) {}

// AuthRefused does nothing.
func (NopObserver) AuthRefused(AuthInfo) {}

// outcomeOf classes the end of a request.
func outcomeOf(res *mcp.CallToolResult, err error) string {
	if err == nil { // before limit, which errors.As puts on the heap
		if res != nil && res.IsError {
			return OutcomeToolError
		}
		return OutcomeOK
	}
	var limit *limitError
	switch {
	case errors.Is(err, errDenied):
		return OutcomeDenied
	case errors.As(err, &limit), errors.Is(err, errSessionGone), errors.Is(err, errUnknownState), errors.Is(err, ErrClosed):
		return OutcomeRefused
	case errors.Is(err, client.ErrNeedsAuthorization):
		return OutcomeNeedsAuthorization
	case errors.Is(err, client.ErrUnavailable):
		return OutcomeUnavailable
	case errors.Is(err, client.ErrPermanentlyFailed), errors.Is(err, client.ErrDisabled),
		errors.Is(err, client.ErrClosed), errors.Is(err, client.ErrUnknownServer):
		return OutcomeFailed
	case errors.Is(err, client.ErrOutcomeUnknown):
		return OutcomeOutcomeUnknown
	case errors.Is(err, client.ErrToolNotFound):
		return OutcomeNotFound
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, client.ErrServerError):
		return OutcomeServerError
	}
	return OutcomeError
}
