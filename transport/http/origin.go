package http

import (
	"fmt"
	nethttp "net/http"
	"net/url"

	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

// maxRedirects bounds the same-origin redirects one request follows.
const maxRedirects = 5

// origin returns u's origin: what the Authorizer's credentials and the
// spec's headers are bound to.
func origin(u *url.URL) string { return netguard.Origin(u) }

// checkRedirect is the redirect policy of a Conn's requests: a redirect is
// followed only within the origin of the request it answers, so that the
// credentials on it (the Authorizer's token, the spec's headers, which
// net/http copies onto the next request, and the body) never reach another
// origin, and never go over plain http after https. A redirect elsewhere
// fails the request with ErrCrossOriginRedirect.
func checkRedirect(req *nethttp.Request, via []*nethttp.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("http: stopped after %d redirects", maxRedirects)
	}
	from, to := origin(via[0].URL), origin(req.URL)
	if from != to {
		// Origins only: the target's query may hold what the server put
		// there for someone else.
		return fmt.Errorf("%w: from %s to %s", ErrCrossOriginRedirect, from, to)
	}
	return nil
}

// sameOrigin reports whether req goes to the server's origin, the only one
// the Authorizer's credentials are for.
func (c *Conn) sameOrigin(req *nethttp.Request) bool { return origin(req.URL) == c.origin }
