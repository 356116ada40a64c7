// Package process starts a test MCP server of package httpserver in a
// process of its own (cmd/httpserver), for benchmarks whose allocation
// figures must be the client's alone.
package process

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
)

// Server is a test server in a process of its own.
type Server struct {
	url  string
	stop func()
}

// URL is the server's endpoint.
func (s *Server) URL() string { return s.url }

// Stop ends the server's process and waits for it. It is safe to call
// more than once.
func (s *Server) Stop() { s.stop() }

// Start builds cmd/httpserver (from the build cache after the first time)
// into a temporary directory and starts a server of kind. The server ends
// with the test at the latest: its stdin is closed and it is waited for.
func Start(tb testing.TB, kind httpserver.Kind) *Server {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "httpserver")
	if out, err := exec.Command("go", "build", "-o", bin,
		"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver/cmd/httpserver").CombinedOutput(); err != nil {
		tb.Fatalf("process: go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-kind", kind.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	stop := sync.OnceFunc(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	tb.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("process: %s printed no URL: %v", kind, err)
	}
	return &Server{url: strings.TrimSpace(line), stop: stop}
}
