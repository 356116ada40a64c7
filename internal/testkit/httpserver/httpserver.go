// Package httpserver runs MCP servers over HTTP on 127.0.0.1 for tests:
// mcp-go's streamable HTTP server (stateless and stateful) and SSE server,
// and the official Go SDK's streamable HTTP server (stateful and
// stateless). Each can be stopped and started again on the same port, which
// is what a server restart looks like to a client: the old connections die,
// the new server has forgotten every session.
package httpserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Kind selects a server implementation and mode.
type Kind int

const (
	// MCPGo is mcp-go's streamable HTTP server with its default session
	// handling (session IDs issued but not validated).
	MCPGo Kind = iota
	// MCPGoStateful is mcp-go's streamable HTTP server with
	// server.WithStateful(true): unknown sessions get HTTP 404.
	MCPGoStateful
	// MCPGoSSE is mcp-go's legacy HTTP+SSE server.
	MCPGoSSE
	// GoSDKStateful is the official Go SDK's streamable HTTP handler with
	// sessions.
	GoSDKStateful
	// GoSDKStateless is the official Go SDK's streamable HTTP handler with
	// StreamableHTTPOptions.Stateless.
	GoSDKStateless
	// MCPGoReadOnly is MCPGoStateful whose echo and add declare
	// readOnlyHint, so that a client replays a call of them lost in a
	// restart (see readonly.go). It is not in Kinds.
	MCPGoReadOnly
)

// Kinds lists every Kind, for table tests.
var Kinds = []Kind{MCPGo, MCPGoStateful, MCPGoSSE, GoSDKStateful, GoSDKStateless}

// String returns a stable name for k, usable as a subtest name.
func (k Kind) String() string {
	switch k {
	case MCPGo:
		return "mcpgo"
	case MCPGoStateful:
		return "mcpgo-stateful"
	case MCPGoSSE:
		return "mcpgo-sse"
	case GoSDKStateful:
		return "gosdk-stateful"
	case GoSDKStateless:
		return "gosdk-stateless"
	case MCPGoReadOnly:
		return "mcpgo-readonly"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// SSE reports whether k speaks the legacy HTTP+SSE transport.
func (k Kind) SSE() bool { return k == MCPGoSSE }

// mcpImpl is one incarnation of an MCP server: built fresh at every start so
// that a restart forgets all sessions, as a restarted process would.
type mcpImpl interface {
	handler() http.Handler
	// addTool registers another tool, which makes the server send
	// notifications/tools/list_changed to its clients.
	addTool(name string)
	// shutdown releases what the implementation runs in the background.
	shutdown(ctx context.Context)
}

// Server is a test MCP server on 127.0.0.1 that can be stopped and started
// again on the same port.
type Server struct {
	kind Kind
	addr string // fixed by the first start

	// deletes counts DELETE requests that reached the server.
	deletes atomic.Int64
	// hang, when set, makes every request block until the server stops or
	// the hang ends; resumed is closed when it ends (SetHang).
	hang    atomic.Bool
	hangMu  sync.Mutex
	resumed chan struct{}

	mu sync.Mutex // guards the fields below
	// srv, impl and stopped belong to the running incarnation; srv is nil
	// while stopped.
	srv     *http.Server
	impl    mcpImpl
	stopped chan struct{}
	served  chan struct{} // closed when Serve returned
	tools   int
}

// Start starts a server of the given kind on a free port of 127.0.0.1 and
// stops it when the test ends.
func Start(t testing.TB, kind Kind) *Server {
	t.Helper()
	s, err := Listen(kind, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("httpserver: start %v: %v", kind, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Listen starts a server of the given kind on addr; Stop stops it.
func Listen(kind Kind, addr string) (*Server, error) {
	s := &Server{kind: kind}
	if err := s.start(addr); err != nil {
		return nil, err
	}
	return s, nil
}

// ParseKind returns the Kind whose String is name.
func ParseKind(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// Kind returns the server's kind.
func (s *Server) Kind() Kind { return s.kind }

// Addr returns host:port, the same across restarts.
func (s *Server) Addr() string { return s.addr }

// URL returns the endpoint a client connects to: /mcp for streamable HTTP,
// /sse for the legacy SSE transport.
func (s *Server) URL() string {
	if s.kind.SSE() {
		return "http://" + s.addr + "/sse"
	}
	return "http://" + s.addr + "/mcp"
}

// Deletes returns how many DELETE requests reached the server, over all its
// incarnations.
func (s *Server) Deletes() int64 { return s.deletes.Load() }

// SetHang makes every later request block until the server is stopped (on),
// or behave normally again (off). It models a server that accepts
// connections but stops answering: when the hang ends, the requests it
// held are served, as a server that resumes would.
func (s *Server) SetHang(on bool) {
	s.hangMu.Lock()
	defer s.hangMu.Unlock()
	switch {
	case on && !s.hang.Load():
		s.resumed = make(chan struct{})
		s.hang.Store(true)
	case !on && s.hang.Load():
		s.hang.Store(false)
		close(s.resumed)
	}
}

// NotifyToolsChanged adds a tool to the running server, which then sends
// notifications/tools/list_changed to its connected clients.
func (s *Server) NotifyToolsChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.impl == nil {
		return
	}
	s.tools++
	s.impl.addTool(fmt.Sprintf("extra%d", s.tools))
}

// Restart stops the server if it runs and starts a new one on the same
// port, with no memory of the old one's sessions.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := startAgain(func() error { return s.start(s.addr) }); err != nil {
		t.Fatalf("httpserver: restart %v on %s: %v", s.kind, s.addr, err)
	}
}

func (s *Server) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	impl := s.newImpl()
	stopped := make(chan struct{})
	served := make(chan struct{})
	srv := &http.Server{
		Handler:           s.middleware(impl.handler(), stopped),
		ReadHeaderTimeout: 10 * time.Second,
	}
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.srv, s.impl, s.stopped, s.served = srv, impl, stopped, served
	s.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return nil
}

// Stop closes the listener and every connection at once, as a crashing
// process would. It is safe to call while stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, impl, stopped, served := s.srv, s.impl, s.stopped, s.served
	s.srv, s.impl = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	close(stopped)
	Halt(srv, served, impl.shutdown)
}

// Halt closes srv and every connection at once, waits for its Serve to
// return (served is closed then), and gives shutdown two seconds to end
// the MCP server's sessions: how the test servers stop, as a crashing
// process would.
func Halt(srv *http.Server, served <-chan struct{}, shutdown func(context.Context)) {
	_ = srv.Close()
	<-served
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	shutdown(ctx)
}

func (s *Server) middleware(next http.Handler, stopped <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			s.deletes.Add(1)
		}
		if s.hang.Load() {
			s.hangMu.Lock()
			resumed := s.resumed
			s.hangMu.Unlock()
			select {
			case <-stopped:
				return
			case <-r.Context().Done():
				return
			case <-resumed:
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) newImpl() mcpImpl {
	switch s.kind {
	case MCPGo, MCPGoStateful, MCPGoSSE, MCPGoReadOnly:
		return newMCPGo(s.kind)
	default:
		return newGoSDK(s.kind == GoSDKStateless)
	}
}
