//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the stdio servers the config starts.
	faultserver.Main()
	goleak.VerifyTestMain(m)
}

// TestHost drives the host through its stdin as a developer would: look at
// the fleet, call tools, switch a server off and on, edit the config file
// and reload it, quit.
func TestHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	web := httpserver.Start(t, httpserver.MCPGo)
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, map[string]any{
		"a":      stdioEntry(faultserver.ModeNormal),
		"b":      stdioEntry(faultserver.ModeNormal),
		"broken": stdioEntry(faultserver.ModeExitAtStart),
		"lazy":   lazyEntry(),
		"web":    map[string]any{"url": web.URL()},
	})

	h := startHost(ctx, t, path)
	h.expect("host: 5 servers from " + path)

	for _, name := range []string{"a", "b", "web"} {
		h.expectEvent(" " + name + " Connecting -> Connected (generation 1)")
	}
	// A server that dies at start, the same way three times in a row,
	// cannot start: it settles at once, and status says why.
	h.expectEvent(" broken Connecting -> PermanentlyFailed", "3 times in a row", "exit status 3")

	h.send("status")
	h.expect("SERVER", "STATE", "GEN", "TOOLS", "QUARANTINED", "RETRY", "IDLE")
	h.expectRow("a", "Connected", "1", "5", "0", "-", "-")
	h.expectRow("b", "Connected", "1", "5", "0", "-", "-")
	h.expectRow("broken", "PermanentlyFailed", "0", "0", "0")
	h.expect("  last error: ") // under its row (stderr below shows it whole)
	h.expectRow("lazy", "Disconnected", "0", "0", "0")
	h.expectRow("web", "Connected", "1")

	h.send("tools")
	h.expect("a__echo", "Returns its text argument.")
	h.expect("b__add", "Returns a+b.")
	h.expect("web__echo")

	h.send("tools b")
	h.expect("b__add")
	if line, ok := h.find(func(l string) bool { return strings.HasPrefix(l, "a__") }); ok {
		t.Errorf("tools b lists a tool of a: %q", line)
	}

	h.send(`call a__echo {"text":"hi"}`)
	h.expect("call a__echo: ok")
	h.expectLine("  hi")

	// A lazy server has no tools in the view until its first call, which
	// the host routes to it by name.
	h.send(`call lazy__echo {"text":"awake"}`)
	h.expect("call lazy__echo: ok")
	h.expectLine("  awake")
	h.expectEvent(" lazy Disconnected -> Connecting")

	h.send(`call a__echo {bad`)
	h.expect("call: bad arguments: invalid JSON")
	h.send(`call a__echo ["x"]`)
	h.expect("call: bad arguments: arguments must be a JSON object, not an array")
	h.send(`call a__echo {}`)
	h.expect("call a__echo: TOOL ERROR (isError)")
	h.send(`call nope__echo {}`)
	h.expect("call nope__echo: error", "tool not found")
	h.send(`call b__add {"a": 2, "b": 40}`) // still here after all that
	h.expect("call b__add: ok")
	h.expectLine("  42")

	h.send("disable b")
	h.expect("disable b: done; now Disabled")
	h.send("status")
	h.expectRow("b", "Disabled")
	h.send(`call b__add {"a": 1, "b": 1}`)
	h.expect("call b__add: error", "server disabled")

	h.send("enable b")
	h.expectEvent(" b Connecting -> Connected")

	h.send("reconnect a")
	h.expect("reconnect a: done")
	h.expectEvent(" a ", "-> Connected (generation 2)")
	h.send("stats")
	h.expect("SERVER", "OK", "TOOL_ERROR", "DIALS", "RECONNECTS", "WORST")
	h.expectRow("a", "Connected")
	h.expectRow("(total)", "-", "-")

	h.send("stderr broken")
	h.expect("broken! ", faultserver.ExitAtStartLine)
	h.expect("broken is ", "its last error:")
	h.expect("exit status 3")
	h.send("stderr nope")
	h.expect("stderr: ", "unknown server")
	h.send("frobnicate")
	h.expect(`unknown command "frobnicate"`)

	// The developer edits the file: b goes, c comes, web is switched off.
	writeConfig(t, path, map[string]any{
		"a":      stdioEntry(faultserver.ModeNormal),
		"broken": stdioEntry(faultserver.ModeExitAtStart),
		"c":      stdioEntry(faultserver.ModeNormal),
		"lazy":   lazyEntry(),
		"web":    map[string]any{"url": web.URL(), "disabled": true},
	})
	h.send("reload")
	h.expect("reload " + path + ": added c; removed b; disabled web")
	h.expectEvent(" c Connecting -> Connected (generation 1)")
	h.send(`call c__echo {"text":"from c"}`)
	h.expectLine("  from c")
	h.send("status")
	h.expectRow("a", "Connected", "2") // untouched by the reload: same runtime
	h.expectRow("c", "Connected", "1")
	h.expectRow("lazy", "Connected", "1")
	h.expectRow("web", "Disabled")

	h.send("reload")
	h.expect("reload " + path + ": no changes")

	h.send("help")
	h.expect("commands:")
	h.quit()
	h.expectEvent(" a Connected -> Closed")
	h.expectEvent(" c Connected -> Closed")
	h.finish()
}

// TestHostIdle: a server with an idle timeout is closed once unused for
// it, the timeline says why, its status row says "idle" and its tools stay
// listed; a reload that changes only the idle timeout applies it in place;
// the next call starts the server again, one generation up.
func TestHostIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	idler := func(timeout string) map[string]any {
		e := stdioEntry(faultserver.ModeNormal)
		e["idleTimeout"] = timeout
		return e
	}
	writeConfig(t, path, map[string]any{"a": stdioEntry(faultserver.ModeNormal), "i": idler("300ms")})
	h := startHost(ctx, t, path)

	h.expectEvent(" a Connecting -> Connected (generation 1)")
	h.expectEvent(" i Connecting -> Connected (generation 1)")
	h.expectEvent(" i Connected -> Disconnected (generation 1): idle timeout: no use for 300ms")
	h.send("status")
	h.expect("SERVER", "STATE", "RETRY", "IDLE")
	h.expectRow("a", "Connected", "1", "5", "0", "-", "-")
	h.expectRow("i", "Disconnected", "1", "5", "0", "-", "idle")
	h.send("tools i")
	h.expect("i__echo")

	writeConfig(t, path, map[string]any{"a": stdioEntry(faultserver.ModeNormal), "i": idler("1h")})
	h.send("reload")
	h.expect("reload " + path + ": no changes")
	h.expect("reload: i idle timeout 300ms -> 1h0m0s, in place")

	h.send(`call i__echo {"text":"back"}`)
	h.expect("call i__echo: ok")
	h.expectLine("  back")
	h.expectEvent(" i Disconnected -> Connecting (generation 1)")
	h.expectEvent(" i Connecting -> Connected (generation 2)")
	h.send("status")
	h.expectRow("i", "Connected", "2", "5", "0", "-", "after", "1h0m0s")

	h.quit()
	h.finish()
}

// TestHostEOF checks that the end of stdin quits like quit does, and that
// a config file that does not parse stops the host with an error naming it.
func TestHostEOF(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, map[string]any{"a": stdioEntry(faultserver.ModeNormal)})
	out := newLineLog()
	if err := run(ctx, []string{"-config", path}, strings.NewReader("status\n"), out); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	proctest.NoChildren(t)

	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"comand": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(ctx, []string{"-config", path}, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"comand": unknown key (did you mean "command"?)`) {
		t.Errorf("run with a bad config: got %v, want an error naming the file and the bad key", err)
	}
}

// TestHostNoConfig: without -config the host reads ./mcp.json; when there
// is none it says what to do (the flag, the sample, the format) and
// returns without an error.
func TestHostNoConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Chdir(t.TempDir())
	out := newLineLog()
	if err := run(ctx, nil, strings.NewReader(""), out); err != nil {
		t.Fatalf("run with no config: %v\n%s", err, out)
	}
	for _, want := range []string{"no config file", "-config", "go run ./examples/host -config examples/host/mcp.json", `"mcpServers"`, `"servers"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, l := range out.snapshot() {
		if len([]rune(l)) > width {
			t.Errorf("line over %d columns: %q", width, l)
		}
	}

	a := stdioEntry(faultserver.ModeNormal)
	if exe, err := os.Executable(); err == nil {
		a["command"] = exe // os.Args[0] may be relative to the directory left
	}
	writeConfig(t, "mcp.json", map[string]any{"a": a})
	out = newLineLog()
	if err := run(ctx, nil, strings.NewReader("status\n"), out); err != nil {
		t.Fatalf("run with ./mcp.json: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "host: 1 server from mcp.json") {
		t.Errorf("./mcp.json not read:\n%s", out)
	}
	proctest.NoChildren(t)
}

// TestSampleConfig: the sample config the host ships parses, its Go
// servers run the demo (which is in the repository), and the one that
// needs npm is off until enabled.
func TestSampleConfig(t *testing.T) {
	cfg, err := client.LoadConfig("mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 3 {
		t.Fatalf("servers %v", cfg.Servers)
	}
	for name, sc := range cfg.Servers {
		if _, err := sc.Spec(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		switch name {
		case "notes", "search":
			// The sample is run from the repository root.
			if sc.Stdio.Command != "go" || !slices.Equal(sc.Stdio.Args, []string{"run", "./examples/demo"}) || sc.Stdio.Env["MCPFLEET_DEMO_SERVER"] != name {
				t.Errorf("%s: %v", name, sc)
			}
			if _, err := os.Stat(filepath.Join("..", "demo", "main.go")); err != nil {
				t.Errorf("%s runs ./examples/demo: %v", name, err)
			}
		case "everything":
			if !sc.Disabled || !strings.HasPrefix(sc.Stdio.Command, npmtest.Dir+"/node_modules/.bin/") {
				t.Errorf("everything: %v", sc)
			}
		default:
			t.Errorf("unexpected server %q", name)
		}
	}
}

// TestHostInputs: a VS Code config's ${input:id} without a default is
// asked for on stdin, once (a reload does not ask again); one with a
// default takes it.
func TestHostInputs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	a := stdioEntry(faultserver.ModeNormal)
	a["env"].(map[string]string)["TOKEN"] = "${input:token}"
	a["env"].(map[string]string)["REGION"] = "${input:region}"
	b, err := json.Marshal(map[string]any{
		"inputs": []map[string]any{
			{"type": "promptString", "id": "token", "description": "API token", "password": true},
			{"type": "promptString", "id": "region", "description": "Region", "default": "eu"},
		},
		"servers": map[string]any{"a": a},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHost(ctx, t, path)
	h.expect(`host: the config asks for input "token" (API token); it is a secret, and what you type is shown:`)
	if _, ok := h.find(func(l string) bool { return strings.Contains(l, `"region"`) }); ok {
		t.Error("asked for an input that has a default")
	}
	h.send("tok-123")
	h.expect("host: 1 server from " + path)
	h.expectEvent(" a Connecting -> Connected (generation 1)")
	h.send("reload")
	h.expect("reload " + path + ": no changes")
	h.quit()
	if n := strings.Count(h.out.String(), "asks for input"); n != 1 {
		t.Errorf("asked %d times, want once", n)
	}
	h.finish()
}

// lazyEntry is a config entry for a fault server that starts on first use.
func lazyEntry() map[string]any {
	e := stdioEntry(faultserver.ModeNormal)
	e["lazy"] = true
	return e
}

// stdioEntry is a config entry that starts the fault server: this test
// binary, re-executed.
func stdioEntry(mode string) map[string]any {
	inv := faultserver.Command(mode)
	return map[string]any{"command": inv.Path, "args": inv.Args, "env": inv.Env}
}

func writeConfig(t *testing.T, path string, servers map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Write and rename, so that the host never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// driver types commands into the host and reads what it prints.
type driver struct {
	t    *testing.T
	ctx  context.Context
	in   *io.PipeWriter
	out  *lineLog
	errc chan error // what run returned
	// sent is the first line printed after the last command was sent.
	sent int
	// mark is the first output line the next expectation looks at: sent,
	// or the line after the last one expect matched.
	mark int
}

// startHost runs the host on the config at path, its stdin a pipe that
// the driver writes.
func startHost(ctx context.Context, t *testing.T, path string) *driver {
	stdin, in := io.Pipe()
	d := &driver{t: t, ctx: ctx, in: in, out: newLineLog(), errc: make(chan error, 1)}
	go func() { d.errc <- run(ctx, []string{"-config", path}, stdin, d.out) }()
	return d
}

// quit sends quit, waits for the host to return, and closes its stdin,
// which ends its stdin reader.
func (d *driver) quit() {
	d.t.Helper()
	d.send("quit")
	select {
	case err := <-d.errc:
		if err != nil {
			d.t.Fatalf("run: %v\n%s", err, d.out)
		}
	case <-d.ctx.Done():
		d.t.Fatalf("run did not return after quit\n%s", d.out)
	}
	d.in.Close()
}

// finish checks that no child outlived the host, and logs its output if
// the test failed or runs verbose.
func (d *driver) finish() {
	d.t.Helper()
	proctest.NoChildren(d.t)
	if d.t.Failed() || testing.Verbose() {
		d.t.Logf("output:\n%s", d.out)
	}
}

func (d *driver) send(cmd string) {
	d.t.Helper()
	d.sent = d.out.len()
	d.mark = d.sent
	if _, err := fmt.Fprintln(d.in, cmd); err != nil {
		d.t.Fatalf("send %q: %v", cmd, err)
	}
}

// expect waits for an answer line (not a timeline line) after the mark that
// contains every part, and moves the mark past it, so that consecutive
// expectations match in order.
func (d *driver) expect(parts ...string) {
	d.t.Helper()
	d.wait(fmt.Sprintf("a line containing %q", parts), func(l string) bool {
		return !strings.HasPrefix(l, "* ") && containsAll(l, parts)
	})
}

// expectEvent waits for a timeline line printed since the last command was
// sent that contains every part. It leaves the mark alone: events arrive on
// their own schedule, before or after the command's answer.
func (d *driver) expectEvent(parts ...string) {
	d.t.Helper()
	what := fmt.Sprintf("an event containing %q", parts)
	if _, err := d.out.waitFor(d.ctx, d.sent, func(l string) bool {
		return strings.HasPrefix(l, "* ") && containsAll(l, parts)
	}); err != nil {
		d.t.Fatalf("waiting for %s: %v\noutput:\n%s", what, err, d.out)
	}
}

// expectRow waits for a status row of server whose columns begin with
// cols.
func (d *driver) expectRow(server string, cols ...string) {
	d.t.Helper()
	want := append([]string{server}, cols...)
	d.wait(fmt.Sprintf("a status row %q", want), func(l string) bool {
		f := strings.Fields(l)
		return len(f) >= len(want) && slices.Equal(f[:len(want)], want)
	})
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// expectLine waits for a line after the mark equal to want.
func (d *driver) expectLine(want string) {
	d.t.Helper()
	d.wait(fmt.Sprintf("the line %q", want), func(l string) bool { return l == want })
}

func (d *driver) wait(what string, match func(string) bool) {
	d.t.Helper()
	i, err := d.out.waitFor(d.ctx, d.mark, match)
	if err != nil {
		d.t.Fatalf("waiting for %s: %v\noutput:\n%s", what, err, d.out)
	}
	d.mark = i + 1
}

// find reports a line printed since the last command was sent that
// matches, without waiting.
func (d *driver) find(match func(string) bool) (string, bool) {
	for _, l := range d.out.snapshot()[d.sent:] {
		if match(l) {
			return l, true
		}
	}
	return "", false
}

// lineLog is an io.Writer that keeps what is written as lines and wakes
// whoever waits for a new one.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	grew    chan struct{} // closed and replaced when a line is added
}

func newLineLog() *lineLog { return &lineLog{grew: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		close(l.grew)
		l.grew = make(chan struct{})
	}
	return len(p), nil
}

func (l *lineLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

func (l *lineLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// waitFor returns the index of the first line at or after from that
// matches, waiting for more lines until ctx ends.
func (l *lineLog) waitFor(ctx context.Context, from int, match func(string) bool) (int, error) {
	for {
		l.mu.Lock()
		for i := from; i < len(l.lines); i++ {
			if match(l.lines[i]) {
				l.mu.Unlock()
				return i, nil
			}
		}
		from = len(l.lines)
		grew := l.grew
		l.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (l *lineLog) String() string { return strings.Join(l.snapshot(), "\n") }

// TestHostToolFilter drives allow and deny: the View follows at once, the
// server is not reconnected, a filtered tool's call says why, and a reload
// puts back the filter of the config file.
func TestHostToolFilter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "mcp.json")
	a := stdioEntry(faultserver.ModeNormal)
	a["tools"] = map[string]any{"deny": []string{"big"}}
	writeConfig(t, path, map[string]any{"a": a})

	h := startHost(ctx, t, path)
	h.expect("host: 1 server from " + path)
	h.expectEvent(" a Connecting -> Connected (generation 1)")

	h.send("tools a")
	h.expect("a__echo")
	h.expect("(1 more filtered out: deny [big])")
	h.send("status")
	h.expectRow("a", "Connected", "1", "4")

	h.send("deny a add p?d")
	h.expect("deny a: done; filter: deny [add p?d]")
	h.expect("a: tools: 3 published, 2 filtered out")
	h.expectEvent(" a catalog added a__big; removed a__add a__pid")
	h.send(`call a__add {"a": 1, "b": 2}`)
	h.expect("call a__add: error", "filtered out", `deny entry "add"`)

	h.send("allow a echo")
	h.expect("allow a: done; filter: allow [echo]; deny [add p?d]")
	h.expect("a: tools: 1 published, 4 filtered out")
	h.send(`call a__echo {"text": "still here"}`)
	h.expectLine("  still here")
	h.send(`call a__sleep {"ms": 1}`)
	h.expect("call a__sleep: error", "filtered out", "no allow entry")

	h.send("allow a [x")
	h.expect("allow a: ", "invalid pattern")
	h.send("allow")
	h.expect("allow: usage: allow <server>")
	h.send("deny nope x")
	h.expect("deny: ", "unknown server")

	h.send("allow a")
	h.expect("allow a: done; filter: deny [add p?d]")
	h.send("deny a")
	h.expect("deny a: done; filter: all tools")
	h.expect("a: tools: 5 published, 0 filtered out")
	// None of it reached the server: same runtime, same generation.
	h.send("status")
	h.expectRow("a", "Connected", "1", "5")

	h.send("reload")
	h.expect("reload " + path + ": reconfigured a")
	h.send("tools a")
	h.expect("(1 more filtered out: deny [big])")
	h.send("status")
	h.expectRow("a", "Connected", "1", "4")

	h.quit()
	h.finish()
}
