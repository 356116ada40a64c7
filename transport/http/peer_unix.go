//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package http

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the server has closed its side of c: a FIN
// (or a reset) arrived and nothing is left unread. It consumes nothing and
// does not block.
//
// It runs the peek through RawConn.Control, not RawConn.Read: net/http's
// read loop holds the descriptor's read lock while it sits in Peek waiting
// for the next response, and Control takes no lock but a reference.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		var buf [1]byte
		for {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case err == nil:
				// 0 bytes and no error: end of stream, the server's FIN.
				// Anything unread (a 408, say) leaves it to net/http.
				closed = n == 0
			default:
				// EAGAIN: open, nothing to read. A reset: the server is
				// gone as well.
				closed = errors.Is(err, syscall.ECONNRESET)
			}
			return
		}
	})
	return err == nil && closed
}
