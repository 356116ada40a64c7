package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/tsclient"
)

// writeTeamConfig writes a team's config: the servers, and the policy if
// it is not nil.
func (c *cli) writeTeamConfig(servers map[string]any, policy any) {
	c.t.Helper()
	doc := map[string]any{"mcpServers": servers}
	if policy != nil {
		doc["policy"] = policy
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeConfigBytes(b)
}

// TestServeTeam: serve --http --auth-issuer serves a team: a request
// without a token gets 401 naming the resource metadata, a token of the
// issuer for the served URL gets its identity's fleet, and an edit of the
// config's policy reaches the session already open (list_changed, then the
// call is denied, naming the rule).
func TestServeTeam(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Options{JWT: true})
	c := newCLI(t)
	servers := map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)}
	c.writeTeamConfig(servers, map[string]any{"rules": []any{map[string]any{"name": "all", "identities": []string{"*"}}}})
	s := c.startServe("--auth-issuer", as.Issuer(), "--watch-interval", "20ms")

	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, "resource_metadata=") {
		t.Fatalf("no token: HTTP %d, WWW-Authenticate %q", resp.StatusCode, ch)
	}

	tok := as.Mint(t, map[string]any{"sub": "alice", "aud": s.url})
	d := tsclient.StartHTTPWithToken(t, s.url, tok)
	ctx := testCtx(t)
	if names, err := d.ListTools(ctx); err != nil || !slices.Contains(names, "one__echo") {
		t.Fatalf("alice's tools: %v %v", names, err)
	}
	if res, err := d.Call(ctx, "one__echo", map[string]any{"text": "hi"}); err != nil || res.Text() != "hi" {
		t.Fatalf("alice's call: %+v %v", res, err)
	}

	start := time.Now()
	c.writeTeamConfig(servers, map[string]any{"rules": []any{map[string]any{"name": "no echo", "identities": []string{"*"},
		"tools": map[string]any{"deny": []string{"echo"}}}}})
	for {
		e, ok := <-d.Events
		if !ok {
			t.Fatalf("the client exited:\n%s", d.Stderr())
		}
		if e != "tools/list_changed" {
			continue
		}
		if names, err := d.ListTools(ctx); err == nil && !slices.Contains(names, "one__echo") {
			break
		}
	}
	t.Logf("the edit reached the open session in %v", time.Since(start))
	if _, err := d.Call(ctx, "one__echo", map[string]any{"text": "hi"}); err == nil || !strings.Contains(err.Error(), `denied`) ||
		!strings.Contains(err.Error(), `rule "no echo"`) {
		t.Fatalf("a call of the tool the edit closed: %v", err)
	}
	s.waitLogs(t, "policy applied")
	s.waitLogs(t, "policy: denied")
}

// TestServeTeamAPIKeys: serve --api-keys takes the keys of a 0600 file,
// reads it again when it changes, and refuses one others can read.
func TestServeTeamAPIKeys(t *testing.T) {
	c := newCLI(t)
	c.writeTeamConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)}, nil)
	keys := filepath.Join(t.TempDir(), "keys.json")
	alice, bob := strings.Repeat("a", 32), strings.Repeat("b", 32)
	write := func(entries string) {
		if err := os.WriteFile(keys+".tmp", []byte(`{"keys": [`+entries+`]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(keys+".tmp", keys); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf(`{"identity": "alice", "key": %q}`, alice))
	s := c.startServe("--api-keys", keys, "--watch-interval", "20ms")
	d := tsclient.StartHTTPWithToken(t, s.url, alice)
	if res, err := d.Call(testCtx(t), "one__echo", map[string]any{"text": "hi"}); err != nil || res.Text() != "hi" {
		t.Fatalf("alice's call: %+v %v", res, err)
	}
	if _, err := tsclient.TryHTTPWithToken(t, s.url, bob); err == nil {
		t.Fatal("bob connected before he had a key")
	}
	write(fmt.Sprintf(`{"identity": "alice", "key": %q}, {"identity": "bob", "key": %q}`, alice, bob))
	s.waitLogs(t, "api keys: reloaded")
	tsclient.StartHTTPWithToken(t, s.url, bob)

	if err := os.Chmod(keys, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := c.run("serve", "--http", "127.0.0.1:0", "--api-keys", keys)
	if code == exitOK || !strings.Contains(errOut, "readable by others") {
		t.Fatalf("serve with a key file others can read: %d %s", code, errOut)
	}
}

// TestServeTeamFlags: the team's flags are checked against serve's others.
func TestServeTeamFlags(t *testing.T) {
	c := newCLI(t)
	c.writeTeamConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)}, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--auth-issuer", "https://idp.example.com"}, "give --http ADDR"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "https://idp.example.com", "--no-auth"}, "drop --token and --no-auth"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-audience", "https://gw.example.com/mcp"}, "needs --auth-issuer"},
		{[]string{"serve", "--http", "0.0.0.0:0", "--auth-issuer", "https://idp.example.com"}, "needs TLS"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-issuer", "http://idp.example.com"}, "is not https"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--separator", "::"}, "--separator"},
	} {
		code, _, errOut := c.run(tc.args...)
		if code == exitOK || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}
