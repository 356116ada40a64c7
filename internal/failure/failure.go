// Package failure classifies the errors of a request by what they prove,
// for every transport alike: whether a context ended, whether the request
// provably never left, whether the connection under it broke. What only
// one transport can tell (an HTTP session the server forgot, a request the
// HTTP transport knows it never wrote) is that transport's own, and a Conn
// reports it itself.
//
// Only types and wrapped values decide, never an error's text.
package failure

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/mark3labs/mcp-go/client/transport"
)

// Context reports whether err comes from a context ending. mcp-go wraps
// those in *transport.Error too, so callers check this first.
func Context(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// NeverSent reports whether err proves the request never reached the
// server: the connection was refused, the name did not resolve, or the
// dial failed. A context error is not such proof: it is the caller's own
// answer.
func NeverSent(err error) bool {
	if err == nil || Context(err) {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// Broken reports whether err says the connection under the request is
// unusable: it ended (EOF, reset, a broken pipe, a closed socket), a
// network error that is not a timeout, or mcp-go's transport was closed.
// Context errors are not: the connection may be fine.
func Broken(err error) bool {
	if err == nil || Context(err) {
		return false
	}
	if NeverSent(err) || errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && !netErr.Timeout()
}

// Exhausted reports whether err says the host ran out of something it
// needs to start or reach a server: file descriptors (EMFILE: the
// process's own limit, RLIMIT_NOFILE; ENFILE: the system's), processes or
// threads (EAGAIN from fork: RLIMIT_NPROC or the system's limit), or
// memory (ENOMEM). Such a failure says nothing about the server, and the
// same attempt can succeed once the host has let go of what it holds: it
// is transient, and a dial that fails with it is retried on its backoff
// like any other. Context errors are not.
func Exhausted(err error) bool {
	if err == nil || Context(err) {
		return false
	}
	for _, e := range exhausted {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// exhausted are the errors Exhausted looks for: the POSIX ones, which
// every OS's syscall package names, and the OS's own (exhaustedOS).
var exhausted = append([]error{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.ENOMEM}, exhaustedOS...)
