package http_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// doom says what a doomed connection does with the next request that
// arrives on it.
type doom int32

const (
	alive doom = iota
	// dropSilently reads the request and closes the connection without a
	// byte of answer: the server may have run it and crashed before it
	// answered, or closed the idle connection as the request went out (a
	// restart, an idle timeout); the client cannot tell which.
	dropSilently
	// dropAfterByte answers with a status line and then closes: the server
	// received the request and died while answering, so it may have run it.
	dropAfterByte
)

// doomer is a listener whose accepted connections can be doomed: each
// then kills the next request that arrives on it, as said by the doom.
// Connections accepted later are served normally, so a doomed pool looks
// like one left over from before a restart on the same port: the client
// still believes its idle connections alive, and it deterministically
// sends on one, which a real restart reaches only when it wins a race
// against the client noticing the close.
type doomer struct {
	net.Listener
	accepted atomic.Int64 // connections accepted, ever
	dropped  atomic.Int64 // requests killed by a doom

	mu    sync.Mutex // guards conns
	conns []*doomConn
}

func (d *doomer) Accept() (net.Conn, error) {
	c, err := d.Listener.Accept()
	if err != nil {
		return nil, err
	}
	d.accepted.Add(1)
	dc := &doomConn{Conn: c, d: d}
	d.mu.Lock()
	d.conns = append(d.conns, dc)
	d.mu.Unlock()
	return dc, nil
}

// doomAll dooms every connection accepted so far.
func (d *doomer) doomAll(how doom) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.doom.Store(int32(how))
	}
}

// closeAll closes every connection accepted so far, as a server that
// restarts or times idle connections out does: the client gets a FIN.
func (d *doomer) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		_ = c.Conn.Close()
	}
}

type doomConn struct {
	net.Conn
	d    *doomer
	doom atomic.Int32
}

func (c *doomConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	how := doom(c.doom.Load())
	if n == 0 || how == alive {
		return n, err
	}
	// The client reads EOF, or a reset when part of the request was still
	// unread at the close: both are what a request racing a real close
	// meets.
	if how == dropAfterByte {
		_, _ = c.Conn.Write([]byte("HTTP/1.1 200 OK\r\n"))
	}
	c.d.dropped.Add(1)
	_ = c.Conn.Close()
	return 0, io.EOF
}

// connLog records the connections a caller's requests got, through a
// ClientTrace of the caller's own: the Conn's trace must compose with it.
type connLog struct {
	mu  sync.Mutex
	got []httptrace.GotConnInfo
}

func (l *connLog) ctx(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			l.mu.Lock()
			l.got = append(l.got, info)
			l.mu.Unlock()
		},
	})
}

// resent reports whether the request went out on an idle connection and
// then again on a fresh one.
func (l *connLog) resent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.got) == 2 && l.got[0].Reused && l.got[0].WasIdle && !l.got[1].Reused
}

func (l *connLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := ""
	for _, info := range l.got {
		s += " " + map[bool]string{true: "reused", false: "fresh"}[info.Reused]
	}
	return "[" + s + " ]"
}

// hitDoomed calls echo after dooming every connection the server holds,
// until a call actually went out on one of them (the client puts a
// connection back into its pool a moment after the previous answer was
// read, so a call may dial instead). It returns the call's error, its
// connection log, and how many connections the server accepted during it.
func hitDoomed(ctx context.Context, t *testing.T, s *session, d *doomer, how doom) (error, *connLog, int64) {
	t.Helper()
	for range 20 {
		d.doomAll(how)
		dropped, accepted := d.dropped.Load(), d.accepted.Load()
		log := &connLog{}
		_, err := s.echo(log.ctx(ctx), "idle")
		if d.dropped.Load() > dropped {
			return err, log, d.accepted.Load() - accepted
		}
		if err != nil {
			t.Fatalf("echo on a fresh connection: %v", err)
		}
	}
	t.Fatal("no call went out on a doomed idle connection in 20 tries")
	return nil, nil, 0
}

// TestIdleConnNoResendAfterRead: the server read a request that went out
// on an idle keep-alive connection and closed the connection without a
// byte of answer. From the client this looks exactly like a server that
// closed the idle connection as the request went out, but the server may
// have run it: it is not resent (RFC 9110 §9.2.2), the call fails, and its
// error does not claim the request was not sent.
func TestIdleConnNoResendAfterRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	d := &doomer{}
	srv := httpserver.StartQuiet(t, httpserver.QuietOptions{Listener: func(ln net.Listener) net.Listener {
		d.Listener = ln
		return d
	}})
	s := connect(ctx, t, mcphttp.Spec{URL: srv.URL()})
	s.mustEcho(ctx, t, "before")

	for i := range 3 {
		err, log, accepted := hitDoomed(ctx, t, s, d, dropSilently)
		if err == nil {
			t.Fatalf("round %d: echo succeeded on a connection the server dropped after reading the request (connections %v)", i, log)
		}
		if mcphttp.IsNotSent(err) || errors.Is(err, mcphttp.ErrNotSent) {
			t.Errorf("round %d: IsNotSent(%v) = true for a request the server read", i, err)
		}
		if accepted != 0 || len(log.got) != 1 {
			t.Errorf("round %d: connections %v, %d accepted: want the one idle connection and no resend", i, log, accepted)
		}
		// The next call works: only the broken connection was lost.
		s.mustEcho(ctx, t, "after")
	}
}

// TestIdleConnNoResendAfterAnswer: once a byte of the answer came back the
// server got the request and may have run it: no resend, the caller gets
// the error.
func TestIdleConnNoResendAfterAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	d := &doomer{}
	srv := httpserver.StartQuiet(t, httpserver.QuietOptions{Listener: func(ln net.Listener) net.Listener {
		d.Listener = ln
		return d
	}})
	s := connect(ctx, t, mcphttp.Spec{URL: srv.URL()})
	s.mustEcho(ctx, t, "before")

	err, log, accepted := hitDoomed(ctx, t, s, d, dropAfterByte)
	if err == nil {
		t.Fatalf("echo succeeded on a connection that died mid-answer (connections %v)", log)
	}
	if mcphttp.IsNotSent(err) {
		t.Errorf("IsNotSent(%v) = true for a request the server read", err)
	}
	if accepted != 0 || len(log.got) != 1 {
		t.Errorf("connections %v, %d accepted: want the one idle connection and no resend", log, accepted)
	}
	// The next call works: only the broken connection was lost.
	s.mustEcho(ctx, t, "after")
}

// TestIdleConnRestart restarts a real server on the same port again and
// again, with a call on the same Conn right after each restart: the
// server's closes race the call for the idle connection, and no call may
// fail. (On 2026-07-28 a server keeps no session, so the old Conn goes on
// working.) The old server's FIN always arrives before the call: when
// net/http's read loop has not seen it yet, the idle check refuses the
// write and net/http resends. How many calls met a dead connection is
// logged; TestIdleConnClosedFirst shows it deterministically.
func TestIdleConnRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := httpserver.StartQuiet(t, httpserver.QuietOptions{})
	s := connect(ctx, t, mcphttp.Spec{URL: srv.URL()})
	s.mustEcho(ctx, t, "before")
	const restarts = 30
	resent := 0
	for i := range restarts {
		srv.Restart(t)
		log := &connLog{}
		if _, err := s.echo(log.ctx(ctx), "after"); err != nil {
			t.Fatalf("restart %d: echo: %v (connections %v)", i, err, log)
		}
		if log.resent() {
			resent++
		}
	}
	t.Logf("%d of %d calls right after a restart met a closed idle connection and were resent", resent, restarts)
}
