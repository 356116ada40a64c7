// Package generations is a fleet of MCP servers of every protocol
// generation, 2024-11-05 to 2026-07-28, from pinned releases of the
// TypeScript SDK, mcp-go and the official Go SDK, over stdio and HTTP
// (issue 27): its test has one Manager keep all of them, restarts each
// mid-run, and checks that every one recovers, calls, lists, and gets
// list_changed, and runs tasks where it offers them.
//
// A server "speaks only" a generation when it is a release whose newest
// protocol that generation is (the Manager asks for the newest and gets
// the server's), or, for 2026-07-28, which no release speaks alone, mcp-go
// v1.2.1 told to (it refuses the initialize handshake): Fleet says which.
//
// The TypeScript servers are one script (testdata/npm/generations) run on
// each SDK release, which testdata/npm/package.json pins under an alias
// ("sdk-1-0": 1.0.4). The Go servers of older releases are modules of
// their own under testdata/genservers, pinned in their go.mod and built
// with go build from the Go module proxy (the build cache keeps them);
// mcp-go v1.2.1's is cmd/modern of this module.
package generations

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// Member is one server of the fleet.
type Member struct {
	Name     string // "ts-1.0-sse"
	Protocol string // the protocol version the Manager must end up speaking with it
	Library  string // the release: "TypeScript SDK 1.0.4"
	// Transport is "stdio", "sse" (legacy HTTP+SSE) or "http" (Streamable
	// HTTP).
	Transport string
	// Told marks a server told to speak only Protocol, where no release
	// speaks only it.
	Told bool
	// ChecksNoSessionID marks a server that checks no session id (mcp-go
	// v0.32.0 over HTTP takes any well-formed one): its old session goes
	// on working on a restarted process, so a restart may be a blip the
	// runtime rides out, its stream opened again on the new process.
	ChecksNoSessionID bool
	// NPM is the TypeScript SDK's package name in testdata/npm, for the
	// TypeScript servers; Go names the Go server (a key of Build's
	// result) otherwise.
	NPM, Go string
}

// Fleet is every server of the fleet, oldest protocol first.
var Fleet = []Member{
	{Name: "ts-1.0-stdio", Protocol: "2024-11-05", Library: "TypeScript SDK 1.0.4", Transport: "stdio", NPM: "sdk-1-0"},
	{Name: "ts-1.0-sse", Protocol: "2024-11-05", Library: "TypeScript SDK 1.0.4", Transport: "sse", NPM: "sdk-1-0"},
	{Name: "ts-1.12-stdio", Protocol: "2025-03-26", Library: "TypeScript SDK 1.12.3", Transport: "stdio", NPM: "sdk-1-12"},
	{Name: "ts-1.12-http", Protocol: "2025-03-26", Library: "TypeScript SDK 1.12.3", Transport: "http", NPM: "sdk-1-12"},
	{Name: "mcpgo-0.32-stdio", Protocol: "2025-03-26", Library: "mcp-go v0.32.0", Transport: "stdio", Go: "mcpgo032"},
	{Name: "mcpgo-0.32-http", Protocol: "2025-03-26", Library: "mcp-go v0.32.0", Transport: "http", ChecksNoSessionID: true, Go: "mcpgo032"},
	{Name: "ts-1.22-stdio", Protocol: "2025-06-18", Library: "TypeScript SDK 1.22.0", Transport: "stdio", NPM: "sdk-1-22"},
	{Name: "ts-1.22-http", Protocol: "2025-06-18", Library: "TypeScript SDK 1.22.0", Transport: "http", NPM: "sdk-1-22"},
	{Name: "gosdk-1.1-stdio", Protocol: "2025-06-18", Library: "Go SDK v1.1.0", Transport: "stdio", Go: "gosdk110"},
	{Name: "gosdk-1.1-http", Protocol: "2025-06-18", Library: "Go SDK v1.1.0", Transport: "http", Go: "gosdk110"},
	{Name: "ts-1.32-stdio", Protocol: "2025-11-25", Library: "TypeScript SDK 1.32.2", Transport: "stdio", NPM: "@modelcontextprotocol/sdk"},
	{Name: "ts-1.32-http", Protocol: "2025-11-25", Library: "TypeScript SDK 1.32.2", Transport: "http", NPM: "@modelcontextprotocol/sdk"},
	{Name: "mcpgo-1.2-stdio", Protocol: "2026-07-28", Library: "mcp-go v1.2.1", Transport: "stdio", Told: true, Go: "modern"},
	{Name: "mcpgo-1.2-http", Protocol: "2026-07-28", Library: "mcp-go v1.2.1", Transport: "http", Told: true, Go: "modern"},
}

// nested are the Go servers that are modules of their own under
// testdata/genservers; "modern" is cmd/modern of this module.
var nested = []string{"mcpgo032", "gosdk110"}

// Root returns the module root, found from this source file's location.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Build builds the Go servers into dir, two at a time, and returns their
// executables by name (Member.Go). The go command fetches the older
// releases from the Go module proxy the first time and takes them from its
// caches after.
func Build(ctx context.Context, dir string) (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range append([]string{"modern"}, nested...) {
		bins[name] = filepath.Join(dir, name+exe())
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	g.Go(func() error {
		return goBuild(ctx, Root(), bins["modern"], "github.com/mcpfleet/mcpfleet/internal/testkit/generations/cmd/modern")
	})
	for _, name := range nested {
		g.Go(func() error {
			return goBuild(ctx, filepath.Join(Root(), "testdata", "genservers", name), bins[name], ".")
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return bins, nil
}

func goBuild(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("generations: go build %s in %s: %v\n%s", pkg, dir, err, b)
	}
	return nil
}

func exe() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}
