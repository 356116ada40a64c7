package main

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// fits fails for every line of out wider than width.
func fits(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > width {
			t.Errorf("line of %d columns, over %d:\n%s", n, width, l)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	return lines
}

// TestStatusFitsWidth renders the status of servers with long names, long
// errors, long retry times and every wide state, and checks that every
// line fits 100 columns, what was cut ends in "…", and the short cells
// are whole.
func TestStatusFitsWidth(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := "a-server-with-a-name-that-goes-on-and-on-" + strings.Repeat("x", 40)
	cause := errors.New(`stdio: start "/opt/servers/very/deep/path/to/the/server/binary/mcp-server-of-everything": ` +
		strings.Repeat("exec format error; ", 10) + "\nsecond line of the cause")
	statuses := []client.ServerStatus{
		{Name: long, State: lifecycle.NeedsAuthorization, Generation: 123456, Tools: 1234, Attempt: 41,
			NextRetry: now.Add(1234*time.Hour + 56*time.Minute + 7890*time.Millisecond), LastError: cause,
			IdleTimeout: 1234 * time.Hour},
		{Name: "short", State: lifecycle.PermanentlyFailed, Attempt: 6, LastError: errors.New("exit status 3")},
		{Name: "idle", State: lifecycle.Disconnected, Generation: 2, Tools: 5, IdleTimeout: 5 * time.Minute,
			IdleSince: now.Add(-2 * time.Minute), CatalogError: errors.New("tools/list: " + strings.Repeat("boom ", 40))},
		{Name: "ok", State: lifecycle.Connected, Generation: 1, Tools: 5},
	}
	var b strings.Builder
	writeStatus(&b, statuses, now)
	lines := fits(t, b.String())
	// The rows, each with its note: the error's first line, wrapped at
	// spaces onto at most three lines indented under it, cut with "…".
	want := []struct {
		prefix, contains string
	}{
		{"SERVER", "QUARANTINED"},
		{long[:12], "…"}, // the name, cut
		{"  last error: stdio: start", ""},
		{"      \"/opt/servers/very/deep/path/to/the/server/binary/mcp-server-of-everything\": exec format", ""},
		{"      error; exec format error;", "…"},
		{"short", "PermanentlyFailed"},
		{"  last error: exit status 3", ""},
		{"idle", "idle 2m0s"},
		{"  catalog error: tools/list: boom", ""},
		{"      boom", ""},
		{"      boom", ""},
		{"ok", "Connected"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w.prefix) || !strings.Contains(lines[i], w.contains) {
			t.Errorf("line %d = %q, want it to start with %q and hold %q", i, lines[i], w.prefix, w.contains)
		}
	}
	if strings.Contains(lines[10], "…") {
		t.Errorf("the catalog error fits three lines but was cut: %q", lines[10])
	}
	if strings.Contains(b.String(), "second line") {
		t.Error("an error's second line is shown in the table")
	}
	// Every short cell is whole, in its column.
	for _, cell := range []string{"NeedsAuthorization", "123456", "1234", "#42 in 1234h56m7.89s", "after 1234h0m0s"} {
		if !strings.Contains(lines[1], cell) {
			t.Errorf("row %q lacks %q", lines[1], cell)
		}
	}
	if f := strings.Fields(lines[5]); len(f) != 8 || f[0] != "short" || f[5] != "6" || f[6] != "failed" || f[7] != "-" {
		t.Errorf("short row %q", f)
	}
}

// TestEventLineFitsWidth: a catalog change with many tools is counted, not
// listed, and an event line is cut to 100 columns unless it carries a
// cause, which is kept whole.
func TestEventLineFitsWidth(t *testing.T) {
	var names []string
	for i := range 30 {
		names = append(names, fmt.Sprintf("everything__tool-number-%d", i))
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    client.Event
		want string
	}{
		{"few tools", client.Event{Time: at, Kind: client.EventCatalog, Server: "s",
			Diff: &snapshot.Diff{Added: []string{"s__a", "s__b"}}}, "* 03:04:05.000 s catalog added s__a s__b"},
		{"many tools", client.Event{Time: at, Kind: client.EventCatalog, Server: "everything",
			Diff: &snapshot.Diff{Added: names, Removed: names[:1], PromptsChanged: true}},
			"* 03:04:05.000 everything catalog added 30 tools; removed 1 tool; prompts changed"},
		{"many quarantined", client.Event{Time: at, Kind: client.EventCatalog, Server: "s",
			Diff: &snapshot.Diff{Quarantined: make([]snapshot.Quarantine, 9)}}, "* 03:04:05.000 s catalog quarantined"},
		{"long cause", client.Event{Time: at, Kind: client.EventState, Server: "s", From: lifecycle.Connecting,
			To: lifecycle.PermanentlyFailed, Err: errors.New(strings.Repeat("cause ", 40) + "exit status 3")},
			"* 03:04:05.000 s Connecting -> PermanentlyFailed (generation 0): cause cause"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := eventLine(tc.e)
			if tc.e.Err != nil {
				if !strings.HasSuffix(line, "exit status 3") {
					t.Errorf("the cause was cut: %q", line)
				}
			} else {
				fits(t, line)
			}
			if !strings.HasPrefix(line, tc.want) {
				t.Errorf("line %q, want it to start with %q", line, tc.want)
			}
		})
	}
}

// TestPublicImportsOnly: the host's own files import no internal package
// of the module, so that they can be copied out as the start of a host.
func TestPublicImportsOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path := strings.Trim(imp.Path.Value, `"`); strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
				t.Errorf("%s imports %s, which a host out of this module cannot", name, path)
			}
		}
	}
}
