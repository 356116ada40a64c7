package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

func TestClassification(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		name                     string
		err                      error
		context, neverSent, brok bool
	}{
		{"nil", nil, false, false, false},
		{"canceled", context.Canceled, true, false, false},
		{"deadline, wrapped by mcp-go", transport.NewError(context.DeadlineExceeded), true, false, false},
		{"refused", transport.NewError(refused), false, true, true},
		{"no such host", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}, false, true, true},
		{"reset", transport.NewError(reset), false, false, true},
		{"EOF", fmt.Errorf("read: %w", io.EOF), false, false, true},
		{"broken pipe", syscall.EPIPE, false, false, true},
		{"transport closed", transport.ErrTransportClosed, false, false, true},
		{"read timeout", timeout, false, false, false},
		{"a server's answer", errors.New("method not found"), false, false, false},
		// A context error decides even with a network error beside it.
		{"canceled dial", errors.Join(context.Canceled, refused), true, false, false},
	} {
		if got := Context(c.err); got != c.context {
			t.Errorf("%s: Context = %v", c.name, got)
		}
		if got := NeverSent(c.err); got != c.neverSent {
			t.Errorf("%s: NeverSent = %v", c.name, got)
		}
		if got := Broken(c.err); got != c.brok {
			t.Errorf("%s: Broken = %v", c.name, got)
		}
	}
}

// TestExhausted: running out of file descriptors, processes or memory, at
// whichever step of a spawn or a connect, is told apart from everything
// else by the wrapped errno alone, never by the text; a context error
// beside it still decides.
func TestExhausted(t *testing.T) {
	pipe := os.NewSyscallError("pipe2", syscall.EMFILE)
	fork := &os.PathError{Op: "fork/exec", Path: "/usr/bin/server", Err: syscall.EAGAIN}
	socket := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"pipe: EMFILE", fmt.Errorf("dial: pipe: %w", pipe), true},
		{"fork/exec: EAGAIN (RLIMIT_NPROC)", fmt.Errorf("start: %w", fork), true},
		{"fork/exec: ENOMEM", &os.PathError{Op: "fork/exec", Path: "/usr/bin/server", Err: syscall.ENOMEM}, true},
		{"system file table full", os.NewSyscallError("pipe2", syscall.ENFILE), true},
		{"socket: EMFILE", transport.NewError(socket), true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{"not found", &os.PathError{Op: "fork/exec", Path: "/nope", Err: syscall.ENOENT}, false},
		{"EOF", io.EOF, false},
		{"only the text", errors.New("too many open files"), false},
		{"canceled while out of files", errors.Join(context.Canceled, pipe), false},
	} {
		if got := Exhausted(c.err); got != c.want {
			t.Errorf("%s: Exhausted(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	// A dial that failed for lack of a socket also never reached the
	// server, so a request on it is safe to send again.
	if !NeverSent(socket) {
		t.Errorf("NeverSent(%v) = false", socket)
	}
}
