//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package http_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// holdConn is a client connection whose reads hold an end of stream until
// the connection is closed: net/http's read loop, which waits on every
// idle connection for the server's close, then does not notice it, as when
// the close arrived but the read loop has not run yet. A request handed
// the connection meanwhile meets a server that closed it first: the race
// a restart on the same port loses now and then, made certain.
type holdConn struct {
	net.Conn
	eof       chan struct{} // closed when a read met the end of stream
	eofOnce   sync.Once
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *holdConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == io.EOF && n == 0 {
		c.eofOnce.Do(func() { close(c.eof) })
		<-c.closed
	}
	return n, err
}

func (c *holdConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// SyscallConn lets the Conn's idle check see the descriptor.
func (c *holdConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// holder dials holdConns and keeps them.
type holder struct {
	mu    sync.Mutex // guards conns
	conns []*holdConn
}

func (h *holder) wrap(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		hc := &holdConn{Conn: c, eof: make(chan struct{}), closed: make(chan struct{})}
		h.mu.Lock()
		h.conns = append(h.conns, hc)
		h.mu.Unlock()
		return hc, nil
	}
}

// awaitEOF waits until every connection not closed yet has met the end of
// stream: the server's FIN is in.
func (h *holder) awaitEOF(ctx context.Context, t *testing.T) {
	t.Helper()
	h.mu.Lock()
	conns := append([]*holdConn(nil), h.conns...)
	h.mu.Unlock()
	for _, c := range conns {
		select {
		case <-c.eof:
		case <-c.closed:
		case <-ctx.Done():
			t.Fatalf("the server's close did not reach the client: %v", ctx.Err())
		}
	}
}

// TestIdleConnClosedFirst: the server closed its idle keep-alive
// connections (its FIN arrived) before the next request, and net/http has
// not noticed. The Conn's idle check sees the FIN before the first byte of
// the request, refuses the write, and the request goes out on a fresh
// connection: the call succeeds and the tool runs exactly once. A small
// request is resent by net/http itself (a nothing-written error); one
// larger than net/http's write buffer is refused while its body is copied,
// which net/http does not resend, so the Conn does.
func TestIdleConnClosedFirst(t *testing.T) {
	for _, tt := range []struct {
		name string
		pad  int
	}{
		{name: "small", pad: 0},
		{name: "large", pad: 64 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv := startCountServer(t)
			h := &holder{}
			s := connect(ctx, t, mcphttp.Spec{URL: srv.url}, mcphttp.WithDialWrap(h.wrap))
			pad := strings.Repeat("x", tt.pad)
			if err := s.count(ctx, pad); err != nil {
				t.Fatalf("count: %v", err)
			}
			for i := range 3 {
				srv.d.closeAll()
				h.awaitEOF(ctx, t)
				calls, accepted := srv.calls.Load(), srv.d.accepted.Load()
				log := &connLog{}
				if err := s.count(log.ctx(ctx), pad); err != nil {
					t.Fatalf("round %d: count after the server closed the idle connection: %v (connections %v)", i, err, log)
				}
				if got := srv.calls.Load() - calls; got != 1 {
					t.Errorf("round %d: the tool ran %d times, want 1", i, got)
				}
				if !log.resent() || srv.d.accepted.Load()-accepted != 1 {
					t.Errorf("round %d: connections %v, %d accepted: want the idle one, then one fresh", i, log, srv.d.accepted.Load()-accepted)
				}
			}
			if err := s.conn.Err(); err != nil {
				t.Fatalf("Err = %v", err)
			}
		})
	}
}
