package http

import (
	"context"
	"net"
)

// WithDialWrap wraps the Conn pool's dial function (under the connection
// tracking) so that tests can hold dials and reads. A wrapped connection
// must implement syscall.Conn for the idle check to see its descriptor.
func WithDialWrap(wrap func(func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(o *options) { o.wrapDial = wrap }
}

// The classifications a Conn makes of its transport's errors, for the
// tests of the external package; the Manager reaches them through
// transport.Classifier.
var (
	IsNotSent             = isNotSent
	IsStaleSession        = isStaleSession
	IsTransportFatal      = isTransportFatal
	IsUnsupportedProtocol = isUnsupportedProtocol
)
