package client

import (
	"context"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// Conn is one connection to a server as a transport hands it to the Manager:
// the runtime seam that stdio, HTTP and in-process servers plug into.
//
// The Manager owns the MCP side of the connection: it builds the mcp-go client
// on Transport, starts it exactly once, runs the handshake and fetches the
// catalog. The Conn owns everything under it (a child process, an HTTP
// client, a listener) and reports when that is known to be dead.
type Conn interface {
	// Transport is the mcp-go transport to speak MCP over. It is not started
	// yet; the Manager starts it exactly once.
	Transport() transport.Interface

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

// A Conn may also classify its own transport's failures, where their types
// alone do not tell (transport/http's Conn does): NotSent(err) bool reports
// that a request provably never reached the server, so it is sent again on
// the next runtime; Fatal(err) bool that the connection is unusable. The
// Manager already knows the failures every transport shares (a context
// ending, a refused or failed dial, a broken connection).

// ReadyHook is implemented by a Conn that has work to do once the MCP
// handshake succeeded, such as opening the HTTP notification stream. An
// error from Ready fails the dial like any other dial error.
type ReadyHook interface {
	Ready(ctx context.Context, c *mcpclient.Client) error
}

// Dialer opens a new Conn to one server. The Manager calls it once per
// connection attempt; ctx bounds the attempt and ends when the attempt is
// abandoned (Disable, Remove, Close), but the Conn it returns must outlive
// ctx: only Conn.Close ends it.
type Dialer func(ctx context.Context) (Conn, error)
