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
