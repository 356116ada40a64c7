package httpserver

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Quiet is mcp-go's stateful streamable HTTP server declaring its tools
// (AddMCPGoTools) without list_changed, on 127.0.0.1, restartable on the
// same port. On 2026-07-28 a client has nothing to listen for, so it keeps
// no notification stream open: a restart breaks no stream and shows only
// at the next request, which meets the keep-alive connections the old
// server closed. That is the case a Server (which declares list_changed)
// does not reach.
type Quiet struct {
	opts QuietOptions
	addr string // fixed by the first start

	mu sync.Mutex // guards the fields below
	// srv, streamable and served belong to the running incarnation; srv is
	// nil while stopped.
	srv        *http.Server
	streamable *server.StreamableHTTPServer
	served     chan struct{} // closed when Serve returned
}

// QuietOptions says how a Quiet server runs.
type QuietOptions struct {
	// Listener, if set, wraps the listener of every start, to inject faults
	// on the connections the server accepts.
	Listener func(net.Listener) net.Listener
}

// StartQuiet starts a Quiet server on a free port of 127.0.0.1 and stops it
// when the test ends.
func StartQuiet(t testing.TB, o QuietOptions) *Quiet {
	t.Helper()
	q := &Quiet{opts: o}
	if err := q.start("127.0.0.1:0"); err != nil {
		t.Fatalf("httpserver: start quiet: %v", err)
	}
	t.Cleanup(q.Stop)
	return q
}

// URL returns the MCP endpoint, the same across restarts.
func (q *Quiet) URL() string { return "http://" + q.addr + "/mcp" }

// Restart stops the server if it runs and starts a new one on the same
// port, with no memory of the old one's sessions.
func (q *Quiet) Restart(t testing.TB) {
	t.Helper()
	q.Stop()
	if err := q.start(q.addr); err != nil {
		t.Fatalf("httpserver: restart quiet on %s: %v", q.addr, err)
	}
}

func (q *Quiet) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s := server.NewMCPServer("httpserver-quiet", "1.0.0", server.WithToolCapabilities(false))
	AddMCPGoTools(s)
	streamable := server.NewStreamableHTTPServer(s, server.WithStateful(true))
	srv := &http.Server{Handler: streamable, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	q.mu.Lock()
	q.addr = ln.Addr().String()
	q.srv, q.streamable, q.served = srv, streamable, served
	q.mu.Unlock()
	if q.opts.Listener != nil {
		ln = q.opts.Listener(ln)
	}
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return nil
}

// Stop closes the listener and every connection at once, as a crashing
// process would. It is safe to call while stopped.
func (q *Quiet) Stop() {
	q.mu.Lock()
	srv, streamable, served := q.srv, q.streamable, q.served
	q.srv, q.streamable = nil, nil
	q.mu.Unlock()
	if srv == nil {
		return
	}
	Halt(srv, served, func(ctx context.Context) { _ = streamable.Shutdown(ctx) })
}
