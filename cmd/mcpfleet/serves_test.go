package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// statusJSON runs status --json (through a serve if one answers) and
// returns what it said.
func (c *cli) statusJSON(t *testing.T, args ...string) statusReport {
	t.Helper()
	code, out, errOut := c.run(append([]string{"status", "--json"}, args...)...)
	var st statusReport
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: %d %s %s", code, out, errOut)
	}
	return st
}

// stop ends a serve as a user's ^C does, and waits for it.
func (s *serveProc) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	<-s.done
}

// TestTwoServes: two serves of one config are peers: neither logs an
// error, each has its admin file and its children's state file, every
// command finds the newest that runs (status says which, and names the
// other), and when it ends the older one answers; when both have ended the
// command starts the servers itself, and says so.
func TestTwoServes(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)})
	first := c.startServe()
	second := c.startServe()
	for _, s := range []*serveProc{first, second} {
		s.waitLogs(t, `server connected" server=one`)
	}
	pid1, pid2 := first.cmd.Process.Pid, second.cmd.Process.Pid

	st := c.statusJSON(t)
	if st.Serve == nil || st.Serve.PID != pid2 || len(st.Others) != 1 || st.Others[0].PID != pid1 {
		t.Fatalf("with two serves, status answered by %+v, others %+v; want %d, then %d", st.Serve, st.Others, pid2, pid1)
	}
	code, out, _ := c.run("status")
	if lines := strings.SplitN(out, "\n", 3); code != exitOK || len(lines) < 3 || !strings.HasSuffix(lines[0], ", the newest of 2") ||
		!strings.HasPrefix(lines[1], "also running: serve pid "+strconv.Itoa(pid1)+" (") {
		t.Fatalf("status does not say which serve answers:\n%s", out)
	}
	children, _ := filepath.Glob(filepath.Join(c.stateDir, "children-*.state"))
	admins, _ := filepath.Glob(filepath.Join(c.stateDir, "admin-*.json"))
	if len(children) != 2 || len(admins) != 2 {
		t.Fatalf("state files %v, admin files %v: want two of each", children, admins)
	}

	// A call through the newest serve counts there.
	if code, out, errOut := c.run("call", "one__echo", `{"text":"x"}`); code != exitOK {
		t.Fatalf("call: %d %s %s", code, out, errOut)
	}
	second.stop()
	st = c.statusJSON(t)
	if st.Serve == nil || st.Serve.PID != pid1 || len(st.Others) != 0 {
		t.Fatalf("after the newest ended, status answered by %+v (others %+v), want %d", st.Serve, st.Others, pid1)
	}
	if len(st.Servers) != 1 || st.Servers[0].Requests != 0 {
		t.Fatalf("the first serve's own counts: %+v", st.Servers)
	}
	first.stop()
	for _, s := range []*serveProc{first, second} {
		if strings.Contains(s.Logs(), "level=ERROR") {
			t.Fatalf("a serve logged an error:\n%s", s.Logs())
		}
	}
	if admins, _ := filepath.Glob(filepath.Join(c.stateDir, "admin-*.json")); len(admins) != 0 {
		t.Fatalf("admin files left behind: %v", admins)
	}
	code, out, errOut := c.run("status")
	if code != exitOK || !strings.HasPrefix(out, "no serve of this config runs") {
		t.Fatalf("with no serve: %d %s %s", code, out, errOut)
	}
}

// TestStaleAdminFile: the admin file of a serve that ended without
// removing it (killed) is removed by the next command, which goes on
// without a word about it.
func TestStaleAdminFile(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)})
	s := c.startServe()
	_ = s.cmd.Process.Kill()
	<-s.done
	admins, _ := filepath.Glob(filepath.Join(c.stateDir, "admin-*.json"))
	if len(admins) != 1 {
		t.Fatalf("admin files of the killed serve: %v", admins)
	}
	// Another program takes the killed serve's port (as one of the tests
	// running beside this one once did) and drops every connection: the
	// file is still stale, since its serve's process is gone.
	af, err := readAdminFile(admins[0])
	if err != nil {
		t.Fatal(err)
	}
	if ln, err := net.Listen("tcp", af.Addr); err != nil {
		t.Logf("the killed serve's address %s is taken already (%v): the port's new owner is not this test's", af.Addr, err)
	} else {
		defer ln.Close()
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				conn.Close()
			}
		}()
	}
	code, out, errOut := c.run("status")
	if code != exitOK || !strings.HasPrefix(out, "no serve of this config runs") || strings.Contains(errOut, "does not answer") {
		t.Fatalf("status: %d %q %q", code, out, errOut)
	}
	if admins, _ := filepath.Glob(filepath.Join(c.stateDir, "admin-*.json")); len(admins) != 0 {
		t.Fatalf("the stale admin file is still there: %v", admins)
	}
}

// TestRecursionRefused: a config whose entry runs mcpfleet serve of that
// same config (Claude Desktop's file, with mcpfleet's entry in it) does
// not start itself without end: the inner serve finds its config among the
// fleets above it (every child's environment names them) and refuses,
// saying why; the others' tools are served, and none as fleet__fleet__….
func TestRecursionRefused(t *testing.T) {
	c := newCLI(t)
	env := map[string]string{envRunCLI: "1", envStateDir: c.stateDir, "GORACE": faultserver.NoRaceExitDelay()}
	c.writeConfig(map[string]any{
		"one":   faultEntry(faultserver.ModeNormal, nil),
		"fleet": map[string]any{"command": os.Args[0], "args": []string{"serve", "--stdio", "--config", c.config}, "env": env},
	})
	st := c.statusJSON(t, "--direct", "--wait", "2m")
	found := false
	for _, r := range st.Servers {
		if r.Name == "fleet" {
			found = true
			if r.State != "PermanentlyFailed" || !strings.Contains(r.LastError, "refusing to run a fleet inside itself") {
				t.Fatalf("the entry that serves its own config: %s: %s", r.State, r.LastError)
			}
			t.Logf("fleet: %s: %s", r.State, r.LastError)
		}
	}
	if !found {
		t.Fatalf("no server fleet in %+v", st.Servers)
	}
	code, out, errOut := c.run("tools", "--direct", "--wait", "2m")
	if code != exitOK || !strings.Contains(out, "one__echo") || strings.Contains(out, "fleet__") {
		t.Fatalf("tools: %d\n%s%s", code, out, errOut)
	}

	// A fleet started under a fleet of its own config refuses at once.
	abs, _ := filepath.Abs(c.config)
	t.Setenv(envServeChain, abs)
	for _, args := range [][]string{{"serve", "--stdio"}, {"status", "--direct"}} {
		code, _, errOut := c.run(args...)
		if code != exitError || !strings.Contains(errOut, "refusing to run a fleet inside itself: a fleet of "+abs+" started this one") {
			t.Fatalf("%v under a fleet of its own config: %d %q", args, code, errOut)
		}
	}
}

// TestStatusWeb: status --web prints the running serve's status page, its
// token in the fragment, and opens it; the page is there, and the token
// answers; without a serve it says there is no page to open.
func TestStatusWeb(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"one": faultEntry(faultserver.ModeNormal, nil)})
	if code, _, errOut := c.run("status", "--web"); code != exitError || !strings.Contains(errOut, "the status page is a serve's, and no serve of") {
		t.Fatalf("without a serve: %d %q", code, errOut)
	}
	c.startServe()
	var opened string
	old := openBrowser
	openBrowser = func(u string) error { opened = u; return nil }
	t.Cleanup(func() { openBrowser = old })
	code, out, errOut := c.run("status", "--web")
	if code != exitOK || opened == "" || !strings.Contains(out, opened) {
		t.Fatalf("status --web: %d %q %q (opened %q)", code, out, errOut, opened)
	}
	u, err := url.Parse(opened)
	if err != nil || u.Path != "/status" || !strings.HasPrefix(u.Fragment, "token=") {
		t.Fatalf("the address %q", opened)
	}
	get := func(path, token string) int {
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, "http://"+u.Host+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("/status", ""); got != http.StatusOK {
		t.Fatalf("the page: %d", got)
	}
	if got := get("/v1/status", strings.TrimPrefix(u.Fragment, "token=")); got != http.StatusOK {
		t.Fatalf("the page's token: %d", got)
	}
}
