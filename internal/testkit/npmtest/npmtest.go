// Package npmtest finds the third-party MCP servers that tests run against,
// installed from the npm registry by `make test` (npm ci in testdata/npm).
package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is the npm project that pins the third-party test servers, relative
// to the module root.
const Dir = "testdata/npm"

// Root returns the module root, found from this source file's location.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Bin returns the absolute path of an executable that the pinned npm
// packages install (for example "mcp-server-everything"). When it is missing
// the test fails under CI (CI is set) and is skipped elsewhere, with the
// command that installs it.
func Bin(t testing.TB, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "node is not on PATH")
	}
	p := filepath.Join(Root(), Dir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		missing(t, name+" is not installed")
	}
	return p
}

func missing(t testing.TB, why string) {
	t.Helper()
	msg := why + "; install the test servers with: npm ci --prefix " + Dir + " (make test does it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// File returns the absolute path of a file the pinned npm packages
// install, rel being its path under node_modules (for example
// "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleTaskInteractive.js"),
// and of node to run it with. When either is missing the test fails under
// CI and is skipped elsewhere, as with Bin.
func File(t testing.TB, rel string) (node, path string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	p := filepath.Join(Root(), Dir, "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		missing(t, rel+" is not installed")
	}
	return node, p
}
