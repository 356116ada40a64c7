package oauth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/netguard"
	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// maxRedirects bounds the same-origin redirects one request to an
// authorization server follows.
const maxRedirects = 5

// guard keeps discovery from being steered (SSRF): the URLs the MCP server
// names (its protected resource metadata, the authorization server, the
// endpoints in that one's metadata) reach the host's own machine or
// network only if the host itself configured something there. A loopback
// address, or a private one (see netguard.Private), is allowed only as far
// inside as the furthest inside of the hosts the host configured: the MCP
// server's, the pinned issuer's, the identity provider's. A server on
// localhost may so name an authorization server on localhost, over plain
// http too, which development needs; a server on the internet may name
// none on the host's network.
//
// Two checks apply it: checkURL on every URL before it is used (an IP
// address or localhost in it is judged as written), and, for the default
// HTTP client, control on every connection (a name is judged by the
// address it resolved to, so DNS cannot steer the client either). A host
// that brings its own client (WithHTTPClient) keeps checkURL and the
// same-origin redirect rule, and answers for its dialer itself; so does a
// host that goes through a proxy, whose own address is what is dialed.
type guard struct {
	hosts   []string // the hosts the host configured
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)

	mu    sync.Mutex // guards the fields below
	known bool
	inner netguard.Class
}

func newGuard(urls ...string) *guard {
	g := &guard{resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}}
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			g.hosts = append(g.hosts, u.Hostname())
		}
	}
	return g
}

// allowed returns how far inside the host's network the client may go:
// the furthest inside of the configured hosts, a name judged by the
// addresses it resolves to (once: only a name that does not resolve is
// tried again). It resolves nothing unless asked about an address that is
// not public.
func (g *guard) allowed(ctx context.Context) netguard.Class {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known {
		return g.inner
	}
	inner, final := netguard.Public, true
	for _, h := range g.hosts {
		c, known := netguard.HostClass(h)
		if !known {
			ips, err := g.resolve(ctx, h)
			if err != nil {
				final = false
				continue
			}
			for _, ip := range ips {
				c = max(c, netguard.IPClass(ip))
			}
		}
		inner = max(inner, c)
	}
	if final {
		g.known, g.inner = true, inner
	}
	return inner
}

// checkURL refuses a URL the MCP server named (what it is says which) that
// is not https, with plain http allowed only on a loopback host while
// loopback is allowed; or whose host is an address (or localhost) further
// inside than allowed. Its errors wrap ErrEndpointRefused.
func (g *guard) checkURL(ctx context.Context, what, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %s %q does not parse", ErrEndpointRefused, what, redact.URL(raw))
	}
	host := u.Hostname()
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !netguard.IsLoopback(host) {
			return fmt.Errorf("%w: %s %q is not https", ErrEndpointRefused, what, redact.URL(raw))
		}
	default:
		return fmt.Errorf("%w: %s %q has scheme %q", ErrEndpointRefused, what, redact.URL(raw), u.Scheme)
	}
	if host == "" {
		return fmt.Errorf("%w: %s %q has no host", ErrEndpointRefused, what, redact.URL(raw))
	}
	if c, known := netguard.HostClass(host); known && c > netguard.Public && c > g.allowed(ctx) {
		return fmt.Errorf("%w: %s %q is on a %s address, and the MCP server is not", ErrEndpointRefused, what, redact.URL(raw), c)
	}
	return nil
}

// control is the default client's dialer check: the address a connection
// goes to, once resolved, must not be further inside than allowed.
func (g *guard) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: dial %q: not an IP address", ErrEndpointRefused, address)
	}
	if c := netguard.IPClass(ip); c > netguard.Public && c > g.allowed(ctx) {
		return fmt.Errorf("%w: %s is a %s address, and the MCP server is not on one", ErrEndpointRefused, ip, c)
	}
	return nil
}

// client returns the HTTP client for the authorization server's requests:
// c with the same-origin redirect rule in front of its own, or, for nil, a
// client of its own with the dial check (unless a proxy is configured: its
// address is what is dialed), a timeout, and no idle connection kept.
func (g *guard) client(c *http.Client, probe string) *http.Client {
	if c != nil {
		cc := *c
		next := c.CheckRedirect
		cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if err := checkRedirect(req, via); err != nil {
				return err
			}
			if next != nil {
				return next(req, via)
			}
			return nil
		}
		return &cc
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if !proxied(probe) {
		dialer.ControlContext = g.control
	}
	return &http.Client{
		Timeout:       DefaultRequestTimeout,
		CheckRedirect: checkRedirect,
		// OAuth requests are few: no idle connection (and no goroutine of
		// one) outlives them.
		Transport: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			DialContext:       dialer.DialContext,
			DisableKeepAlives: true,
		},
	}
}

// proxied reports whether the environment sends requests for raw (or for
// an https URL elsewhere) through a proxy.
func proxied(raw string) bool {
	for _, s := range []string{raw, "https://authorization-server.invalid/"} {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && p != nil {
			return true
		}
	}
	return false
}

// checkRedirect follows a redirect only within the origin of the request
// it answers: metadata, registration and token requests carry the client's
// credentials, and a redirect elsewhere is how a server would steer them.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("oauth: stopped after %d redirects", maxRedirects)
	}
	if from, to := netguard.Origin(via[0].URL), netguard.Origin(req.URL); from != to {
		return fmt.Errorf("%w: redirect from %s to %s", ErrEndpointRefused, from, to)
	}
	return nil
}
