package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/texttable"
	"github.com/mcpfleet/mcpfleet/store"
)

// faultEntry is a config entry running the fault server in mode, with
// extra environment.
func faultEntry(mode string, env map[string]string) map[string]any {
	inv := faultserver.Command(mode)
	e := map[string]string{}
	for k, v := range inv.Env {
		e[k] = v
	}
	for k, v := range env {
		e[k] = v
	}
	return map[string]any{"command": inv.Path, "args": inv.Args, "env": e}
}

// Secrets the config holds, which no output may show.
const (
	envSecret    = "ENV-SECRET-5d41402abc"
	headerSecret = "HEADER-SECRET-7d793037a0"
)

// secretConfig is a fleet with secrets in it: an env value of a stdio
// server, a header of an HTTP server, and a server that fails.
func secretConfig(c *cli, t testing.TB) {
	h := httpserver.Start(t, httpserver.MCPGoStateful)
	c.writeConfig(map[string]any{
		"files":  faultEntry(faultserver.ModeNormal, map[string]string{"API_KEY": envSecret}),
		"web":    map[string]any{"url": h.URL(), "headers": map[string]string{"Authorization": "Bearer " + headerSecret}},
		"broken": faultEntry(faultserver.ModeExitAtStart, map[string]string{"TOKEN": envSecret}),
	})
}

func noSecrets(t testing.TB, what, out string) {
	t.Helper()
	for _, s := range []string{envSecret, headerSecret} {
		if strings.Contains(out, s) {
			t.Errorf("%s shows a secret of the config:\n%s", what, out)
		}
	}
}

// TestStatus: status shows every server, fitted to 100 columns, with the
// failed one's error under it; --json says the same for programs; and no
// output (direct, through a serve, the serve's own log) shows a secret of
// the config.
func TestStatus(t *testing.T) {
	c := newCLI(t)
	secretConfig(c, t)

	code, out, errOut := c.run("status", "--wait", "2m")
	if code != exitOK {
		t.Fatalf("status: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"files", "Connected", "web", "broken", "PermanentlyFailed", "last error:"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	fits(t, out)
	noSecrets(t, "status", out+errOut)

	code, out, _ = c.run("status", "--json", "--wait", "2m")
	var doc struct{ Servers []admin.ServerReport }
	if code != exitOK || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Servers) != 3 {
		t.Fatalf("status --json: %d %s", code, out)
	}
	noSecrets(t, "status --json", out)

	s := c.startServe()
	code, out, errOut = c.run("status")
	if code != exitOK || !strings.Contains(out, "files") {
		t.Fatalf("status through the serve: %d\n%s%s", code, out, errOut)
	}
	noSecrets(t, "status through the serve", out+errOut)
	code, out, _ = c.run("status", "--json")
	if code != exitOK {
		t.Fatal(out)
	}
	noSecrets(t, "status --json through the serve", out)
	noSecrets(t, "the serve's log", s.Logs())
}

// fits fails for a line of out over 100 columns.
func fits(t testing.TB, out string) {
	t.Helper()
	for l := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > texttable.Width {
			t.Errorf("a line of %d columns, over %d:\n%s", n, texttable.Width, l)
		}
	}
}

// TestStatusFitsWidth: long names, states and errors are cut to fit.
func TestStatusFitsWidth(t *testing.T) {
	now := time.Now()
	reports := []admin.ServerReport{
		{Name: "a-server-with-a-name-that-goes-on-and-on-" + strings.Repeat("x", 60), State: "NeedsAuthorization",
			Generation: 123456, Tools: 10000, Requests: 1 << 40, Failed: 1 << 30, Reconnects: 99999, Attempt: 12,
			NextRetry: now.Add(time.Hour), AuthorizationURL: "https://example.com/authorize"},
		{Name: "b", State: "Reconnecting", LastError: strings.Repeat("a long cause; ", 30) + "\nsecond line"},
		{Name: "c", State: "Connected", Cached: true, CatalogError: "tools/list: " + strings.Repeat("x", 200)},
	}
	var b strings.Builder
	writeStatus(&b, reports, now)
	fits(t, b.String())
	if !strings.Contains(b.String(), "…") || !strings.Contains(b.String(), "authorize: mcpfleet auth") {
		t.Fatalf("nothing was cut, or a note is missing:\n%s", b.String())
	}
}

// TestToolsAndCall: tools lists the fleet's tools and finds them by what
// they do; call calls one by SERVER/TOOL or qualified name and prints its
// text; an error result exits 1 with the text on stderr, said to be the
// tool's; arguments that are not a JSON object are a usage error that says
// what they are.
func TestToolsAndCall(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	code, out, errOut := c.run("tools", "--wait", "2m")
	if code != exitOK || !strings.Contains(out, "files__echo") || !strings.Contains(out, "files__sleep") {
		t.Fatalf("tools: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = c.run("tools", "return", "text", "argument", "-k", "1", "--wait", "2m")
	if code != exitOK || !strings.Contains(out, "files__echo") || strings.Count(out, "\n") != 2 {
		t.Fatalf("tools QUERY: %d\n%s", code, out)
	}
	code, out, errOut = c.run("call", "files/echo", `{"text":"hello"}`)
	if code != exitOK || out != "hello\n" {
		t.Fatalf("call: %d %q %q", code, out, errOut)
	}
	code, out, _ = c.run("call", "files__add", `{"a":2,"b":3}`, "--json")
	if code != exitOK || !strings.Contains(out, `"text": "5"`) {
		t.Fatalf("call --json: %d %s", code, out)
	}
	code, out, errOut = c.run("call", "files__echo", `{}`)
	if code != exitError || out != "" || !strings.HasPrefix(errOut, "mcpfleet call: tool files__echo returned an error: ") ||
		!strings.Contains(errOut, "text") {
		t.Fatalf("an error result: %d %q %q", code, out, errOut)
	}
	for arg, want := range map[string]string{
		`[1]`:   "the arguments must be a JSON object ({...} of names and values), not an array",
		`7`:     "not a number",
		`"x"`:   "not a string",
		`{"a":`: "the arguments are not JSON (unexpected end of JSON input, at byte 5)",
	} {
		code, _, errOut = c.run("call", "files__echo", arg)
		if code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "Go value") {
			t.Errorf("arguments %s: %d %q, want %q", arg, code, errOut, want)
		}
	}
	if code, out, errOut = c.run("call", "files__echo", `null`); code != exitError || !strings.Contains(errOut, "returned an error") {
		t.Fatalf("null arguments, as none: %d %q %q", code, out, errOut) // echo's text is required: its error result, no usage error
	}
	if code, _, errOut = c.run("call", "files__nope", `{}`); code != exitError || !strings.Contains(errOut, "nope") {
		t.Fatalf("an unknown tool: %d %q", code, errOut)
	}
}

// TestServeRefusesInsecureSetups: serve will not listen beyond loopback
// without authentication, nor send a token there over plain HTTP, nor read
// a token file others can read, and says what to do.
func TestServeRefusesInsecureSetups(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{})
	code, _, errOut := c.run("serve", "--http", "0.0.0.0:0", "--no-auth")
	if code != exitError || !strings.Contains(errOut, "require a bearer token or client certificates, or bind 127.0.0.1") ||
		!strings.Contains(errOut, "drop --no-auth") {
		t.Fatalf("0.0.0.0 without a token: %d %q", code, errOut)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve", "--http", "0.0.0.0:0"}, {"serve", "--http", "0.0.0.0:0", "--token", token}} {
		code, _, errOut = c.run(args...)
		if code != exitError || !strings.Contains(errOut, "the token would cross the network in clear") ||
			!strings.Contains(errOut, "--tls-cert FILE --tls-key FILE; or, at your own risk, --insecure-http") {
			t.Fatalf("%v over plain HTTP: %d %q", args, code, errOut)
		}
	}
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = c.run("serve", "--http", "127.0.0.1:0", "--token", token)
	if code != exitError || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("a token file others read: %d %q", code, errOut)
	}
	if code, _, errOut = c.run("serve", "--stdio", "--http", "127.0.0.1:0"); code != exitUsage {
		t.Fatalf("--stdio and --http: %d %q", code, errOut)
	}
	if code, _, errOut = c.run("serve", "--client-ca", "ca.pem", "--http", "127.0.0.1:0"); code != exitUsage {
		t.Fatalf("--client-ca without a certificate: %d %q", code, errOut)
	}
	if code, _, errOut = c.run("serve", "--no-auth", "--token", token, "--http", "127.0.0.1:0"); code != exitUsage {
		t.Fatalf("--no-auth with --token: %d %q", code, errOut)
	}
	// An address that is not one is said so, before a token is made, and
	// with no hint about flags that were not given.
	for _, addr := range []string{"nonsense", "[::1"} {
		code, _, errOut = c.run("serve", "--http", addr)
		if code != exitUsage || !strings.Contains(errOut, "give HOST:PORT, or a port alone for 127.0.0.1") ||
			strings.Contains(errOut, "--no-auth") || strings.Contains(errOut, tokenLine) {
			t.Fatalf("--http %s: %d %q", addr, code, errOut)
		}
	}
}

// TestServeHTTPChecks: with --token, a client without the token gets 401;
// a browser page from elsewhere gets 403 (Origin), and so does a request
// naming another host on the loopback listener (DNS rebinding); a local
// client with the token gets an answer.
func TestServeHTTPChecks(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("t0ken-of-the-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := c.startServe("--token", token)
	post := func(header map[string]string, host string) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, s.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	auth := "Bearer t0ken-of-the-test"
	for _, tc := range []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"no token", nil, "", http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"rebinding", map[string]string{"Authorization": auth}, "evil.example:80", http.StatusForbidden},
		{"local origin", map[string]string{"Authorization": auth, "Origin": "http://localhost:5173"}, "", http.StatusOK},
		{"token", map[string]string{"Authorization": auth}, "", http.StatusOK},
	} {
		if got := post(tc.header, tc.host); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestLoopbackByDefault(t *testing.T) {
	for in, want := range map[string]string{
		"8931": "127.0.0.1:8931", ":8931": "127.0.0.1:8931", "0.0.0.0:8931": "0.0.0.0:8931",
		"[::1]:8931": "[::1]:8931", "localhost:0": "localhost:0",
	} {
		if got := loopbackByDefault(in); got != want {
			t.Errorf("loopbackByDefault(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStatusRetryColumn: the RETRY column shows a retry only for a server
// that is connecting: one that failed for good says how many attempts
// failed, though its slow probe has a time; and so do the events.
func TestStatusRetryColumn(t *testing.T) {
	now := time.Now()
	reports := []admin.ServerReport{
		{Name: "ghost", State: "PermanentlyFailed", Attempt: 1, NextRetry: now.Add(30500 * time.Millisecond)},
		{Name: "slow", State: "Connecting", Attempt: 2, NextRetry: now.Add(1500 * time.Millisecond)},
		{Name: "off", State: "Disabled", Attempt: 3, NextRetry: now.Add(time.Minute)},
	}
	var b strings.Builder
	writeStatus(&b, reports, now)
	rows := map[string]string{}
	for l := range strings.SplitSeq(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	if r := rows["ghost"]; strings.Contains(r, "#2") || !strings.HasSuffix(r, "1 failed") {
		t.Errorf("a failed server's row: %q", r)
	}
	if r := rows["slow"]; !strings.HasSuffix(r, "#3 in 1.5s") {
		t.Errorf("a connecting server's row: %q", r)
	}
	if r := rows["off"]; !strings.HasSuffix(r, "-") {
		t.Errorf("a disabled server's row: %q", r)
	}
	failed := eventLine(admin.EventReport{Time: now, Server: "ghost", Kind: "state", From: "Connecting", To: "PermanentlyFailed",
		Attempt: 1, NextRetry: now.Add(30 * time.Second)})
	retrying := eventLine(admin.EventReport{Time: now, Server: "slow", Kind: "state", From: "Connected", To: "Reconnecting",
		Attempt: 1, NextRetry: now.Add(30 * time.Second)})
	if strings.Contains(failed, "next retry") || !strings.Contains(retrying, "next retry in") {
		t.Errorf("events:\n%s\n%s", failed, retrying)
	}
}

// TestToolsSaysWhyAServerHasNone: a server that cannot start (a command
// not found, a newcomer's typo) is named on stderr with its cause, not
// shown as a fleet without tools; the others' tools are listed.
func TestToolsSaysWhyAServerHasNone(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{
		"files": faultEntry(faultserver.ModeNormal, nil),
		"oops":  map[string]any{"command": "mcpfleet-no-such-command"},
	})
	code, out, errOut := c.run("tools", "--wait", "2m")
	if code != exitOK || !strings.Contains(out, "files__echo") {
		t.Fatalf("tools: %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `server "oops" is PermanentlyFailed`) || !strings.Contains(errOut, "command not found") {
		t.Fatalf("the failed server's cause is not on stderr: %q", errOut)
	}
	if strings.Contains(errOut, `server "files"`) {
		t.Fatalf("a connected server reported: %q", errOut)
	}
}

// TestCommandLeavesTheTaskStore: a command's own fleet keeps its tasks in
// memory and leaves the user's task store to a serve. Before, a status or
// a call locked it while it ran, and a serve started meanwhile found it
// locked and kept its tasks in memory, warning that they would not outlive
// it.
func TestCommandLeavesTheTaskStore(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skip("os.UserCacheDir follows XDG_CACHE_HOME on linux and freebsd only")
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	t.Setenv(envStateDir, c.stateDir)
	paths, err := pathsFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(strings.NewReader(""), io.Discard, io.Discard, false)
	l, err := openLocal(testCtx(t), e, c.config, paths, &commonFlags{wait: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	// What a serve's Manager does first: lock the store of client "mcpfleet".
	unlock, err := store.NewFileTaskStore(filepath.Join(cache, "mcpfleet", "tasks", "mcpfleet")).Lock()
	if err != nil {
		t.Fatalf("a serve beside the command finds the task store locked: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
}
