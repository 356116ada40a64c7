// Package transport is the seam between the client's Manager and the
// transports that reach MCP servers: the connection a transport hands the
// Manager (Conn), the capabilities a connection may add to it (each a named
// interface here, so that both sides can see the contract), and the
// sentinel errors every transport shares.
//
// The transports of this module (transport/stdio, transport/http) and an
// in-process server (client.InProcess) implement it; so can a host's own
// transport, handed to the Manager as a client.ServerSpec's Dialer.
package transport

import (
	"context"
	"errors"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
)

// Conn is one connection to a server as a transport hands it to the
// Manager.
//
// The Manager owns the MCP side of the connection: it builds the mcp-go
// client on Transport, starts it exactly once, runs the handshake and
// fetches the catalog. The Conn owns everything under it (a child process,
// an HTTP client, a listener) and reports when that is known to be dead.
type Conn interface {
	// Transport is the mcp-go transport to speak MCP over. It is not started
	// yet; the Manager starts it exactly once.
	Transport() mcptransport.Interface

	// Done is closed as soon as the connection is known to be dead: the
	// child exited, the notification stream was lost, the server went away.
	// It is not closed by a failed call alone.
	Done() <-chan struct{}

	// Err says why Done was closed. It returns nil while Done is open.
	Err() error

	// Close tears the connection down and releases everything it holds. It
	// returns by the time ctx ends at the latest, forcing what has not
	// finished. It is safe to call more than once and concurrently, and after
	// Done was closed.
	Close(ctx context.Context) error
}

// ReadyHook is a Conn that has work to do once the MCP handshake
// succeeded, such as opening the HTTP notification stream. An error from
// Ready fails the dial like any other dial error.
type ReadyHook interface {
	Ready(ctx context.Context, c *mcpclient.Client) error
}

// Classifier is a Conn that can tell what its own transport's failures
// prove, where their types alone do not (an HTTP session the server
// forgot, a request the transport knows it never wrote). The Manager
// already knows what every transport shares: a context ending, a refused
// dial, a broken connection, and errors wrapping ErrNotSent.
type Classifier interface {
	// NotSent reports that err proves the request never reached the
	// server, so that it is safe to send it again on another connection.
	NotSent(err error) bool
	// Fatal reports that err means the connection is unusable.
	Fatal(err error) bool
}

// Reporter is a Conn whose server leaves evidence outside the protocol,
// which the Manager shows when the server fails: what a stdio server wrote
// to stderr, and what it wrote to stdout that was not JSON-RPC (a banner,
// a log line), which the transport set aside rather than hand to mcp-go.
type Reporter interface {
	// Stderr returns the last lines the server wrote to stderr, oldest
	// first.
	Stderr() []string
	// Stray returns the first lines the server wrote to stdout that were
	// not JSON-RPC messages, and how many such lines there were in all.
	Stray() (first []string, total int)
}

// ResourceListener is a Conn whose notification stream carries the
// resource subscriptions, as on the 2026-07-28 protocol, and that can
// change them while it runs (transport/http's Conn).
type ResourceListener interface {
	SubscribeResource(ctx context.Context, c *mcpclient.Client, uri string) error
	UnsubscribeResource(ctx context.Context, c *mcpclient.Client, uri string) error
}

// Resumer is a Conn that resumes a request's answer stream that broke
// off, so that the request ends with its answer instead of an unknown
// outcome (transport/http's Conn, on Streamable HTTP up to protocol
// 2025-11-25: a GET with Last-Event-ID). The Manager counts the
// resumptions in its Stats.
type Resumer interface {
	// OnResume sets f to be called each time the Conn resumed an answer
	// stream. f must be quick and must not block; it is set before the
	// transport starts.
	OnResume(f func())
}

// SessionKeeper is a Conn whose server keeps state for it between
// requests in a session (Streamable HTTP up to protocol 2025-11-25, the
// Mcp-Session-Id): its tasks, resource subscriptions, logging level,
// pending requests. The session outlives a broken TCP connection; the
// Conn ends it (HTTP DELETE) only when it is closed without KeepSession,
// and never after it failed. transport/http's Conn implements it.
type SessionKeeper interface {
	// SessionID returns the session's id; "" when the connection has no
	// session (2026-07-28, legacy SSE, a server that gives none).
	SessionID() string
	// Rejoined reports whether the connection went on in the session of
	// an earlier one (transport/http's WithRejoin) instead of starting
	// one: the server still holds what the host asked of that session.
	Rejoined() bool
	// KeepSession makes Close leave the session open on the server, for a
	// later connection to rejoin: the Manager calls it when it closes a
	// runtime to recover from a fault, and when a task is still bound to
	// the session. It is safe to call at any time, more than once.
	KeepSession()
	// OnStreamReopen sets f to be called each time the connection reopened
	// its notification stream in the session after a break, or opened it
	// only after the connection stopped waiting for it: what the server
	// sent meanwhile may be lost, so the Manager refetches the lists and
	// polls the tasks. f must be quick and must not block; it
	// is set before the transport starts.
	OnStreamReopen(f func())
}

type sessionKey struct{}

// WithSession returns ctx for a request to go out in the session id rather
// than in its connection's own: a poll of a task that an earlier
// connection started, on a server that binds tasks to the session that
// created them. A Conn that keeps no sessions ignores it. When the server
// no longer knows id, the request fails with an error wrapping
// ErrSessionGone, and the connection's own session is not affected.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

// SessionOf returns the session id WithSession put in ctx; "" if none.
func SessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// Errors shared by every transport. Their messages carry no prefix: the
// typed error around them (a *stdio.Error, an *http.Error) names the
// transport, and the client's *ServerError the module.
var (
	// ErrClosed: the connection was closed by its owner (Close), not lost.
	ErrClosed = errors.New("connection closed")

	// ErrNotSent is wrapped by the error of a request that provably never
	// reached the server: nothing of it was written (a failed dial, a
	// connection the server had closed, the Conn closing before the
	// request went out). The server cannot have run it, so it is safe to
	// send again, whatever it does.
	ErrNotSent = errors.New("request not sent")

	// ErrMisconfigured is matched by a dial error that no retry can fix
	// without a person: an executable that does not exist or cannot be
	// run, a working directory that does not exist, an endpoint that
	// answers 404, 405 or 410 to every way of speaking MCP, credentials
	// refused with no way to get others, a certificate the system does not
	// trust. Before a server ever connected, the Manager takes such a
	// failure for a mistake in its configuration and stops retrying at
	// once (it keeps a slow probe); after, for an outage like any other.
	ErrMisconfigured = errors.New("misconfigured")

	// ErrNotMCP is matched by a dial error that shows the server answered
	// with something that is not MCP: a stdio server that wrote a line to
	// stdout that is not a JSON-RPC message and then nothing more (a
	// banner or a log line, from a server meant for another transport or
	// one that logs to the wrong stream), an HTTP endpoint that answered
	// the handshake with a web page. Such an error matches
	// ErrMisconfigured too: the Manager takes it for a mistake on a
	// server's first connect, and for an outage once the server worked.
	ErrNotMCP = errors.New("not MCP")

	// ErrSessionGone is wrapped by the error of a request sent in a session
	// named with WithSession that the server no longer knows (HTTP 404, or
	// 400 about the session): it restarted, the session expired, or a host
	// ended it. The server did not run the request. A Conn's Err, or a
	// dial's error, wraps it too when the server's session is gone with
	// its process: it refused connections (nothing listened on its port),
	// so whatever answers there later is a new process.
	ErrSessionGone = errors.New("session gone")
)
