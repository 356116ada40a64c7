package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// runBare runs mcpfleet in this process with args as they are (no
// --config added), in the test's state directory.
func (c *cli) runBare(args ...string) (int, string, string) {
	c.t.Helper()
	c.t.Setenv(envStateDir, c.stateDir)
	var out, errOut bytes.Buffer
	code := run(testCtx(c.t), args, newEnv(strings.NewReader(""), &out, &errOut, false))
	return code, out.String(), errOut.String()
}

// TestConfigNotFromTheWorkingDirectory: a command given no config does not
// read the mcp.json of the directory it runs in (whoever wrote that
// directory would choose the commands it runs); it says what to do, and
// reads the user's own file, $MCPFLEET_CONFIG or --config. A config file
// others can write, or that another user owns, is refused with what to do.
func TestConfigNotFromTheWorkingDirectory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the user's config directory is $XDG_CONFIG_HOME on Linux only")
	}
	c := newCLI(t)
	work := t.TempDir()
	marker := filepath.Join(work, "ran")
	planted, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"planted": map[string]any{"command": "/bin/sh", "args": []string{"-c", "touch " + marker}},
	}})
	if err := os.WriteFile(filepath.Join(work, "mcp.json"), planted, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv(envConfig, "")
	own := filepath.Join(home, "mcpfleet", "mcp.json")

	for _, args := range [][]string{{"status"}, {"serve", "--stdio"}} {
		code, _, errOut := c.runBare(args...)
		want := "no config file: give --config FILE, set MCPFLEET_CONFIG=FILE, or write your servers to " + own
		if code != exitError || !strings.Contains(errOut, want) {
			t.Fatalf("%v with an mcp.json in the working directory: %d %q", args, code, errOut)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the working directory's mcp.json ran its command")
	}

	// The user's own file is read.
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"mine": faultEntry(faultserver.ModeNormal, nil)}})
	if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, entry, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := c.runBare("status", "--direct"); code != exitOK || !strings.Contains(out, "mine") {
		t.Fatalf("status with the user's config: %d %q %q", code, out, errOut)
	}
	// So is $MCPFLEET_CONFIG, even one in the working directory.
	t.Setenv(envConfig, filepath.Join(work, "mcp.json"))
	if code, out, errOut := c.runBare("status", "--direct"); code != exitOK || !strings.Contains(out, "planted") {
		t.Fatalf("status with $MCPFLEET_CONFIG: %d %q %q", code, out, errOut)
	}
	t.Setenv(envConfig, "")

	// A file others can write is refused, whatever names it.
	if err := os.Chmod(own, 0o620); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "--direct"}, {"status", "--direct", "--config", own}, {"serve", "--stdio", "--config", own}} {
		code, _, errOut := c.runBare(args...)
		if code != exitError || !strings.Contains(errOut, "is writable by other users (mode 0620), who could make mcpfleet run any command: run chmod go-w "+own) {
			t.Fatalf("%v with a config others can write: %d %q", args, code, errOut)
		}
	}
	if err := os.Chmod(own, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // only root can give a file away
		if err := os.Chown(own, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := c.runBare("status", "--direct")
		if code != exitError || !strings.Contains(errOut, "is owned by another user, who could make mcpfleet run any command as you: copy it to a file of your own") {
			t.Fatalf("a config of another user's: %d %q", code, errOut)
		}
	} else {
		t.Log("not root: the refusal of a file of another user's is not tried")
	}
}

// initialize posts an initialize to url with the Authorization header auth
// ("" for none) and returns the status.
func initialize(t testing.TB, url, auth string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeTokenByDefault: serve --http on loopback asks for a bearer
// token unless told not to: one is made at the first serve (a file only
// the user can read), printed for the client's config, and kept for the
// next serve; --no-auth serves without one, and says so.
func TestServeTokenByDefault(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	s := c.startServe()
	if s.token == "" {
		t.Fatalf("serve printed no token:\n%s", s.Logs())
	}
	file := filepath.Join(c.stateDir, "serve-token")
	if !strings.Contains(s.Logs(), "(the token is kept in "+file) {
		t.Fatalf("serve did not say where the token is:\n%s", s.Logs())
	}
	if fi, err := os.Stat(file); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v", fi, err)
	}
	if got := initialize(t, s.url, ""); got != http.StatusUnauthorized {
		t.Fatalf("a client without the token: %d", got)
	}
	if got := initialize(t, s.url, "Bearer not-"+s.token); got != http.StatusUnauthorized {
		t.Fatalf("a client with another token: %d", got)
	}
	if got := initialize(t, s.url, s.authHeader()); got != http.StatusOK {
		t.Fatalf("a client with the token: %d", got)
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	<-s.done
	again := c.startServe()
	if again.token != s.token {
		t.Fatal("a second serve made another token: the client's config would have to change")
	}
	_ = again.cmd.Process.Signal(os.Interrupt)
	<-again.done

	open := c.startServe("--no-auth")
	if open.token != "" || !strings.Contains(open.Logs(), "serving HTTP without authentication (--no-auth)") {
		t.Fatalf("serve --no-auth:\n%s", open.Logs())
	}
	if got := initialize(t, open.url, ""); got != http.StatusOK {
		t.Fatalf("serve --no-auth, a client without a token: %d", got)
	}
}

// TestAdminFileTrusted: the commands use a running serve through the
// admin file it wrote, and only such a file: one another user could have
// written, or that names an address off this machine, is ignored (it would
// send the command's calls and the token where its writer chose), and the
// command uses the config file itself.
func TestAdminFileTrusted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the directory's access control decides on Windows")
	}
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	var hits atomic.Int64
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"servers":[{"name":"planted","state":"Connected"}]}`))
	}))
	defer fake.Close()
	t.Setenv(envStateDir, c.stateDir)
	paths, err := pathsFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		name, addr string
		mode       os.FileMode
		want       string
	}{
		{"writable by others", fake.Listener.Addr().String(), 0o620, "is writable by other users, who could have written it"},
		{"off this machine", "192.0.2.1:9", 0o600, `names the address "192.0.2.1:9", which is not a loopback one`},
	} {
		t.Run(x.name, func(t *testing.T) {
			if err := writeAdminFile(paths.admin(1), adminFile{Addr: x.addr, Token: "t", PID: 1, Config: c.config}); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(paths.admin(1), x.mode); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := c.run("status")
			if code != exitOK || strings.Contains(out, "planted") || !strings.Contains(out, "files") {
				t.Fatalf("status: %d %q %q", code, out, errOut)
			}
			if !strings.Contains(errOut, "mcpfleet: ignoring a serve's admin file: "+paths.admin(1)+" "+x.want) {
				t.Fatalf("status does not say why it ignored the admin file: %q", errOut)
			}
			if hits.Load() != 0 {
				t.Fatal("the command asked the address of an untrusted admin file")
			}
		})
	}
}

// hostile is text a server could send to take over the terminal of whoever
// reads it: a window title (OSC), a screen clear (CSI), an 8-bit CSI, a
// carriage return that would overwrite the line, a right-to-left override;
// and a newline and a tab, which stay. (A byte that is not UTF-8 does not
// survive JSON; termSafe escapes it too.)
const hostile = "ok\x1b]0;pwned\x07 \x1b[2J \u009b31m \rfake \u202eevil end\nline two\tcolumn"

// rawControl returns the first character of out a terminal would act on,
// other than newline and tab; "" if none.
func rawControl(out string) string {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		if unsafeRune(r, size, true) {
			return fmt.Sprintf("%q at %d", r, i)
		}
		i += size
	}
	return ""
}

// TestServerTextEscaped: call, tools, watch and status print what a server
// wrote with everything a terminal would act on escaped (an OSC sequence
// reached stdout raw), keeping its lines and tabs; --json escapes the
// same where encoding/json does not.
func TestServerTextEscaped(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)})
	args, _ := json.Marshal(map[string]string{"text": hostile})
	code, out, errOut := c.run("call", "one__echo", string(args), "--direct")
	if code != exitOK {
		t.Fatalf("call: %d %q %q", code, out, errOut)
	}
	if bad := rawControl(out); bad != "" {
		t.Fatalf("call printed a raw control character %s: %q", bad, out)
	}
	for _, want := range []string{`ok\x1b]0;pwned\x07 \x1b[2J \u009b31m \rfake \u202eevil end`, "\nline two\tcolumn"} {
		if !strings.Contains(out, want) {
			t.Fatalf("call's output %q lacks %q", out, want)
		}
	}

	if got := termSafe("a\xffb\x7f", true); got != `a\xffb\x7f` {
		t.Fatalf("termSafe of a byte that is not UTF-8 and DEL: %q", got)
	}
	var b bytes.Buffer
	writeTools(&b, []admin.ToolReport{{Name: "one__x\x1b[2J", Description: hostile}}, "")
	writeStatus(&b, []admin.ServerReport{{Name: "one", State: "PermanentlyFailed", LastError: hostile}}, time.Now())
	b.WriteString(eventLine(admin.EventReport{Kind: "log", Server: "one", Level: "info", Logger: "l\x1b]8;;http://x\x07", Data: hostile}) + "\n")
	b.WriteString(eventLine(admin.EventReport{Kind: "state", Server: "one", From: "Connected", To: "Reconnecting", Error: hostile}) + "\n")
	if bad := rawControl(b.String()); bad != "" {
		t.Fatalf("tools, status or watch printed a raw control character %s:\n%q", bad, b.String())
	}

	b.Reset()
	if err := printJSON(&b, map[string]string{"text": hostile}); err != nil {
		t.Fatal(err)
	}
	if bad := rawControl(b.String()); bad != "" {
		t.Fatalf("--json printed a raw control character %s: %q", bad, b.String())
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["text"] != hostile {
		t.Fatalf("--json is not the same JSON: %q %v", back["text"], err)
	}
}
