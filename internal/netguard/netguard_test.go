package netguard_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

func TestHostClass(t *testing.T) {
	for _, tc := range []struct {
		host  string
		class netguard.Class
		known bool
	}{
		{"localhost", netguard.Loopback, true},
		{"LOCALHOST", netguard.Loopback, true},
		{"127.0.0.1", netguard.Loopback, true},
		{"127.8.9.10", netguard.Loopback, true},
		{"::1", netguard.Loopback, true},
		{"::ffff:127.0.0.1", netguard.Loopback, true},
		{"127.attacker.example", netguard.Public, false},
		{"localhost.attacker.example", netguard.Public, false},
		{"10.1.2.3", netguard.Private, true},
		{"192.168.0.1", netguard.Private, true},
		{"169.254.169.254", netguard.Private, true},
		{"100.64.0.1", netguard.Private, true},
		{"fd00::1", netguard.Private, true},
		{"fe80::1%eth0", netguard.Private, true},
		{"0.0.0.0", netguard.Private, true},
		{"93.184.216.34", netguard.Public, true},
		{"mcp.example.com", netguard.Public, false},
	} {
		c, known := netguard.HostClass(tc.host)
		if c != tc.class || known != tc.known {
			t.Errorf("HostClass(%q) = %v, %v; want %v, %v", tc.host, c, known, tc.class, tc.known)
		}
	}
	if netguard.IsLoopback("127.attacker.example") {
		t.Error("a name starting with 127. counts as loopback")
	}
}

func TestOrigin(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"http://127.0.0.1/mcp", "HTTP://127.0.0.1:80/other?x=1"},
		{"https://Example.com/", "https://example.com:443/x"},
		{"http://[::1]:8/a", "http://[::1]:8/b"},
	} {
		ua, _ := url.Parse(tc.a)
		ub, _ := url.Parse(tc.b)
		if netguard.Origin(ua) != netguard.Origin(ub) {
			t.Errorf("Origin(%s) = %s, Origin(%s) = %s; want equal", tc.a, netguard.Origin(ua), tc.b, netguard.Origin(ub))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"http://127.0.0.1:1/", "http://localhost:1/"},
		{"https://h/", "http://h:443/"},
		{"http://h:1/", "http://h:2/"},
	} {
		ua, _ := url.Parse(tc.a)
		ub, _ := url.Parse(tc.b)
		if netguard.Origin(ua) == netguard.Origin(ub) {
			t.Errorf("Origin(%s) == Origin(%s)", tc.a, tc.b)
		}
	}
}

func ExampleOrigin() {
	u, _ := url.Parse("https://MCP.example.com/mcp?api_key=x")
	fmt.Println(netguard.Origin(u))
	// Output: https://mcp.example.com:443
}
