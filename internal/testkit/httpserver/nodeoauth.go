package httpserver

import (
	"os/exec"
	"strconv"
	"testing"
)

// NodeOAuth is the TypeScript SDK's example server
// (dist/esm/examples/server/simpleStreamableHttp.js) run with --oauth: the
// MCP server on one free port, and its demo authorization server on
// another, which approves every authorization at once and keeps its
// clients and tokens in memory: a restart forgets them all. The MCP server
// answers a token it cannot verify with HTTP 500, not 401.
type NodeOAuth struct {
	node, script   string
	port, authPort int
	procSlot
}

// StartNodeOAuth runs script (find it with npmtest.File) with node and
// --oauth, and waits until both servers listen; it kills them when the
// test ends.
func StartNodeOAuth(t testing.TB, node, script string) *NodeOAuth {
	t.Helper()
	port, err := freePort()
	if err == nil {
		var auth int
		if auth, err = freePort(); err == nil {
			n := &NodeOAuth{node: node, script: script, port: port, authPort: auth}
			n.allMarkers = true
			t.Cleanup(n.Stop)
			if err := n.start(); err != nil {
				t.Fatalf("httpserver: start %s --oauth: %v", script, err)
			}
			return n
		}
	}
	t.Fatalf("httpserver: free port: %v", err)
	return nil
}

// URL is the MCP endpoint, on localhost: the name the server gives itself
// in its metadata, which the resource a client asks tokens for must bind.
func (n *NodeOAuth) URL() string { return "http://localhost:" + strconv.Itoa(n.port) + "/mcp" }

// Restart kills both servers and starts them again on the same ports,
// having forgotten every client registration and token.
func (n *NodeOAuth) Restart(t testing.TB) {
	t.Helper()
	n.Stop()
	if err := n.start(); err != nil {
		t.Fatalf("httpserver: restart %s --oauth: %v", n.script, err)
	}
}

func (n *NodeOAuth) start() error {
	return n.procSlot.start(exec.Command(n.node, n.script, "--oauth"),
		[]string{"MCP_PORT=" + strconv.Itoa(n.port), "MCP_AUTH_PORT=" + strconv.Itoa(n.authPort)},
		[][]byte{[]byte("MCP Streamable HTTP Server listening on port"), []byte("OAuth Authorization Server listening on port")})
}
