package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Errors returned by the Manager. They are wrapped with the server's name and
// the cause; test for them with errors.Is.
var (
	// ErrUnknownServer: no server of that name was added.
	ErrUnknownServer = errors.New("mcpfleet: unknown server")
	// ErrDuplicateServer: Add was called with a name already in use.
	ErrDuplicateServer = errors.New("mcpfleet: server already exists")
	// ErrDisabled: the server is disabled (or being disabled).
	ErrDisabled = errors.New("mcpfleet: server disabled")
	// ErrClosed: the server was removed or the manager was closed.
	ErrClosed = errors.New("mcpfleet: closed")
	// ErrPermanentlyFailed: the server's reconnect budget is exhausted;
	// Reconnect starts over.
	ErrPermanentlyFailed = errors.New("mcpfleet: server permanently failed")
	// ErrUnavailable: the server did not become Connected within the ready
	// timeout. It is carried by *UnavailableError.
	ErrUnavailable = errors.New("mcpfleet: server unavailable")
	// ErrOutcomeUnknown: the connection was lost while the request was in
	// flight, so the server may or may not have executed it, and the tool is
	// neither read-only nor idempotent, so it was not replayed.
	ErrOutcomeUnknown = errors.New("mcpfleet: outcome unknown")
	// ErrServerError: the server answered the request with a JSON-RPC
	// error. It is a result, not a failure of the connection: the runtime
	// stays, nothing is retried, and the server's own error (mcp-go's, such
	// as mcp.ErrMethodNotFound) is wrapped as well.
	ErrServerError = errors.New("mcpfleet: server returned an error")
	// ErrToolNotFound: the qualified tool name is not in the published View.
	ErrToolNotFound = errors.New("mcpfleet: tool not found")
	// ErrTooManyTimeouts is the cause recorded when consecutive call
	// timeouts made the manager give up on a connection.
	ErrTooManyTimeouts = errors.New("mcpfleet: too many consecutive timeouts")
)

// UnavailableError reports a call that waited for a server to become
// Connected and gave up. errors.Is(err, ErrUnavailable) is true, and so is
// errors.Is(err, cause) for the last cause of failure.
type UnavailableError struct {
	Server     string
	State      lifecycle.State
	Generation uint64    // the last connected generation; 0 if never connected
	Attempt    int       // failed attempts in the current budget
	NextRetry  time.Time // zero if no retry is scheduled
	Cause      error     // the last failure, if any
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("mcpfleet: server %q unavailable: %s (generation %d, attempt %d",
		e.Server, e.State, e.Generation, e.Attempt)
	if !e.NextRetry.IsZero() {
		msg += ", next retry " + e.NextRetry.Format(time.RFC3339Nano)
	}
	msg += ")"
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns ErrUnavailable and the cause.
func (e *UnavailableError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.Cause}
}

// serverError wraps a sentinel with the server's name and an optional cause.
func serverError(sentinel error, server string, cause error) error {
	if cause != nil {
		return fmt.Errorf("%w: server %q: %w", sentinel, server, cause)
	}
	return fmt.Errorf("%w: server %q", sentinel, server)
}
