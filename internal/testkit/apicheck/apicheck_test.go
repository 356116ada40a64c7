package apicheck

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write the current API to api/*.txt")

// root is the module's root, two levels above this package's three.
const root = "../../.."

// TestAPI fails when the exported API of a recorded package differs from
// its record in api/: a change of the API must update the record in the
// same change (make api-update) and say so in CHANGELOG.md.
func TestAPI(t *testing.T) {
	api, err := Dump(root, Packages)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range Packages {
		file := filepath.Join(root, File(rel))
		got := api[rel]
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: no record of its API (%v): run make api-update and commit %s", rel, err, File(rel))
			continue
		}
		removed, added := Diff(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), got)
		if len(removed)+len(added) == 0 {
			continue
		}
		var b strings.Builder
		for _, l := range removed {
			b.WriteString("\n  - " + l)
		}
		for _, l := range added {
			b.WriteString("\n  + " + l)
		}
		kind := "compatible (names added)"
		if len(removed) > 0 {
			kind = "INCOMPATIBLE (names removed or changed)"
		}
		t.Errorf("the API of %s changed, %s:%s\nIf this is meant, run make api-update, commit %s with the change and say it in CHANGELOG.md.",
			rel, kind, b.String(), File(rel))
	}
}

// TestAPIChangeNoticed shows the check at work on a made-up change: a copy
// of lifecycle with one exported function more, and one of its methods
// gone, differs from lifecycle by exactly those.
func TestAPIChangeNoticed(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "lifecycle"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "lifecycle")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		// Take Publishes of State away (a method gone).
		data = []byte(strings.Replace(string(data), "func (s State) Publishes() bool", "func (s State) publishes() bool", 1))
		if err := os.WriteFile(filepath.Join(dir, "lifecycle", e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	extra := "package lifecycle\n\n// MadeUp is the made-up change.\nfunc MadeUp() int { return 1 }\n"
	if err := os.WriteFile(filepath.Join(dir, "lifecycle", "madeup.go"), []byte(extra), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module github.com/mcpfleet/mcpfleet\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Dump(dir, []string{"lifecycle"})
	if err != nil {
		t.Fatal(err)
	}
	base, err := Dump(root, []string{"lifecycle"})
	if err != nil {
		t.Fatal(err)
	}
	removed, added := Diff(base["lifecycle"], got["lifecycle"])
	if !slices.Equal(added, []string{"func MadeUp() int"}) {
		t.Errorf("added = %q, want the made-up function", added)
	}
	if !slices.Equal(removed, []string{"method (State) Publishes() bool"}) {
		t.Errorf("removed = %q, want State's Publishes", removed)
	}
}

// Every exported name of package client, and every method of its Manager,
// is in docs/DESIGN.md's table of what each is for: a name added without
// a word there fails here.
func TestClientNamesSaidInDesign(t *testing.T) {
	api, err := os.ReadFile(filepath.Join(root, File("client")))
	if err != nil {
		t.Fatal(err)
	}
	design, err := os.ReadFile(filepath.Join(root, "docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	const head = "## The client's public names"
	_, section, ok := strings.Cut(string(design), head)
	if !ok {
		t.Fatalf("docs/DESIGN.md has no section %q", head)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(api)) {
		f := strings.Fields(line)
		var name string
		switch {
		case len(f) >= 2 && (f[0] == "const" || f[0] == "var" || f[0] == "type"):
			name = strings.TrimSuffix(f[1], ",")
		case len(f) >= 2 && f[0] == "func":
			name, _, _ = strings.Cut(f[1], "(")
		case len(f) >= 3 && f[0] == "method" && f[1] == "(*Manager)":
			name, _, _ = strings.Cut(f[2], "(")
		default:
			continue
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/DESIGN.md's %q does not say what client.%s is for", head, name)
		}
	}
	if len(seen) < 100 {
		t.Fatalf("read only %d names from %s: has its format changed?", len(seen), File("client"))
	}
}
