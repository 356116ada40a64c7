package failure_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/failure"
)

// What a request's error proves decides whether it may be sent again: a
// refused connection never reached the server; a connection that broke
// after the request went out may have run it.
func Example() {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	broke := fmt.Errorf("reading the answer: %w", io.ErrUnexpectedEOF)
	for _, err := range []error{refused, broke, context.DeadlineExceeded} {
		fmt.Printf("never sent %v, broken %v, a context %v\n",
			failure.NeverSent(err), failure.Broken(err), failure.Context(err))
	}
	// Output:
	// never sent true, broken true, a context false
	// never sent false, broken true, a context false
	// never sent false, broken false, a context true
}
