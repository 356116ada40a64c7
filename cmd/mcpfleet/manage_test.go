package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// commentedConfig is a config as a person keeps it: comments, an order of
// their own, and a key another host reads.
func commentedConfig(t *testing.T, c *cli) string {
	t.Helper()
	entry, _ := json.Marshal(faultEntry(faultserver.ModeNormal, nil))
	text := "{\n  // My fleet. Keep \"one\" first.\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": {\n" +
		"    \"one\": " + string(entry) + " // the test server\n  }\n}\n"
	c.writeConfigBytes([]byte(text))
	return text
}

// readConfig returns the config file's text.
func (c *cli) readConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// serverOf returns server name's report from st.
func serverOf(t *testing.T, st statusReport, name string) admin.ServerReport {
	t.Helper()
	for _, r := range st.Servers {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no server %s in %+v", name, st.Servers)
	return admin.ServerReport{}
}

// manage runs a managing command with --json and returns its report.
func (c *cli) manage(t *testing.T, args ...string) manageReport {
	t.Helper()
	flags := []string{args[0], "--json"}
	if args[0] != "remove" {
		flags = append(flags, "--wait", "2m")
	}
	code, out, errOut := c.run(append(flags, args[1:]...)...)
	var rep manageReport
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("%v: %d %s %s", args, code, out, errOut)
	}
	return rep
}

// TestManageOnServe: disable, enable, reconnect, add and remove act on the
// running serve at once and in the file, which keeps its comments, order
// and other keys; the serve's status shows each change.
func TestManageOnServe(t *testing.T) {
	c := newCLI(t)
	orig := commentedConfig(t, c)
	s := c.startServe("--watch-interval", "1h") // the serve reads the file when told, not by looking
	s.waitLogs(t, `server connected" server=one`)
	pid := s.cmd.Process.Pid

	rep := c.manage(t, "disable", "one")
	if rep.Serve == nil || rep.Serve.PID != pid || rep.State == nil || rep.State.State != "Disabled" || !rep.Changed {
		t.Fatalf("disable: %+v", rep)
	}
	text := c.readConfig(t)
	if want := strings.Replace(orig, "} // the test server", `,"disabled":true} // the test server`, 1); !sameJSONC(text, want) ||
		!strings.Contains(text, "// My fleet. Keep \"one\" first.") || !strings.Contains(text, "// the test server") {
		t.Fatalf("the file after disable:\n%s", text)
	}
	if got := serverOf(t, c.statusJSON(t), "one").State; got != "Disabled" {
		t.Fatalf("one is %s on the serve", got)
	}

	rep = c.manage(t, "enable", "one")
	if rep.State == nil || rep.State.State != "Connected" || rep.State.Generation != 2 {
		t.Fatalf("enable: %+v", rep.State)
	}
	rep = c.manage(t, "reconnect", "one")
	if rep.State == nil || rep.State.State != "Connected" || rep.State.Generation != 3 {
		t.Fatalf("reconnect: %+v", rep.State)
	}

	inv := faultserver.Command(faultserver.ModeNormal)
	args := []string{"add", "--env", faultserver.EnvServe + "=1", "--env", "GORACE=" + inv.Env["GORACE"], "two", inv.Path}
	rep = c.manage(t, append(args, inv.Args...)...)
	if rep.State == nil || rep.State.State != "Connected" || rep.State.Tools == 0 || !strings.Contains(rep.Summary, "added two") {
		t.Fatalf("add: %+v %+v", rep, rep.State)
	}
	code, out, _ := c.run("tools")
	if code != exitOK || !strings.Contains(out, "two__echo") {
		t.Fatalf("the serve's tools after add:\n%s", out)
	}
	if text := c.readConfig(t); !strings.Contains(text, `"two": {`) || !strings.Contains(text, "// the test server") {
		t.Fatalf("the file after add:\n%s", text)
	}

	rep = c.manage(t, "remove", "two")
	if !strings.Contains(rep.Summary, "removed two") {
		t.Fatalf("remove: %+v", rep)
	}
	for _, r := range c.statusJSON(t).Servers {
		if r.Name == "two" {
			t.Fatal("two is still on the serve")
		}
	}
	if text := c.readConfig(t); strings.Contains(text, `"two"`) || !strings.Contains(text, "\"globalShortcut\": \"Ctrl+Space\",\n") {
		t.Fatalf("the file after remove:\n%s", text)
	}

	// A name the file lacks, with the nearest ones.
	for _, op := range []string{"disable", "enable", "remove", "reconnect"} {
		if code, _, errOut := c.run(op, "oen"); code != exitError || !strings.Contains(errOut, `no server "oen" (did you mean one?)`) {
			t.Fatalf("%s oen: %d %q", op, code, errOut)
		}
	}
	if code, _, errOut := c.run("add", "one", "x"); code != exitError || !strings.Contains(errOut, `already has a server "one"`) {
		t.Fatalf("add one again: %d %q", code, errOut)
	}
}

// sameJSONC reports whether two texts are the same but for spaces.
func sameJSONC(a, b string) bool {
	strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strip(a) == strip(b)
}

// TestManageInFile: without a serve, add, disable, enable and remove
// change the file alone, and say so; a VS Code file keeps its comments and
// trailing commas, and an added entry says its type, as VS Code's do;
// reconnect has nothing to act on.
func TestManageInFile(t *testing.T) {
	c := newCLI(t)
	c.config = c.config[:len(c.config)-len("mcp.json")] + "vscode.json"
	text := "{\n\t// VS Code's\n\t\"servers\": {\n\t\t\"web\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:9/mcp\"}, // off\n\t},\n}\n"
	c.writeConfigBytes([]byte(text))

	code, out, errOut := c.run("add", "mem", "--env", "A=1", "npx", "-y", "@modelcontextprotocol/server-memory")
	if code != exitOK || !strings.Contains(out, "added mem to "+c.config+" (no serve of it runs)") {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	want := "{\n\t// VS Code's\n\t\"servers\": {\n\t\t\"web\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:9/mcp\"}, // off\n" +
		"\t\t\"mem\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"npx\",\n\t\t\t\"args\": [\n\t\t\t\t\"-y\",\n" +
		"\t\t\t\t\"@modelcontextprotocol/server-memory\"\n\t\t\t],\n\t\t\t\"env\": {\n\t\t\t\t\"A\": \"1\"\n\t\t\t}\n\t\t},\n\t},\n}\n"
	if got := c.readConfig(t); got != want {
		t.Fatalf("after add:\n%s\nwant:\n%s", got, want)
	}
	if code, out, errOut := c.run("disable", "web"); code != exitOK || !strings.Contains(out, "disabled web in "+c.config+" (no serve of it runs)") {
		t.Fatalf("disable: %d %q %q", code, out, errOut)
	}
	if got := c.readConfig(t); !strings.Contains(got, `"url": "http://127.0.0.1:9/mcp", "disabled": true},`) {
		t.Fatalf("after disable:\n%s", got)
	}
	if code, _, errOut := c.run("enable", "web"); code != exitOK {
		t.Fatalf("enable: %d %q", code, errOut)
	}
	if code, _, errOut := c.run("remove", "mem"); code != exitOK {
		t.Fatalf("remove: %d %q", code, errOut)
	}
	if got := c.readConfig(t); got != strings.Replace(text, `"url": "http://127.0.0.1:9/mcp"}`, `"url": "http://127.0.0.1:9/mcp", "disabled": false}`, 1) {
		t.Fatalf("after enable and remove:\n%s", got)
	}
	if code, _, errOut := c.run("reconnect", "web"); code != exitError || !strings.Contains(errOut, "no serve of "+c.config+" runs") {
		t.Fatalf("reconnect without a serve: %d %q", code, errOut)
	}
	if code, _, errOut := c.run("add", "--header", "X-Token", "bad", "http://127.0.0.1:9/mcp"); code != exitUsage ||
		!strings.Contains(errOut, "--header wants 'Name: value'") {
		t.Fatalf("a bad header: %d %q", code, errOut)
	}
	if code, _, errOut := c.run("add", "a__b", "x"); code != exitUsage || !strings.Contains(errOut, "cannot be a server's") {
		t.Fatalf("a name with __: %d %q", code, errOut)
	}
	names := []string{}
	for _, l := range strings.Split(c.readConfig(t), "\n") {
		if strings.Contains(l, `": {`) {
			names = append(names, strings.TrimSpace(l))
		}
	}
	if slices.ContainsFunc(names, func(s string) bool { return strings.HasPrefix(s, `"bad"`) }) {
		t.Fatal("a refused entry was written")
	}
}

// TestAddNotesOwnFlags: a flag of add's own after the server's command
// goes to the server, as everything there does, and add says so on
// stderr; a command line without one gets no note.
func TestAddNotesOwnFlags(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{})
	code, out, errOut := c.run("add", "search", "/tmp/x/demo", "--config", "mcp.json", "-wait=1s", "-v")
	if code != exitOK || !strings.Contains(out, "added search") {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "note: --config, -wait=1s went to the server search as its arguments; mcpfleet add's own flags go before the name") ||
		strings.Count(errOut, "\n") != 1 {
		t.Fatalf("add's note: %q", errOut)
	}
	if got := strings.Join(strings.Fields(c.readConfig(t)), ""); !strings.Contains(got, `"args":["--config","mcp.json","-wait=1s","-v"]`) {
		t.Fatalf("the server's arguments are not as given:\n%s", got)
	}
	if code, _, errOut = c.run("add", "memory", "npx", "-y", "@modelcontextprotocol/server-memory"); code != exitOK || errOut != "" {
		t.Fatalf("add without a flag of its own: %d %q", code, errOut)
	}
}

// TestWaitHelp: enable's and disable's -h say what --wait does for each.
func TestWaitHelp(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{})
	_, _, enable := c.runBare("enable", "-h")
	_, _, disable := c.runBare("disable", "-h")
	if !strings.Contains(enable, "to connect on the serve, once enabled") {
		t.Errorf("enable -h:\n%s", enable)
	}
	if strings.Contains(disable, "once enabled") || !strings.Contains(disable, "not used by disable") {
		t.Errorf("disable -h:\n%s", disable)
	}
}
