package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/frame"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// Errors returned by the Manager. A per-server failure comes as a
// *ServerError naming the server and the operation, wrapping one of these;
// test for them with errors.Is. Their own messages carry no prefix, as
// os.ErrNotExist's does not: the ServerError around them gives it.
var (
	// ErrUnknownServer: no server of that name was added.
	ErrUnknownServer = errors.New("unknown server")
	// ErrDuplicateServer: Add was called with a name already in use.
	ErrDuplicateServer = errors.New("server already exists")
	// ErrDisabled: the server is disabled (or being disabled).
	ErrDisabled = errors.New("server disabled")
	// ErrClosed: the server was removed or the manager was closed.
	ErrClosed = errors.New("closed")
	// ErrPermanentlyFailed: the server's reconnect budget is exhausted;
	// Reconnect starts over.
	ErrPermanentlyFailed = errors.New("server permanently failed")
	// ErrUnavailable: the server did not become Connected within the ready
	// timeout. It is carried by *UnavailableError.
	ErrUnavailable = errors.New("server unavailable")
	// ErrOutcomeUnknown: the connection was lost while the request was in
	// flight, so the server may or may not have executed it, and the tool is
	// neither read-only nor idempotent, so it was not replayed.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrServerError: the server answered the request with a JSON-RPC
	// error. It is a result, not a failure of the connection: the runtime
	// stays, nothing is retried, and the server's own error (mcp-go's, such
	// as mcp.ErrMethodNotFound) is wrapped as well.
	ErrServerError = errors.New("server returned an error")
	// ErrInvalidSpec: Add (or an Apply entry) was given a spec that cannot
	// work; the message names the field.
	ErrInvalidSpec = errors.New("invalid spec")
	// ErrMessageTooLarge: the server's answer exceeded Limits.MaxMessageBytes;
	// it was discarded while it was read, and the connection stays.
	ErrMessageTooLarge = errors.New("message too large")
	// ErrCatalogTooLarge: the server's catalog broke Limits.MaxCatalogItems
	// or Limits.MaxCatalogPages (or paged in a circle). A new runtime fails
	// its dial with it; a refresh keeps the last good catalog and reports
	// it in an EventCatalogError.
	ErrCatalogTooLarge = errors.New("catalog too large")
	// ErrToolNotFound: the qualified tool name is not in the published View,
	// or the server's ToolFilter keeps the tool out (then the error is a
	// *ToolFilteredError, which says by which list).
	ErrToolNotFound = errors.New("tool not found")
	// ErrNeedsAuthorization: the server waits for the user to authorize
	// the client (state NeedsAuthorization). Calls fail fast with it, inside
	// an *AuthorizationError, until CompleteAuthorization (or
	// AuthorizeLoopback) is done; nothing is dialled meanwhile. It is
	// oauth.ErrNeedsAuthorization, defined once.
	ErrNeedsAuthorization = oauth.ErrNeedsAuthorization
	// ErrTooManyTimeouts is the cause recorded when consecutive call
	// timeouts made the manager give up on a connection.
	ErrTooManyTimeouts = errors.New("too many consecutive timeouts")
	// ErrIdleTimeout is the cause of the move from Connected to
	// Disconnected of a server that went unused for its
	// ServerSpec.IdleTimeout: its runtime was closed on purpose, not lost.
	// No request fails with it; the next one starts the server again.
	ErrIdleTimeout = errors.New("idle timeout")
	// ErrTaskUnsupported: a call cannot run as an MCP task (StartTask, a
	// tool that requires a task, WithTask): the tool declares
	// execution.taskSupport "forbidden" (or nothing, on 2025-11-25), or the
	// server offers no tasks on the protocol its runtime speaks. The
	// message says which.
	ErrTaskUnsupported = errors.New("task unsupported")
	// ErrTaskLost: the server no longer knows a task (it restarted, or the
	// task's ttl passed), or answered its polls with errors until the
	// Manager gave up on it (Task.Wait). A lost task is not retried: the
	// server may or may not have finished it.
	ErrTaskLost = errors.New("task lost")
	// ErrTaskFailed: a task ended in status failed, an error at the
	// protocol level; the server's error is wrapped too. (A tool whose
	// result has IsError set completed: that is a result.)
	ErrTaskFailed = errors.New("task failed")
	// ErrTaskCancelled: a task was cancelled, by Task.Cancel or by its
	// server.
	ErrTaskCancelled = errors.New("task cancelled")
	// ErrUnknownTask: Manager.Task found no handle of that server's task:
	// the Manager never started it and its TaskStore does not hold it, or
	// its outcome was collected (Task.Wait) or it was forgotten.
	ErrUnknownTask = errors.New("unknown task")
)

// ServerError is the error of every per-server failure a Manager method
// returns, in the manner of os.PathError: which server, what was being
// done, and why. Err wraps one of the package's sentinels (or, for a call
// whose caller gave up, the caller's context error), so errors.Is and
// errors.As see through it:
//
//	mcpfleet: server "github": call tool create_issue: outcome unknown: ...
type ServerError struct {
	Server string // empty when no server could be named (Call of an unknown qualified name)
	Op     string // "call tool create_issue", "enable", "wait for Connected", ...
	Err    error
}

func (e *ServerError) Error() string {
	var b strings.Builder
	b.WriteString("mcpfleet: ")
	if e.Server != "" {
		b.WriteString("server ")
		b.WriteString(strconv.Quote(e.Server))
		if e.Op != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Op)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *ServerError) Unwrap() error { return e.Err }

// withOp names the operation of a per-server error: it fills in the Op of a
// *ServerError made below the public method (which knows the operation),
// and wraps any other error but the caller's bare context error. nil stays
// nil.
func withOp(op, server string, err error) error {
	if err == nil {
		return nil
	}
	if se, ok := err.(*ServerError); ok {
		if se.Op == "" {
			se.Op = op // made for this call alone: nobody else holds it
		}
		return err
	}
	if err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	return &ServerError{Server: server, Op: op, Err: err}
}

// UnavailableError reports a call that waited for a server to become
// Connected and gave up. It comes inside a *ServerError, which names the
// server in the message; its own message does not. errors.Is(err, ErrUnavailable) is true, and so is
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
	msg := fmt.Sprintf("unavailable: %s (generation %d, attempt %d",
		e.State, e.Generation, e.Attempt)
	if !e.NextRetry.IsZero() {
		msg += ", next retry " + e.NextRetry.Format(time.RFC3339) // to the second: for a person
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

// serverError is a *ServerError of sentinel and an optional cause; the
// public method fills in its Op (withOp).
func serverError(sentinel error, server string, cause error) error {
	return &ServerError{Server: server, Err: because(sentinel, cause)}
}

// because returns sentinel with cause, if any, after it.
func because(sentinel, cause error) error {
	if cause == nil {
		return sentinel
	}
	return fmt.Errorf("%w: %w", sentinel, cause)
}

// MessageTooLargeError is the error (inside a *ServerError) of a request
// whose answer exceeded the server's Limits.MaxMessageBytes. The transport
// discarded the answer while reading it, so the host never held it, and
// the connection stays. It matches ErrMessageTooLarge.
type MessageTooLargeError struct {
	// Size is the answer's length in bytes; with AtLeast, reading stopped
	// once it was past the limit, and Size is what was read by then.
	Size    int64
	AtLeast bool
	Limit   int64
}

func (e *MessageTooLargeError) Error() string {
	size := strconv.FormatInt(e.Size, 10) + " bytes"
	if e.AtLeast {
		size = "more than " + strconv.FormatInt(e.Limit, 10) + " bytes"
	}
	return ErrMessageTooLarge.Error() + ": " + size + ", limit " + strconv.FormatInt(e.Limit, 10)
}

// Is reports whether target is ErrMessageTooLarge.
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// tooLarge returns the host's form of a transport's too-large error in
// err's chain, or nil.
func tooLarge(err error) *MessageTooLargeError {
	var tl *frame.TooLarge
	if !errors.As(err, &tl) {
		return nil
	}
	return &MessageTooLargeError{Size: tl.Size, AtLeast: tl.AtLeast, Limit: tl.Limit}
}

// AuthorizationError reports a server that needs the user to authorize the
// client: it has no token, its refresh token was refused, or it asks for
// more scope (step-up). It comes inside a *ServerError; errors.Is(err,
// ErrNeedsAuthorization) is true. Its message says what to do, never the URL.
type AuthorizationError struct {
	// URL is where the user authorizes the client; StartAuthorization
	// returns it too. Empty if none could be made (Cause says why).
	URL string
	// Cause is the transport's account, if any.
	Cause error
}

func (e *AuthorizationError) Error() string {
	msg := "needs authorization: the user must authorize the client at the URL of StartAuthorization, " +
		"and the host complete it with CompleteAuthorization (the redirect URL or the code) or AuthorizeLoopback"
	var na *oauth.NeedsAuthorizationError
	if errors.As(e.Cause, &na) && na.Reason != "" {
		msg += " (" + na.Reason + ")"
	} else if e.Cause != nil && !errors.Is(e.Cause, oauth.ErrNeedsAuthorization) {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns ErrNeedsAuthorization and the cause.
func (e *AuthorizationError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrNeedsAuthorization}
	}
	return []error{ErrNeedsAuthorization, e.Cause}
}

// needsUser reports whether err says that only the user can authorize the
// request.
func needsUser(err error) bool { return errors.Is(err, oauth.ErrNeedsAuthorization) }
