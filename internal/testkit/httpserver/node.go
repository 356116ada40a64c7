package httpserver

import (
	"os/exec"
	"strconv"
	"testing"
)

// Node runs a server script of the pinned npm packages with node (an
// example server of @modelcontextprotocol/sdk, say), or any server
// program (StartProgram), in its own process group, on a free port of
// 127.0.0.1 that it is given in PORT and MCP_PORT (the examples read one
// or the other); the port stays across restarts.
type Node struct {
	path    string
	args    []string
	port    int
	markers [][]byte
	procSlot
}

// StartNode runs script with node, and waits until it prints one of
// markers (the line that says it listens); it kills it when the test ends.
// Find node and the script with npmtest.File.
func StartNode(t testing.TB, node, script string, markers ...string) *Node {
	t.Helper()
	return StartProgram(t, node, []string{script}, markers...)
}

// StartProgram runs the program at path with args as StartNode runs a
// script, and waits until it prints one of markers; it kills it when the
// test ends.
func StartProgram(t testing.TB, path string, args []string, markers ...string) *Node {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("httpserver: free port: %v", err)
	}
	n := &Node{path: path, args: args, port: port}
	for _, m := range markers {
		n.markers = append(n.markers, []byte(m))
	}
	t.Cleanup(n.Stop)
	if err := n.start(); err != nil {
		t.Fatalf("httpserver: start %s %v: %v", path, args, err)
	}
	return n
}

// URL returns the server's endpoint at path ("/mcp").
func (n *Node) URL(path string) string { return "http://127.0.0.1:" + strconv.Itoa(n.port) + path }

// Addr returns the server's host:port.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// Restart kills the server and starts it again on the same port.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	n.Stop()
	if err := n.start(); err != nil {
		t.Fatalf("httpserver: restart %s %v on port %d: %v", n.path, n.args, n.port, err)
	}
}

func (n *Node) start() error {
	port := strconv.Itoa(n.port)
	return n.procSlot.start(exec.Command(n.path, n.args...), []string{"PORT=" + port, "MCP_PORT=" + port}, n.markers)
}
