package http

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
)

// errPeerClosed is why trackedConn refuses to write a request: the server
// had closed the idle keep-alive connection before the request went out.
var errPeerClosed = errors.New("http: server closed the idle connection before the request")

// trackedConn is a connection of the Conn's own pool. It makes "the server
// never got this request" provable where it can be: before the first byte
// of a request goes out on a connection that sat idle in the pool, it looks
// (without consuming anything) whether the server already closed its side.
// If so, the server closed the connection before our request existed for
// it (a restart on the same port, an idle timeout), and the write fails
// without a byte written. net/http then reports a nothing-written error and
// sends the request again on another connection by itself, for any method:
// see (*persistConn).shouldRetryRequest in net/http/transport.go (Go 1.26),
//
//	if _, ok := err.(nothingWrittenError); ok {
//		// We never wrote anything, so it's safe to retry, if there's no body or we
//		// can "rewind" the body with GetBody.
//		return req.outgoingLength() == 0 || req.GetBody != nil
//	}
//
// which comes before its refusal to retry non-idempotent requests, and
// applies to reused connections only. (mcp-go builds its requests over a
// bytes.Reader, so GetBody is set.) The error is a nothingWrittenError
// because the request's bytes are counted in pc.nwrite only when the
// net.Conn accepted them (persistConnWriter), and writeLoop and
// mapRoundTripError compare that count with the one before the write.
//
// Once the request was written, no such proof exists: a server that read
// the request, ran it and then closed the connection without answering
// looks, from here, exactly like one that closed the idle connection as
// the request went out. Such a request stays lost (RFC 9110 §9.2.2: a
// client must not retry a non-idempotent request automatically unless it
// knows the request was not applied).
//
// Writes are counted too, per request: a request whose write failed with
// nothing written is not sent (see attempt).
//
// Only HTTP/1 connections are checked: an HTTP/2 connection carries
// concurrent streams, and its own GOAWAY handling covers a server that
// closes it on purpose.
type trackedConn struct {
	net.Conn
	check   atomic.Bool  // look for the server's close before the next write
	written atomic.Int64 // bytes written since the current request got the connection
}

// dialFunc is the type of http.Transport.DialContext.
type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// dialTracked wraps dial's connections in trackedConns.
func dialTracked(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &trackedConn{Conn: c}, nil
	}
}

// tracked returns the trackedConn under an HTTP/1 connection that
// httptrace's GotConn reports, or nil.
func tracked(c net.Conn) *trackedConn {
	if tc, ok := c.(*tls.Conn); ok {
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			return nil
		}
		c = tc.NetConn()
	}
	t, _ := c.(*trackedConn)
	return t
}

// begin says that a request got the connection; reused says it sat idle
// in the pool before. It runs before the request is handed to net/http's
// write loop, which orders it before the request's writes.
func (c *trackedConn) begin(reused bool) {
	c.written.Store(0)
	c.check.Store(reused)
}

// wrote returns the bytes of the current request written so far.
func (c *trackedConn) wrote() int64 { return c.written.Load() }

func (c *trackedConn) Write(p []byte) (int, error) {
	if c.check.Swap(false) && peerClosed(c.Conn) {
		return 0, &net.OpError{Op: "write", Net: c.LocalAddr().Network(),
			Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errPeerClosed}
	}
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}
