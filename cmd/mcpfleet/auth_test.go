package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

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

// browse plays the user's browser, which opens apart from the command (the
// command serves the redirect only once the browser is on its way): it
// approves at the authorization URL and follows the redirect to the
// loopback listener.
func browse(t *testing.T) func(string) error {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	return func(url string) error {
		wg.Go(func() {
			redirect, err := oauthtest.Approve(context.Background(), url)
			if err != nil {
				t.Errorf("approve: %v", err)
				return
			}
			resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(redirect)
			if err != nil {
				t.Errorf("the redirect: %v", err)
				return
			}
			resp.Body.Close()
		})
		return nil
	}
}

// TestAuth: a server that needs OAuth shows in status with the command
// that authorizes it; auth runs the loopback flow (here with a test
// browser) directly from the config, and through a running serve, whose
// server then connects. The tokens land in the state directory, where the
// next command finds them; no output shows a code or a token.
func TestAuth(t *testing.T) {
	old := openBrowser
	openBrowser = browse(t)
	t.Cleanup(func() { openBrowser = old })
	srv := oauthtest.Start(t, oauthtest.Options{})
	c := newCLI(t)
	c.writeConfig(map[string]any{
		"desk": map[string]any{"url": srv.URL(), "oauth": map[string]any{"callbackPort": freePort(t)}},
		"lab":  map[string]any{"url": srv.URL(), "oauth": map[string]any{"callbackPort": freePort(t)}},
	})
	code, out, errOut := c.run("status", "--wait", "2m")
	if code != exitOK || !strings.Contains(out, "NeedsAuthorization") || !strings.Contains(out, "authorize: mcpfleet auth desk") {
		t.Fatalf("status before: %d\n%s%s", code, out, errOut)
	}

	// Directly from the config: the tokens are kept for the next command.
	code, out, errOut = c.run("auth", "desk")
	if code != exitOK || out != "desk is authorized\n" {
		t.Fatalf("auth desk: %d %q %q", code, out, errOut)
	}
	code, out, errOut = c.run("call", "desk__echo", `{"message":"hi"}`)
	if code != exitOK || out != "hi\n" {
		t.Fatalf("a call with the kept tokens: %d %q %q", code, out, errOut)
	}

	// Through a running serve, at once: its server connects once
	// authorized (the authorization waits for the serve's first dial to
	// end; see gateway.Authorize).
	s := c.startServe()
	code, out, errOut = c.run("auth", "lab")
	if code != exitOK || out != "lab is authorized\n" {
		t.Fatalf("auth lab through the serve: %d %q %q\n%s", code, out, errOut, s.Logs())
	}
	s.waitLogs(t, `server connected" server=lab`)
	code, out, _ = c.run("status")
	if code != exitOK || strings.Contains(out, "NeedsAuthorization") {
		t.Fatalf("status after: %d\n%s", code, out)
	}
	for _, leak := range []string{"code=", "access_token", "refresh_token"} {
		if strings.Contains(s.Logs()+out+errOut, leak) {
			t.Errorf("%q shows:\n%s", leak, s.Logs())
		}
	}
}
