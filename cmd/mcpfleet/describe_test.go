package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
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

// TestDidYouMean: a mistyped command, tool or server is answered with the
// nearest names.
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
	} {
		code, _, errOut := c.run(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %d %q, want %d and %q", tc.args, code, errOut, tc.code, tc.want)
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
