package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// TestDescribe: describe shows a tool's hints, arguments (name, type,
// required) and input schema, by qualified name, SERVER/TOOL or its own
// name when one server has it; tools --schema shows the same for every
// tool, and --json carries the schema.
func TestDescribe(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	for _, name := range []string{"files__echo", "files/echo", "echo"} {
		code, out, errOut := c.run("describe", name, "--wait", "2m")
		if code != exitOK {
			t.Fatalf("describe %s: %d %q %q", name, code, out, errOut)
		}
		for _, want := range []string{"files__echo  (server files, tool echo)", "arguments:", "text", "string", "yes", "input schema:", `"required": [`} {
			if !strings.Contains(out, want) {
				t.Fatalf("describe %s lacks %q:\n%s", name, want, out)
			}
		}
		fits(t, out)
	}
	code, out, _ := c.run("describe", "files__echo", "--json", "--wait", "2m")
	var tr admin.ToolReport
	if code != exitOK || json.Unmarshal([]byte(out), &tr) != nil || !strings.Contains(string(tr.InputSchema), `"text"`) {
		t.Fatalf("describe --json: %d %s", code, out)
	}
	code, out, _ = c.run("tools", "--schema", "--wait", "2m")
	if code != exitOK || strings.Count(out, "input schema:") < 2 || !strings.Contains(out, "files__add") {
		t.Fatalf("tools --schema: %d\n%s", code, out)
	}
}

// TestDidYouMean: a mistyped command, tool, server or flag is answered
// with the nearest names; a mistyped flag with one line that says where
// the flags are, not with all of them.
func TestDidYouMean(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{"files": faultEntry(faultserver.ModeNormal, nil)})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"stauts"}, exitUsage, `unknown command "stauts" (did you mean status?)`},
		{[]string{"call", "files__ecoh", "{}", "--direct"}, exitError, "(did you mean files__echo?)"},
		{[]string{"call", "files/ecoh", "{}", "--direct"}, exitError, "(did you mean files__echo?)"},
		{[]string{"describe", "ecoh", "--wait", "2m"}, exitError, `no tool "ecoh" (did you mean files__echo?)`},
		{[]string{"disable", "flies"}, exitError, `no server "flies" (did you mean files?)`},
		{[]string{"serve", "--htp", "127.0.0.1:0"}, exitUsage, "mcpfleet serve: unknown flag --htp (did you mean --http?); mcpfleet serve -h lists its flags\n"},
		{[]string{"status", "--jsno"}, exitUsage, "unknown flag --jsno (did you mean --json?)"},
		{[]string{"add", "--evn", "A=1", "x", "y"}, exitUsage, "unknown flag --evn (did you mean --env?)"},
		{[]string{"status", "--nothing-like-it"}, exitUsage, "mcpfleet status: unknown flag --nothing-like-it; mcpfleet status -h lists its flags\n"},
		{[]string{"status", "--wait", "soon"}, exitUsage, `invalid value "soon" for flag -wait`},
	} {
		code, _, errOut := c.run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
		if tc.code == exitUsage && tc.args[0] != "stauts" && (strings.Contains(errOut, "usage:") || strings.Count(errOut, "\n") != 1) {
			t.Errorf("%v: a mistyped flag gets one line, not the usage: %q", tc.args, errOut)
		}
	}
}

// TestHungServerBoundedWait: a server that hangs at start (here after it
// once worked, so its catalog is known) delays status and tools by the
// short wait only (--wait, 2 s by default, not its dial timeout), which
// they state; they show its known tools, marked cached, and its state.
func TestHungServerBoundedWait(t *testing.T) {
	c := newCLI(t)
	// The hanging one takes its fault mode from this process's
	// environment: the entry (and so the cache of its catalog) stays the
	// same when the mode changes.
	hung := faultEntry(faultserver.ModeNormal, nil)
	delete(hung["env"].(map[string]string), faultserver.EnvFault)
	c.writeConfig(map[string]any{"good": faultEntry(faultserver.ModeNormal, nil), "slow": hung})
	t.Setenv(faultserver.EnvFault, faultserver.ModeNormal)
	if code, out, errOut := c.run("tools", "--wait", "2m"); code != exitOK || !strings.Contains(out, "slow__echo") {
		t.Fatalf("tools while both work: %d\n%s%s", code, out, errOut)
	}

	t.Setenv(faultserver.EnvFault, faultserver.ModeHang)
	start := time.Now()
	code, out, errOut := c.run("tools")
	t.Logf("tools with a hung server took %s", time.Since(start).Round(time.Millisecond))
	if code != exitOK || !strings.Contains(out, "slow__echo") || !strings.Contains(out, "good__echo") {
		t.Fatalf("tools with a hung server: %d\n%s%s", code, out, errOut)
	}
	if !stillConnecting(errOut, "2s", "slow") {
		t.Fatalf("tools does not say what it waited for: %q", errOut)
	}
	code, out, errOut = c.run("status", "--wait", "500ms")
	if code != exitOK || !stillConnecting(errOut, "500ms", "slow") || !strings.Contains(out, "Connecting (cached)") {
		t.Fatalf("status with a hung server: %d\n%s%s", code, out, errOut)
	}
}

// stillConnecting reports whether stderr says server was still connecting
// after wait (with others, when the machine is slow).
func stillConnecting(stderr, wait, server string) bool {
	for l := range strings.SplitSeq(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "mcpfleet: still connecting after "+wait+": "); ok {
			names, _, _ := strings.Cut(rest, " (")
			return slices.Contains(strings.Split(names, ", "), server)
		}
	}
	return false
}

// refusedURL returns an MCP URL of 127.0.0.1 whose port refuses
// connections: one that was free a moment ago.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// TestRequiredServerBoundedWait: a server marked required that does not
// come up costs status its wait (--wait), not a serve's Apply timeout;
// the Apply's error names it once, with one prefix, no line then claims
// it is still connecting after the wait as news, and status exits 1 (with
// --json too); a required server that connects leaves status at 0.
func TestRequiredServerBoundedWait(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{
		"good":   faultEntry(faultserver.ModeNormal, nil),
		"remote": map[string]any{"type": "http", "url": refusedURL(t), "required": true},
	})
	start := time.Now()
	code, out, errOut := c.run("status", "--wait", "500ms")
	took := time.Since(start)
	t.Logf("status with a required server down took %s", took.Round(time.Millisecond))
	if code != exitError || !strings.Contains(out, "remote") || !strings.Contains(out, "good") {
		t.Fatalf("status with a required server down: %d\n%s%s", code, out, errOut)
	}
	// Waiting for the required server by the Apply timeout instead costs
	// all of it (the server never comes): no machine is slow enough to
	// turn --wait 500ms into that.
	if took >= configfile.DefaultApplyTimeout {
		t.Fatalf("status took %s with --wait 500ms: the Apply timeout, %s", took, configfile.DefaultApplyTimeout)
	}
	if strings.Count(errOut, `server "remote"`) != 1 || !strings.Contains(errOut, "required server") ||
		strings.Contains(errOut, "mcpfleet: mcpfleet:") || stillConnecting(errOut, "500ms", "remote") {
		t.Fatalf("what status says of the required server: %q", errOut)
	}
	code, out, _ = c.run("status", "--json", "--wait", "500ms")
	var doc statusReport
	if code != exitError || json.Unmarshal([]byte(out), &doc) != nil || !slices.Contains(doc.Connecting, "remote") {
		t.Fatalf("status --json with a required server down: %d %s", code, out)
	}

	up := faultEntry(faultserver.ModeNormal, nil)
	up["required"] = true
	c.writeConfig(map[string]any{"good": up})
	if code, out, errOut := c.run("status", "--wait", "2m"); code != exitOK || strings.Contains(errOut, "required") {
		t.Fatalf("status with its required server up: %d\n%s%s", code, out, errOut)
	}
}

// TestSettleNamesWhatIsConnecting: the servers a command says it waits
// for are the ones connecting now, first or again after a loss; not one
// that failed for good.
func TestSettleNamesWhatIsConnecting(t *testing.T) {
	c := newCLI(t)
	// "again" takes its fault mode from this process's environment: it
	// crashes at its first call, and then hangs at every start.
	again := faultEntry(faultserver.ModeNormal, nil)
	delete(again["env"].(map[string]string), faultserver.EnvFault)
	c.writeConfig(map[string]any{"again": again, "hung": faultEntry(faultserver.ModeHang, nil),
		"ghost": map[string]any{"command": "mcpfleet-no-such-command"}})
	t.Setenv(faultserver.EnvFault, faultserver.ModeCrashAfter)
	t.Setenv(faultserver.EnvN, "0")
	t.Setenv(envStateDir, c.stateDir)
	var errOut bytes.Buffer
	e := newEnv(strings.NewReader(""), io.Discard, &errOut, false)
	ctx := testCtx(t)
	paths, err := pathsFor(c.config)
	if err != nil {
		t.Fatal(err)
	}
	l, err := openLocal(ctx, e, c.config, paths, &commonFlags{wait: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.m.WaitConnected(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(faultserver.EnvFault, faultserver.ModeHang)
	// The call kills it, and then waits for the start that hangs: it is
	// ended once the server is reconnecting.
	cctx, cancel := context.WithCancel(ctx)
	called := make(chan struct{})
	go func() {
		defer close(called)
		_, _ = l.m.Call(cctx, "again__echo", map[string]any{"text": "x"})
	}()
	err = l.m.WaitFor(ctx, "again", lifecycle.Reconnecting)
	cancel()
	<-called
	if err != nil {
		t.Fatal(err)
	}
	if err := l.m.WaitFor(ctx, "ghost", lifecycle.PermanentlyFailed); err != nil {
		t.Fatal(err)
	}
	l.wait, l.deadline = 100*time.Millisecond, time.Now().Add(100*time.Millisecond)
	if names := l.settle(ctx); !slices.Equal(names, []string{"again", "hung"}) {
		t.Fatalf("settle returned %v, want again and hung:\n%s", names, errOut.String())
	}
	if !stillConnecting(errOut.String(), "100ms", "again") || strings.Contains(errOut.String(), "ghost") {
		t.Fatalf("settle says:\n%s", errOut.String())
	}
}
