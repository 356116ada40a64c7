//go:build linux

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
)

// freePort returns a port nothing listens on, for a callback.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestHostAuth authorizes two OAuth servers through the auth command: one
// whose browser redirect comes back to the host's loopback listener, one on
// a "headless" host where the user pastes the redirect URL. The tokens go
// to the -tokens file.
func TestHostAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := oauthtest.Start(t, oauthtest.Options{})
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	writeConfig(t, path, map[string]any{
		"desk": map[string]any{"url": srv.URL(), "oauth": map[string]any{"callbackPort": freePort(t)}},
		"ssh":  map[string]any{"url": srv.URL(), "oauth": map[string]any{"callbackPort": freePort(t)}},
	})
	stdin, in := io.Pipe()
	out := newLineLog()
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"-config", path, "-tokens", filepath.Join(dir, "tokens.json")}, stdin, out)
	}()
	h := &driver{t: t, ctx: ctx, in: in, out: out}
	h.expectEvent(" desk Connecting -> NeedsAuthorization", "auth desk")
	h.expectEvent(" ssh Connecting -> NeedsAuthorization", "auth ssh")

	authURL := func() string {
		t.Helper()
		h.expect("auth: open this URL to authorize")
		h.wait("the URL", func(l string) bool { return strings.Contains(l, "/authorize?") })
		line, _ := h.find(func(l string) bool { return strings.Contains(l, "/authorize?") })
		return strings.TrimSpace(line)
	}

	// The desktop way: the browser follows the redirect to the loopback
	// listener.
	h.send("auth desk")
	redirect, err := oauthtest.Approve(ctx, authURL())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(redirect)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the loopback page answered HTTP %d", resp.StatusCode)
	}
	h.expect("auth: desk authorized")
	h.expectEvent(" desk Connecting -> Connected (generation 1)")

	// The headless way: the user pastes the redirect URL.
	h.send("auth ssh")
	redirect, err = oauthtest.Approve(ctx, authURL())
	if err != nil {
		t.Fatal(err)
	}
	h.send("auth ssh " + redirect)
	h.expect("auth: ssh authorized")
	h.expectEvent(" ssh Connecting -> Connected (generation 1)")

	h.send(`call ssh__echo {"message":"hi"}`)
	h.expect("call ssh__echo: ok")
	h.send("quit")
	if err := <-errc; err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	in.Close()
	if strings.Contains(out.String(), "code=") {
		t.Errorf("an authorization code was printed:\n%s", out)
	}
}
