package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/client"
)

// TestInstall: install writes the client's entry that runs mcpfleet serve
// of the config, into the client's file, keeping what the file had (VS
// Code's comments and trailing commas), or prints it; it will not replace
// an entry without --force, nor write into the config it serves.
func TestInstall(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{})
	config, _ := filepath.Abs(c.config)
	dir := t.TempDir()
	vscode := filepath.Join(dir, "mcp.json")
	text := "{\n\t// mine\n\t\"servers\": {\n\t\t\"web\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:9/mcp\"},\n\t},\n}\n"
	if err := os.WriteFile(vscode, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := c.run("install", "--file", vscode, "--command", "/opt/mcpfleet", "vscode")
	if code != exitOK || !strings.Contains(out, `wrote the entry "mcpfleet" to `+vscode) {
		t.Fatalf("install vscode: %d %q %q", code, out, errOut)
	}
	b, _ := os.ReadFile(vscode)
	if !strings.HasPrefix(string(b), "{\n\t// mine\n\t\"servers\": {\n\t\t\"web\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:9/mcp\"},\n") {
		t.Fatalf("the file lost what it had:\n%s", b)
	}
	cfg, err := client.ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Servers["mcpfleet"]
	if sc.Stdio == nil || sc.Stdio.Command != "/opt/mcpfleet" || strings.Join(sc.Stdio.Args, " ") != "serve --config "+config {
		t.Fatalf("the entry: %+v", sc)
	}
	if code, _, errOut := c.run("install", "--file", vscode, "--command", "/opt/mcpfleet", "vscode"); code != exitError || !strings.Contains(errOut, "--force replaces it") {
		t.Fatalf("again: %d %q", code, errOut)
	}
	if code, _, errOut := c.run("install", "--file", vscode, "--force", "--command", "/opt/other", "vscode"); code != exitOK {
		t.Fatalf("--force: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(vscode); !strings.Contains(string(b), "/opt/other") || strings.Contains(string(b), "/opt/mcpfleet") {
		t.Fatalf("after --force:\n%s", b)
	}

	// A new file of Claude Desktop's, and the snippet printed.
	claude := filepath.Join(dir, "Claude", "claude_desktop_config.json")
	if code, _, errOut := c.run("install", "--file", claude, "--command", "/opt/mcpfleet", "claude"); code != exitOK {
		t.Fatalf("install claude into a new file: %d %q", code, errOut)
	}
	var doc map[string]map[string]map[string]any
	if b, _ := os.ReadFile(claude); json.Unmarshal(b, &doc) != nil || doc["mcpServers"]["mcpfleet"]["command"] != "/opt/mcpfleet" {
		t.Fatalf("Claude Desktop's new file:\n%s", b)
	}
	code, out, _ = c.run("install", "--print", "--command", "/opt/mcpfleet", "cursor")
	if code != exitOK || json.Unmarshal([]byte(out), &doc) != nil || doc["mcpServers"]["mcpfleet"]["args"] == nil {
		t.Fatalf("--print: %d %s", code, out)
	}

	// The config mcpfleet serves is no place for its own entry.
	if code, _, errOut := c.run("install", "--file", c.config, "--command", "/opt/mcpfleet", "claude"); code != exitError ||
		!strings.Contains(errOut, "is the config mcpfleet serves") {
		t.Fatalf("into the config itself: %d %q", code, errOut)
	}
	if code, _, errOut := c.run("install", "zed"); code != exitUsage || !strings.Contains(errOut, "claude, cursor or vscode") {
		t.Fatalf("an unknown client: %d %q", code, errOut)
	}
}

// TestUsageMatchesHelp: every command's -h shows the arguments the usage
// lists for it, and every flag the usage names is one the command takes;
// a command offers --json only if it prints something for programs (auth
// does not).
func TestUsageMatchesHelp(t *testing.T) {
	c := newCLI(t)
	c.writeConfig(map[string]any{})
	code, usage, _ := c.runBare("help")
	if code != exitOK {
		t.Fatal(usage)
	}
	fits(t, usage)
	flagRE := regexp.MustCompile(`--([a-z-]+)`)
	for _, d := range commandDocs {
		line := "  mcpfleet " + strings.TrimSpace(d.name+" "+d.args)
		if !strings.Contains(usage, line) {
			t.Errorf("the usage lacks %q", line)
		}
		code, _, help := c.runBare(d.name, "-h")
		if code != exitOK || !strings.Contains(help, "usage: mcpfleet "+d.name) {
			t.Errorf("%s -h: %d %q", d.name, code, help)
			continue
		}
		if d.name != "add" && !strings.HasPrefix(help, "usage: mcpfleet "+strings.TrimSpace(d.name+" "+d.args)+" [flags]\n") {
			t.Errorf("%s -h starts %q, not with the usage's %q", d.name, strings.SplitN(help, "\n", 2)[0], d.args)
		}
		for _, m := range flagRE.FindAllStringSubmatch(d.args, -1) {
			if !strings.Contains(help, "  -"+m[1]) {
				t.Errorf("%s names --%s, which its -h does not list", d.name, m[1])
			}
		}
	}
	if _, _, help := c.runBare("auth", "-h"); strings.Contains(help, "-json") {
		t.Errorf("auth offers -json, which it ignores:\n%s", help)
	}
}
