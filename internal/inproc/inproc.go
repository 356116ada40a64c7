// Package inproc connects the Manager to an mcp-go server in the same
// process, through the same Conn seam the stdio and HTTP transports use, and
// lets tests and the demo kill a connection as a crash would.
//
// Messages reach the client in the order the server wrote them, as over a
// stream: a notification the server sends while it handles a request is
// handed to the client's notification handler before that request's
// response is returned (see transport.go).
package inproc

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ErrKilled is the cause a Conn reports when Server.Kill ended it.
var ErrKilled = errors.New("inproc: connection killed")

// Server hands out connections to one mcp-go server and remembers the live
// ones so that Kill can end them all, as if the server had crashed.
type Server struct {
	srv *server.MCPServer // set at creation, read-only

	dials atomic.Int64 // has its own synchronization

	mu      sync.Mutex // guards the fields below
	live    map[*Conn]struct{}
	failErr error // while set, Dial fails with it
}

// New returns a Server for srv.
func New(srv *server.MCPServer) *Server {
	return &Server{srv: srv, live: map[*Conn]struct{}{}}
}

// MCPServer returns the server behind s.
func (s *Server) MCPServer() *server.MCPServer { return s.srv }

// sessionSeq numbers the sessions of every Conn in the process. mcp-go's
// own in-process session IDs come from the clock, and two dials in the same
// nanosecond to one MCPServer (which several Servers may share) would clash.
var sessionSeq atomic.Uint64

// Dial opens a new connection. It fails while SetDialError holds an error.
func (s *Server) Dial(ctx context.Context) (*Conn, error) {
	s.dials.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return nil, s.failErr
	}
	id := "mcpfleet-inproc-" + strconv.FormatUint(sessionSeq.Add(1), 10)
	c := &Conn{
		owner:   s,
		session: &session{InProcessSession: server.NewInProcessSessionWithHandlers(id, nil, nil, nil)},
		done:    make(chan struct{}),
	}
	s.live[c] = struct{}{}
	return c, nil
}

// Dials returns how many times Dial was called.
func (s *Server) Dials() int64 { return s.dials.Load() }

// SetDialError makes every Dial fail with err until it is called with nil,
// like a server that is down.
func (s *Server) SetDialError(err error) {
	s.mu.Lock()
	s.failErr = err
	s.mu.Unlock()
}

// Kill ends every live connection with cause (ErrKilled if nil) and returns
// how many it ended.
func (s *Server) Kill(cause error) int {
	if cause == nil {
		cause = ErrKilled
	}
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.live))
	for c := range s.live {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.die(cause)
	}
	return len(conns)
}

// Live returns how many connections are open (not yet closed).
func (s *Server) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// Conn is one in-process connection. Its transport refuses every request
// once the connection died, and reports a request whose connection died
// while it ran as lost, as a real transport would. A dead connection
// delivers no more notifications.
type Conn struct {
	// Set at creation, read-only.
	owner   *Server
	session *session
	done    chan struct{} // closed by die

	// Have their own synchronization.
	dead    atomic.Bool
	once    sync.Once // runs die's body
	err     atomic.Pointer[error]
	close   sync.Once
	started atomic.Bool // the session is registered; written under mu
	handler atomic.Pointer[func(mcp.JSONRPCNotification)]

	// mu guards closed, and is held while Start registers the session, so
	// that a Close either comes first (and Start registers nothing) or sees
	// started and unregisters it.
	mu     sync.Mutex
	closed bool
}

// Transport returns the mcp-go transport of the connection.
func (c *Conn) Transport() transport.Interface { return (*guard)(c) }

// Done is closed when the connection was killed or closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why Done was closed.
func (c *Conn) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Kill ends this connection alone with cause, as a crash would.
func (c *Conn) Kill(cause error) {
	if cause == nil {
		cause = ErrKilled
	}
	c.die(cause)
}

func (c *Conn) die(cause error) {
	c.once.Do(func() {
		c.err.Store(&cause)
		c.dead.Store(true)
		close(c.done)
	})
}

// Close ends the connection and unregisters its session.
func (c *Conn) Close(context.Context) error {
	c.die(transport.ErrTransportClosed)
	c.close.Do(func() {
		c.mu.Lock()
		c.closed = true
		registered := c.started.Load()
		c.mu.Unlock()
		if registered {
			c.owner.srv.UnregisterSession(context.Background(), c.session.SessionID())
		}
		c.owner.mu.Lock()
		delete(c.owner.live, c)
		c.owner.mu.Unlock()
	})
	return nil
}
