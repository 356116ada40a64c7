package npmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Package returns the absolute directory of a package the pinned npm
// packages install (for example "@modelcontextprotocol/sdk"), failing the
// test under CI and skipping it elsewhere when it is missing, as Bin does.
func Package(t testing.TB, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		missing(t, "node is not on PATH")
	}
	p := filepath.Join(Root(), Dir, "node_modules", filepath.FromSlash(name))
	if _, err := os.Stat(filepath.Join(p, "package.json")); err != nil {
		missing(t, name+" is not installed")
	}
	return p
}
