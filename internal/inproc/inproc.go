// Package inproc connects the Manager to an mcp-go server in the same
// process, through the same Conn seam the stdio and HTTP transports use, and
// lets tests and the demo kill a connection as a crash would.
package inproc

import (
	"context"
	"errors"
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
	srv *server.MCPServer

	mu      sync.Mutex
	live    map[*Conn]struct{}
	failErr error // while set, Dial fails with it
	dials   atomic.Int64
}

// New returns a Server for srv.
func New(srv *server.MCPServer) *Server {
	return &Server{srv: srv, live: map[*Conn]struct{}{}}
}

// MCPServer returns the server behind s.
func (s *Server) MCPServer() *server.MCPServer { return s.srv }

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
	c := &Conn{owner: s, inner: transport.NewInProcessTransport(s.srv), done: make(chan struct{})}
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
// while it ran as lost, as a real transport would.
type Conn struct {
	owner *Server
	inner *transport.InProcessTransport

	dead  atomic.Bool
	done  chan struct{}
	once  sync.Once
	err   atomic.Pointer[error]
	close sync.Once
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
	var err error
	c.close.Do(func() {
		err = c.inner.Close()
		c.owner.mu.Lock()
		delete(c.owner.live, c)
		c.owner.mu.Unlock()
	})
	return err
}

// guard is the transport face of a Conn.
type guard Conn

func (g *guard) Start(ctx context.Context) error { return g.inner.Start(ctx) }

func (g *guard) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if g.dead.Load() {
		return nil, transport.ErrTransportClosed
	}
	resp, err := g.inner.SendRequest(ctx, req)
	if g.dead.Load() {
		// The connection died while the server worked: the reply is lost.
		return nil, transport.ErrTransportClosed
	}
	return resp, err
}

func (g *guard) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	if g.dead.Load() {
		return transport.ErrTransportClosed
	}
	return g.inner.SendNotification(ctx, n)
}

func (g *guard) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	g.inner.SetNotificationHandler(h)
}

func (g *guard) Close() error { return (*Conn)(g).Close(context.Background()) }

func (g *guard) GetSessionId() string { return g.inner.GetSessionId() }
