// Package process starts a test MCP server of package httpserver in a
// process of its own (cmd/httpserver), for benchmarks whose allocation
// figures must be the client's alone.
package process

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
)

// Start builds cmd/httpserver (from the build cache after the first time)
// into a temporary directory, starts a server of kind and returns its
// URL. The server ends with the test: its stdin is closed and it is
// waited for.
func Start(tb testing.TB, kind httpserver.Kind) string {
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
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("process: %s printed no URL: %v", kind, err)
	}
	return strings.TrimSpace(line)
}
