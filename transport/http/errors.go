package http

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/failure"
	seam "github.com/mcpfleet/mcpfleet/transport"
)

var (
	// ErrStreamLost is Conn.Err's cause when the notification stream (the
	// 2026-07-28 subscriptions/listen stream, the older protocol's GET
	// stream, or the legacy SSE stream) broke off and, for the GET stream,
	// could not be reopened in its session (WithStreamReopenAttempts): the
	// server restarted, went away, or dropped us.
	ErrStreamLost = errors.New("notification stream lost")

	// ErrStaleSession is Conn.Err's cause when the server answered a request
	// on our session with HTTP 404, or with HTTP 400 and JSON-RPC -32000
	// "No valid session ID": it no longer knows the session, typically
	// because it restarted. Errors wrapping it also match
	// transport.ErrSessionTerminated.
	ErrStaleSession = errors.New("stale session")

	// ErrNotSent is wrapped by the error of a request that provably never
	// reached the server: nothing of it was written (a failed dial, a
	// connection the server had closed, the Conn closing before the
	// request went out). The server cannot have run it, so it is safe to
	// send again, whatever it does. A request that failed after it was
	// written does not wrap it: its outcome is unknown.
	ErrNotSent = seam.ErrNotSent

	// ErrClosed is Conn.Err's cause after Close. It is transport.ErrClosed,
	// which every transport shares.
	ErrClosed = seam.ErrClosed

	// ErrCrossOriginRedirect is wrapped by the error of a request the
	// server redirected to another origin (another scheme, host or port,
	// https to http included). The redirect is not followed: the request
	// carries the server's credentials (the Authorizer's token, the spec's
	// headers) and its body, which are for the server's origin only.
	// Redirects within the origin are followed. During a server's
	// handshake it comes inside an *Error that matches
	// transport.ErrMisconfigured: the URL is not the one to use.
	ErrCrossOriginRedirect = errors.New("redirect to another origin refused")
)

// staleSessionError is the cause recorded when the server forgot the session.
type staleSessionError struct{ status int }

func (e staleSessionError) Error() string {
	if e.status == 400 {
		return ErrStaleSession.Error() + " (HTTP 400, JSON-RPC error about the session)"
	}
	return ErrStaleSession.Error() + " (HTTP 404)"
}

func (e staleSessionError) Is(target error) bool {
	return target == ErrStaleSession || target == transport.ErrSessionTerminated
}

// restartedError is the cause recorded when the server's port was closed
// while the notification stream was being reopened, and a server answered
// there again: a new process, which has none of the session.
type restartedError struct{}

func (restartedError) Error() string {
	return ErrStaleSession.Error() + " (the server refused connections, then answered again: a new process)"
}

func (restartedError) Is(target error) bool {
	return target == ErrStaleSession || target == transport.ErrSessionTerminated || target == seam.ErrSessionGone
}

// errProcessGone is added to the cause of a Conn whose server refused
// connections (nothing listens on its port): its process is gone, and its
// session with it; a process that answers there later is a new one.
var errProcessGone = fmt.Errorf("the server refused connections: its process, and the session with it, is gone (%w)", seam.ErrSessionGone)

// notSentError is the error of a request that never went out; it wraps
// both ErrNotSent and net/http's error (through mcp-go's wrapping too:
// *transport.Error, fmt's %w and *url.Error all unwrap).
type notSentError struct{ err error }

func (e *notSentError) Error() string { return ErrNotSent.Error() + ": " + e.err.Error() }

func (e *notSentError) Unwrap() []error { return []error{ErrNotSent, e.err} }

// isStaleSession reports whether err says the server no longer knows our
// session: HTTP 404 (mcp-go returns transport.ErrSessionTerminated, and
// keeps returning it for every later request until Initialize is called
// again), or HTTP 400 with JSON-RPC -32000 "No valid session ID provided",
// as the TypeScript SDK's servers answer (mcp-go's SSE server answers a
// POST for an unknown session with 400 and -32602 "Invalid session ID").
// Over a Conn the 400 forms are turned into errors matching
// transport.ErrSessionTerminated before the caller sees them; the text
// match is for errors from transports that did not go through a Conn. The
// server did not run the rejected request, so it can be retried on a new
// connection.
func isStaleSession(err error) bool {
	if err == nil || isContextErr(err) {
		return false
	}
	if errors.Is(err, transport.ErrSessionTerminated) || errors.Is(err, ErrStaleSession) {
		return true
	}
	// mcp-go turns a JSON-RPC -32000 error into errors.New(message): the
	// code is lost, only the message is left.
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "no valid session id") || strings.Contains(msg, "invalid session id")
}

// isNotSent reports whether err proves the request never reached the server
// (it wraps ErrNotSent; or connection refused, a failed dial or name
// lookup), so it is safe to send it again. An error caused by a context
// ending is "not sent" only when it wraps ErrNotSent, which a Conn adds
// when its own Close ended a request before it went out; the caller's own
// cancellation is its own answer.
func isNotSent(err error) bool {
	return errors.Is(err, ErrNotSent) || failure.NeverSent(err)
}

// isUnsupportedProtocol reports whether err is JSON-RPC -32022 "unsupported
// protocol version". A server can answer the 2026-07-28 server/discover
// probe and still reject that version at the first real request (the
// official Go SDK's servers do); the caller should then dial again with
// WithLegacyProtocol.
func isUnsupportedProtocol(err error) bool {
	if err == nil {
		return false
	}
	var unsupported mcp.UnsupportedProtocolVersionError
	return errors.As(err, &unsupported)
}

// isTransportFatal reports whether err means the connection it came from
// is unusable: a stale session, a request that could not be sent, the
// connection breaking off mid-exchange, or the transport being closed.
// Context errors, JSON-RPC errors and HTTP error statuses are not fatal.
func isTransportFatal(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrNotSent) {
		return true
	}
	if isContextErr(err) {
		return false
	}
	if isStaleSession(err) || failure.Broken(err) ||
		errors.Is(err, ErrStreamLost) || errors.Is(err, ErrClosed) {
		return true
	}
	// mcp-go's SSE transport reports a request whose stream died, or whose
	// transport was closed, with these plain errors.
	msg := err.Error()
	return strings.Contains(msg, "connection has been closed") ||
		strings.Contains(msg, "transport has been closed")
}

// isContextErr reports whether err comes from a context ending.
func isContextErr(err error) bool { return failure.Context(err) }

// NotSent reports that err, the error of a request on this Conn, proves the
// request never reached the server: it was never written, or the server
// refused the session it went on (transport.Classifier).
func (c *Conn) NotSent(err error) bool { return isNotSent(err) }

// Fatal reports that err means this Conn is unusable: a stale session, a
// request that could not be sent, the connection broken mid-exchange, or
// the Conn closed (transport.Classifier).
func (c *Conn) Fatal(err error) bool { return isTransportFatal(err) }
