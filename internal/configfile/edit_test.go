package configfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
)

// vscodeFile is a VS Code mcp.json as people write it: comments, a
// trailing comma, an input, and a key order of their own.
const vscodeFile = `// My servers. Keep "github" first.
{
	"inputs": [
		{"type": "promptString", "id": "token", "password": true}, // asked once
	],
	"servers": {
		// GitHub's, with my token.
		"github": {
			"url": "https://api.example.com/mcp",
			"headers": {"Authorization": "Bearer ${input:token}"}, /* kept */
		},
		"files": {
			"command": "mcp-server-filesystem",
			"args": ["${workspaceFolder}"]
		},
	},
}
`

func edit(t *testing.T, text string, fn func(d *configfile.Doc) error) string {
	t.Helper()
	d, err := configfile.ParseDoc([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(d); err != nil {
		t.Fatal(err)
	}
	out := string(d.Bytes())
	// Every edit leaves a file the library reads.
	if _, err := client.ParseConfig(d.Bytes(), client.WithWorkspaceFolder("/w"),
		client.WithInputs(func(client.Input) (string, error) { return "x", nil }), client.WithUnknownKeys(func(string, string) {})); err != nil {
		t.Fatalf("the edited file does not parse: %v\n%s", err, out)
	}
	return out
}

// TestEditKeepsTheFile: an edit of a VS Code file changes the bytes of
// what it edits and nothing else: comments, trailing commas, tabs and key
// order stay.
func TestEditKeepsTheFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(d *configfile.Doc) error
		want string
	}{
		{"disable", func(d *configfile.Doc) error { return d.SetServerField("files", "disabled", true) },
			strings.Replace(vscodeFile, `"args": ["${workspaceFolder}"]`, `"args": ["${workspaceFolder}"],
			"disabled": true`, 1)},
		{"disable the entry with a trailing comma", func(d *configfile.Doc) error { return d.SetServerField("github", "disabled", true) },
			strings.Replace(vscodeFile, `"Bearer ${input:token}"}, /* kept */`, `"Bearer ${input:token}"},
			"disabled": true, /* kept */`, 1)},
		{"add", func(d *configfile.Doc) error {
			return d.AddServer("memory", map[string]any{"type": "stdio", "command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-memory"}})
		}, strings.Replace(vscodeFile, `"args": ["${workspaceFolder}"]
		},
	},`, `"args": ["${workspaceFolder}"]
		},
		"memory": {
			"args": [
				"-y",
				"@modelcontextprotocol/server-memory"
			],
			"command": "npx",
			"type": "stdio"
		},
	},`, 1)},
		{"remove the first", func(d *configfile.Doc) error { return d.RemoveServer("github") },
			strings.Replace(vscodeFile, `		"github": {
			"url": "https://api.example.com/mcp",
			"headers": {"Authorization": "Bearer ${input:token}"}, /* kept */
		},
`, "", 1)},
		{"remove the last", func(d *configfile.Doc) error { return d.RemoveServer("files") },
			strings.Replace(vscodeFile, `
		"files": {
			"command": "mcp-server-filesystem",
			"args": ["${workspaceFolder}"]
		},
`, "\n", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := edit(t, vscodeFile, tc.fn); got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestEditPlainJSON: Claude Desktop's file, two spaces and no trailing
// commas: a value that exists is replaced in place, the last entry is
// removed with the comma before it, and a file on one line stays on one.
func TestEditPlainJSON(t *testing.T) {
	const claude = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "a": {"command": "a", "disabled": false},
    "b": {
      "command": "b"
    }
  }
}
`
	if got, want := edit(t, claude, func(d *configfile.Doc) error { return d.SetServerField("a", "disabled", true) }),
		strings.Replace(claude, `"disabled": false`, `"disabled": true`, 1); got != want {
		t.Fatalf("set:\n%s", got)
	}
	if got, want := edit(t, claude, func(d *configfile.Doc) error { return d.RemoveServer("b") }), `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "a": {"command": "a", "disabled": false}
  }
}
`; got != want {
		t.Fatalf("remove the last:\n%s", got)
	}
	if got, want := edit(t, claude, func(d *configfile.Doc) error {
		if err := d.RemoveServer("a"); err != nil {
			return err
		}
		return d.RemoveServer("b")
	}), `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {}
}
`; got != want {
		t.Fatalf("remove both:\n%s", got)
	}
	if got, want := edit(t, `{"mcpServers": {"a": {"command": "a"}}}`, func(d *configfile.Doc) error {
		return d.AddServer("b", map[string]any{"url": "http://127.0.0.1:3000/mcp?a=1&b=<2>"})
	}), `{"mcpServers": {"a": {"command": "a"}, "b": {"url": "http://127.0.0.1:3000/mcp?a=1&b=<2>"}}}`; got != want {
		t.Fatalf("one line:\n%s", got)
	}
}

// TestEditMakesWhatIsMissing: a server added to a file without servers, or
// to an empty one, gets the object of servers too.
func TestEditMakesWhatIsMissing(t *testing.T) {
	entry := map[string]any{"command": "x"}
	for in, want := range map[string]string{
		"":                            "{\n  \"mcpServers\": {\n    \"new\": {\n      \"command\": \"x\"\n    }\n  }\n}\n",
		"{\n  \"theme\": \"dark\"\n}": "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"new\": {\n      \"command\": \"x\"\n    }\n  }\n}",
		"{\n  \"mcpServers\": {\n    // none yet\n  }\n}": "{\n  \"mcpServers\": {\n    // none yet\n    \"new\": {\n      \"command\": \"x\"\n    }\n  }\n}",
		"{\"servers\": {}}": "{\"servers\": {\n  \"new\": {\n    \"command\": \"x\"\n  }\n}}",
	} {
		if got := edit(t, in, func(d *configfile.Doc) error { return d.AddServer("new", entry) }); got != want {
			t.Errorf("%q: got\n%s\nwant\n%s", in, got, want)
		}
	}
}

// TestEditRefusals: an edit names a server the file has; an added one a
// name it does not.
func TestEditRefusals(t *testing.T) {
	d, err := configfile.ParseDoc([]byte(`{"mcpServers": {"a": {"command": "a"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveServer("b"); !errors.Is(err, configfile.ErrNoServer) {
		t.Fatalf("remove b: %v", err)
	}
	if err := d.SetServerField("b", "disabled", true); !errors.Is(err, configfile.ErrNoServer) {
		t.Fatalf("disable b: %v", err)
	}
	if err := d.AddServer("a", map[string]any{}); !errors.Is(err, configfile.ErrServerExists) {
		t.Fatalf("add a: %v", err)
	}
	if _, err := configfile.ParseDoc([]byte(`{"mcpServers": {"a": }}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a file that is not JSON: %v", err)
	}
}

// TestWriteFile: the edited text replaces the file through a rename, with
// the file's mode, through a symbolic link to its target; a file changed
// since it was read is not overwritten.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte("{}"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := configfile.WriteFile(link, []byte("{}"), []byte(`{"mcpServers": {}}`)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != `{"mcpServers": {}}` {
		t.Fatalf("the target holds %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if fi, _ := os.Stat(real); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if err := configfile.WriteFile(link, []byte("{}"), []byte(`{"x": 1}`)); err == nil || !strings.Contains(err.Error(), "changed while it was edited") {
		t.Fatalf("a file changed meanwhile: %v", err)
	}
}
