package http_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// dialGate holds the pool's dials once it is shut, until the test ends.
type dialGate struct {
	shut    atomic.Bool
	dialing chan struct{} // receives a value when a dial is held
	release chan struct{} // closed when the test ends
}

func (g *dialGate) wrap(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if g.shut.Load() {
			g.dialing <- struct{}{}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-g.release:
				return nil, errors.New("dial held by the test")
			}
		}
		return dial(ctx, network, addr)
	}
}

// TestNotSentOnClose: closing a Conn ends the requests in flight. One
// still waiting for a connection was never written: its error wraps
// ErrNotSent (through mcp-go's wrapping), although it is a cancellation,
// because the caller's context is live. One the server is running was
// written: its outcome is unknown, not "not sent".
func TestNotSentOnClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startCountServer(t)
	g := &dialGate{dialing: make(chan struct{}, 8), release: make(chan struct{})}
	t.Cleanup(func() { close(g.release) })
	s := connect(ctx, t, mcphttp.Spec{URL: srv.url}, mcphttp.WithDialWrap(g.wrap))

	// The wait call holds the one connection the pool has.
	waitErr := make(chan error, 1)
	go func() { waitErr <- s.call(ctx, "wait", nil) }()
	select {
	case <-srv.waiting:
	case <-ctx.Done():
		t.Fatal("wait did not start")
	}
	// The count call needs a new connection, and its dial is held.
	g.shut.Store(true)
	countErr := make(chan error, 1)
	go func() { countErr <- s.count(ctx, "") }()
	select {
	case <-g.dialing:
	case err := <-countErr:
		t.Fatalf("count returned before dialing: %v", err)
	case <-ctx.Done():
		t.Fatal("count did not dial")
	}

	if err := s.conn.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	err := <-countErr
	if !errors.Is(err, mcphttp.ErrNotSent) || !mcphttp.IsNotSent(err) || !mcphttp.IsTransportFatal(err) {
		t.Errorf("count cut short by Close: %v: want ErrNotSent, IsNotSent and IsTransportFatal", err)
	}
	var te *transport.Error
	if !errors.As(err, &te) {
		t.Errorf("count cut short by Close: %v (%T): want it wrapped by mcp-go's *transport.Error", err, err)
	}
	if n := srv.calls.Load(); n != 0 {
		t.Errorf("count ran %d times", n)
	}
	if err := <-waitErr; err == nil || mcphttp.IsNotSent(err) {
		t.Errorf("wait cut short by Close: %v: want an error, not IsNotSent (it was written)", err)
	}
}

// TestNotSentCallerCancel: a request whose caller gives up before it was
// written fails with the caller's context error, not ErrNotSent: the
// caller's cancellation is its own answer.
func TestNotSentCallerCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startCountServer(t)
	g := &dialGate{dialing: make(chan struct{}, 8), release: make(chan struct{})}
	t.Cleanup(func() { close(g.release) })
	s := connect(ctx, t, mcphttp.Spec{URL: srv.url}, mcphttp.WithDialWrap(g.wrap))

	waitCtx, waitCancel := context.WithCancel(ctx)
	defer waitCancel()
	go func() { _ = s.call(waitCtx, "wait", nil) }()
	select {
	case <-srv.waiting:
	case <-ctx.Done():
		t.Fatal("wait did not start")
	}
	g.shut.Store(true)
	callCtx, callCancel := context.WithCancel(ctx)
	countErr := make(chan error, 1)
	go func() { countErr <- s.count(callCtx, "") }()
	select {
	case <-g.dialing:
	case err := <-countErr:
		t.Fatalf("count returned before dialing: %v", err)
	case <-ctx.Done():
		t.Fatal("count did not dial")
	}
	callCancel()
	if err := <-countErr; !errors.Is(err, context.Canceled) || errors.Is(err, mcphttp.ErrNotSent) || mcphttp.IsNotSent(err) {
		t.Errorf("count cancelled by its caller: %v: want context.Canceled and not ErrNotSent", err)
	}
	if err := s.conn.Err(); err != nil {
		t.Errorf("Err = %v after a caller's cancellation", err)
	}
}

// TestMethodNotFound404: a 2026-07-28 server answers a method it does
// not serve with HTTP 404 and a JSON-RPC -32601 error. That is an answer,
// not a stale session (there is none on that protocol): the caller gets
// the server's error, and the connection stays healthy.
func TestMethodNotFound404(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := startCountServer(t)
	s := connect(ctx, t, mcphttp.Spec{URL: srv.url})
	if !mcp.IsModernProtocol(s.client.ProtocolVersion()) {
		t.Fatalf("protocol %s, want 2026-07-28 or later", s.client.ProtocolVersion())
	}
	for range 2 {
		// The server declares no prompts.
		_, err := s.client.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err == nil {
			t.Fatal("prompts/list succeeded on a server without prompts")
		}
		if errors.Is(err, transport.ErrSessionTerminated) || mcphttp.IsStaleSession(err) || mcphttp.IsTransportFatal(err) {
			t.Errorf("prompts/list: %v: taken for a stale session or a dead connection", err)
		}
		if !errors.Is(err, mcp.ErrMethodNotFound) {
			t.Errorf("prompts/list: %v: want the server's method-not-found error", err)
		}
	}
	if err := s.conn.Err(); err != nil {
		t.Fatalf("Err = %v after a method-not-found answer", err)
	}
	if err := s.count(ctx, ""); err != nil {
		t.Fatalf("count after a method-not-found answer: %v", err)
	}
}
