package oauth

import (
	"context"
	"net/netip"
)

// SetResolver replaces how a's discovery guard resolves the names of the
// hosts the host configured (the server's, the pinned issuer's), so that
// tests need no DNS.
func SetResolver(a *Authorizer, resolve func(ctx context.Context, host string) ([]netip.Addr, error)) {
	a.guard.resolve = resolve
}

// DialCheck runs the default client's dial check on address (host:port,
// the host an IP address), as a connection to it would.
func DialCheck(ctx context.Context, a *Authorizer, address string) error {
	return a.guard.control(ctx, "tcp", address, nil)
}
