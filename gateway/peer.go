package gateway

import (
	"context"
	"net"
	"net/http"
)

// peer is who sent a downstream HTTP request, as the HTTP front found it
// before mcp-go saw the request. Set at creation, read-only.
type peer struct {
	// client names the client for the per-client limits and caps: its
	// credential when it showed one ("token", or "cert <subject>" for a
	// TLS client certificate), else its network address ("addr <ip>").
	client string
	// addr is the remote host (an IP address, no port).
	addr string
	// conn is the remote address with its port: the connection the
	// request came on. A cancellation holds only on it (see cancels).
	conn string
}

// peerKey carries the *peer in the context of an HTTP request.
type peerKey struct{}

// peerFrom returns the peer of the downstream HTTP request in ctx; nil for
// a request that did not come over the gateway's HTTP front (stdio, an
// in-process client).
func peerFrom(ctx context.Context) *peer {
	p, _ := ctx.Value(peerKey{}).(*peer)
	return p
}

// set makes p the peer of r; token says whether r was authenticated by
// the bearer token.
func (p *peer) set(r *http.Request, token bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	p.addr, p.conn = host, r.RemoteAddr
	switch id := IdentityFrom(r.Context()); {
	case id != nil:
		// A Team's request: its credential named who it is.
		p.client = "id " + id.ID
	case token:
		// Whoever holds the token is one principal: the token names no one
		// in particular, so all who show it share one client's limits.
		p.client = "token"
	case r.TLS != nil && len(r.TLS.PeerCertificates) > 0:
		p.client = "cert " + r.TLS.PeerCertificates[0].Subject.String()
	default:
		p.client = "addr " + host
	}
}
