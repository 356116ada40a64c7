// Package netguard says where a URL points, for the rules that keep
// credentials at home: the origin a credential is bound to, and how far
// inside the host's network an address is (public, private, loopback), so
// that a server named by a remote party cannot steer the client at the
// host's own machine or network (SSRF).
package netguard

import (
	"net/netip"
	"net/url"
	"strings"
)

// Origin returns u's origin (RFC 6454): scheme, host and port, the port
// spelled out, in lower case. Credentials are bound to it.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// Class is how far inside the host's network an address is. The order
// matters: a higher class is further inside.
type Class int

const (
	// Public is an address on the internet, or a name (which the class of
	// the addresses it resolves to decides at dial time).
	Public Class = iota
	// Private is an address of a private or otherwise non-public network:
	// RFC 1918 and RFC 4193, link-local (the cloud metadata endpoint
	// 169.254.169.254 among them), carrier-grade NAT, multicast, the
	// unspecified address. It is the official Go SDK's IsPrivateOrReserved.
	Private
	// Loopback is this machine: a loopback address, or exactly the name
	// localhost.
	Loopback
)

// String returns "public", "private" or "loopback".
func (c Class) String() string {
	switch c {
	case Private:
		return "private"
	case Loopback:
		return "loopback"
	}
	return "public"
}

// cgnat is RFC 6598's carrier-grade NAT range, which netip's IsPrivate
// does not cover.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// IPClass returns ip's class.
func IPClass(ip netip.Addr) Class {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return Loopback
	case !ip.IsValid(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast(), ip.IsUnspecified(), cgnat.Contains(ip):
		return Private
	}
	return Public
}

// HostClass returns the class of a URL's host (as url.URL.Hostname gives
// it): an IP address's, Loopback for localhost, Public for any other name.
// known is false for a name other than localhost: only resolving it tells.
// A name merely starting with "127." is a name.
func HostClass(host string) (c Class, known bool) {
	if strings.EqualFold(host, "localhost") {
		return Loopback, true
	}
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return Public, false
	}
	return IPClass(ip.WithZone("")), true
}

// IsLoopback reports whether host is a loopback address or exactly
// localhost: the hosts where plain http is acceptable for development.
func IsLoopback(host string) bool {
	c, known := HostClass(host)
	return known && c == Loopback
}
