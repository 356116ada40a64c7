package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// parseErr parses js and returns its error text, failing if it parsed.
func parseErr(t *testing.T, js string, opts ...ConfigOption) string {
	t.Helper()
	cfg, err := ParseConfig([]byte(js), append([]ConfigOption{env(nil), WithSource("cfg.json")}, opts...)...)
	if err == nil {
		t.Fatalf("accepted: %v", cfg.Servers)
	}
	return err.Error()
}

// wantAll fails unless s holds every part.
func wantAll(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%q lacks %q", s, p)
		}
	}
}

// TestLoadConfigVSCodeFile reads a workspace's .vscode/mcp.json as VS Code
// writes it (testdata/config/vscode): comments, trailing commas, inputs
// answered by the host (once each) or by their defaults, ${env:VAR},
// ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename}, ${/} and
// envFile (absolute through ${workspaceFolder}, and relative).
func TestLoadConfigVSCodeFile(t *testing.T) {
	ws, err := filepath.Abs("testdata/config/vscode")
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	var asked []Input
	inputs := WithInputs(func(in Input) (string, error) {
		asked = append(asked, in)
		if in.ID == "github-token" {
			return "ghp-secret", nil
		}
		return in.Default, nil // what a user who presses enter gets
	})
	cfg, err := LoadConfig(filepath.Join(ws, ".vscode", "mcp.json"), env(map[string]string{"SHELL": "/bin/zsh"}),
		WithWorkspaceFolder(ws), inputs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dialect != DialectVSCode {
		t.Errorf("dialect %q, want vscode", cfg.Dialect)
	}
	sep := string(filepath.Separator)
	files := cfg.Servers["files"]
	if want := ws + sep + "bin" + sep + "files-server"; files.Stdio.Command != want {
		t.Errorf("command %q, want %q", files.Stdio.Command, want)
	}
	if want := []string{"--root", ws, "--name", "vscode", "--home", home}; !slices.Equal(files.Stdio.Args, want) {
		t.Errorf("args %q, want %q", files.Stdio.Args, want)
	}
	wantEnv := map[string]string{
		"REGION": "eu-west-1", "PROFILE": "dev", "EDITOR_SHELL": "/bin/zsh", // env
		"API_KEY": "from-file", "DB_URL": "postgres://u:p@localhost/db?sslmode=disable", // envFile
		"GREETING": "hello # not a comment", "MULTI": "line one\nline two", "PLAIN": "bare value", "EMPTY": "",
	}
	if !mapsEqual(files.Stdio.Env, wantEnv) {
		t.Errorf("files env %q, want %q", files.Stdio.Env, wantEnv)
	}
	if gh := cfg.Servers["github"]; gh.HTTP.Headers["Authorization"] != "Bearer ghp-secret" || gh.Type != "http" {
		t.Errorf("github: %v %q", gh, gh.HTTP.Headers)
	}
	// A relative envFile is read from the workspace folder; the entry's
	// own env wins over the file.
	if m := cfg.Servers["memory"]; m.Stdio.Env["API_KEY"] != "from-env-wins" || m.Stdio.Env["DB_URL"] == "" || m.EnvFile != ".env" {
		t.Errorf("memory: %v", m)
	}
	// Each input was asked once, as the file declares it.
	var ids []string
	for _, in := range asked {
		ids = append(ids, in.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"github-token", "profile", "region"}) {
		t.Errorf("inputs asked %q, want each once", ids)
	}
	for _, in := range asked {
		if in.ID == "github-token" && (!in.Password || in.Type != "promptString" || in.Description != "GitHub personal access token") {
			t.Errorf("github-token input %+v", in)
		}
		if in.ID == "profile" && !slices.Equal(in.Options, []string{"dev", "prod"}) {
			t.Errorf("profile options %q", in.Options)
		}
	}
	if s := fmt.Sprintf("%v %+v", cfg.Servers["files"], cfg.Servers["github"]); strings.Contains(s, "ghp-secret") ||
		strings.Contains(s, "from-file") || !strings.Contains(s, "envFile=") {
		t.Errorf("printed: %s", s)
	}

	// Without a workspace folder, the file's ${workspaceFolder} is an
	// error naming the server, the field and the option; the relative
	// envFile is read from the config file's directory (.vscode), which
	// has none.
	_, err = LoadConfig(filepath.Join(ws, ".vscode", "mcp.json"), env(map[string]string{"SHELL": "/bin/sh"}), inputs)
	if err == nil {
		t.Fatal("accepted without a workspace folder")
	}
	wantAll(t, err.Error(), `server "files": field "command"`, "${workspaceFolder}", "client.WithWorkspaceFolder",
		`server "memory": field "envFile"`, filepath.Join(ws, ".vscode", ".env"))
	if strings.Contains(err.Error(), "ghp-secret") {
		t.Errorf("error shows an input's value: %v", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestParseConfigVariables: each variable form, what it expands to, and the
// error that names it when it cannot be expanded.
func TestParseConfigVariables(t *testing.T) {
	home, _ := os.UserHomeDir()
	vars := env(map[string]string{"HOME_DIR": "/home/me", "EMPTY": "", "TOKEN": "s3cret"})
	ws := WithWorkspaceFolder(filepath.Join("work", "proj"))
	entry := func(arg string) string { return `{"mcpServers": {"s": {"command": "x", "args": ["` + arg + `"]}}}` }
	for _, tc := range []struct {
		name, arg, want string
		opts            []ConfigOption
	}{
		{"shell form", "${HOME_DIR}/x", "/home/me/x", nil},
		{"shell default", "${NOPE:-/tmp}", "/tmp", nil},
		{"default for empty", "${EMPTY:-d}", "d", nil},
		{"env: form", "${env:HOME_DIR}", "/home/me", nil},
		{"env: form with default", "${env:NOPE:-fallback}", "fallback", nil},
		{"userHome", "${userHome}", home, nil},
		{"workspaceFolder", "${workspaceFolder}", filepath.Join("work", "proj"), []ConfigOption{ws}},
		{"workspaceFolderBasename", "${workspaceFolderBasename}", "proj", []ConfigOption{ws}},
		{"pathSeparator", "a${pathSeparator}b${/}c", "a" + string(filepath.Separator) + "b" + string(filepath.Separator) + "c", nil},
		{"a lone dollar", "cost: $5 and $", "cost: $5 and $", nil},
		{"bare $VAR outside Gemini", "$HOME_DIR", "$HOME_DIR", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(entry(tc.arg)), append([]ConfigOption{vars}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Servers["s"].Stdio.Args[0]; got != tc.want {
				t.Fatalf("%s expanded to %q, want %q", tc.arg, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name, arg string
		want      []string
	}{
		{"unset", "${NOPE}", []string{`field "args[0]"`, "NOPE is not set", "${NOPE:-default}"}},
		{"env: unset", "${env:NOPE}", []string{`field "args[0]"`, "NOPE is not set"}},
		{"no workspace", "${workspaceFolder}/x", []string{`server "s"`, `field "args[0]"`, "no workspace folder", "client.WithWorkspaceFolder"}},
		{"no workspace basename", "${workspaceFolderBasename}", []string{"client.WithWorkspaceFolder"}},
		{"VS Code command", "${command:pick}", []string{`field "args[0]"`, "${command:…} is not supported"}},
		{"VS Code config", "${config:editor.x}", []string{"${config:…} is not supported"}},
		{"bad name", "${1x}", []string{"invalid variable name"}},
		{"unterminated", "${TOKEN", []string{"unterminated ${"}},
		{"undeclared input", "${input:token}", []string{`field "args[0]"`, `no input "token" is declared`, "client.WithInputs"}},
		{"bad input id", "${input:a b}", []string{`invalid input id "a b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := parseErr(t, entry(tc.arg), vars)
			wantAll(t, msg, tc.want...)
			if strings.Contains(msg, "s3cret") {
				t.Errorf("error shows a value: %s", msg)
			}
		})
	}
}

// TestParseConfigInputs: ${input:id} is answered by WithInputs, once per
// id; without it by the input's default; else it is an error naming the
// input. The inputs array itself is checked.
func TestParseConfigInputs(t *testing.T) {
	const file = `{"inputs": [
		{"type": "promptString", "id": "token", "description": "API token", "password": true},
		{"type": "promptString", "id": "region", "description": "Region", "default": "eu"},
		{"type": "command", "id": "picked", "command": "ext.pick", "args": {"x": 1}}],
	"servers": {
		"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${input:token}", "X-Region": "${input:region}"}},
		"b": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Token ${input:token}"}}}}`
	calls := map[string]int{}
	cfg, err := ParseConfig([]byte(file), WithInputs(func(in Input) (string, error) {
		calls[in.ID]++
		if in.ID == "token" {
			return "tok-123", nil
		}
		return in.Default, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := cfg.Servers["a"].HTTP.Headers, cfg.Servers["b"].HTTP.Headers; a["Authorization"] != "Bearer tok-123" ||
		a["X-Region"] != "eu" || b["Authorization"] != "Token tok-123" {
		t.Fatalf("headers %q %q", a, b)
	}
	if calls["token"] != 1 || calls["region"] != 1 || calls["picked"] != 0 {
		t.Fatalf("asked %v, want token and region once each, picked never (unused)", calls)
	}

	// No callback: a default answers; an input without one is an error
	// naming it, at every use.
	msg := parseErr(t, file)
	wantAll(t, msg, `server "a": field "headers.Authorization"`, `server "b": field "headers.Authorization"`,
		"${input:token}", "no \"default\"", "client.WithInputs")
	if strings.Contains(msg, "region") {
		t.Errorf("the input with a default was refused: %s", msg)
	}
	// A callback's error fails the field, naming the input.
	msg = parseErr(t, file, WithInputs(func(in Input) (string, error) { return "", errors.New("user cancelled") }))
	wantAll(t, msg, `field "headers.Authorization"`, `input "token": user cancelled`)

	for _, tc := range []struct{ name, inputs, want string }{
		{"not an array", `{}`, `field "inputs": must be an array`},
		{"no id", `[{"type": "promptString"}]`, `field "inputs[0].id": missing`},
		{"bad type", `[{"id": "a", "type": "promptNumber"}]`, `field "inputs[0].type": want promptString, pickString or command`},
		{"typo", `[{"id": "a", "type": "promptString", "pasword": true}]`, `field "inputs[0].pasword": unknown key (did you mean "password"?)`},
		{"twice", `[{"id": "a", "type": "promptString"}, {"id": "a", "type": "promptString"}]`, `input "a" is declared twice`},
		{"bad option", `[{"id": "a", "type": "pickString", "options": [3]}]`, `field "inputs[0].options[0]"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantAll(t, parseErr(t, `{"inputs": `+tc.inputs+`, "servers": {"s": {"command": "x"}}}`), tc.want)
		})
	}
}

// TestParseConfigEnvFile: envFile's format, where a relative path is read
// from, that env wins over it, and the errors, which name the file and the
// line but never show a value.
func TestParseConfigEnvFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.env", "\xef\xbb\xbf# comment\r\nA=1\r\n\n  export B = two words  \nC=\"q \\\"x\\\" \\\\ \\t\" # c\nD='raw \\n $X'\nA=again\nE=x#y\n")
	entry := func(envFile, extra string) string {
		return `{"mcpServers": {"s": {"command": "x", "envFile": "` + envFile + `"` + extra + `}}}`
	}
	cfg, err := ParseConfig([]byte(entry(filepath.ToSlash(good), `, "env": {"B": "env wins"}`)), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "again", "B": "env wins", "C": "q \"x\" \\ \t", "D": `raw \n $X`, "E": "x#y"}
	if got := cfg.Servers["s"].Stdio.Env; !mapsEqual(got, want) {
		t.Fatalf("env %q, want %q", got, want)
	}

	// A relative path: from the workspace folder if set, else from the
	// directory of the file LoadConfig read.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x.env"), []byte("WHERE=sub\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("x.env", "WHERE=top\n")
	cfgPath := filepath.Join(sub, "mcp.json")
	if err := os.WriteFile(cfgPath, []byte(entry("x.env", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []ConfigOption
		want string
	}{
		{"config dir", nil, "sub"},
		{"workspace folder", []ConfigOption{WithWorkspaceFolder(dir)}, "top"},
	} {
		cfg, err := LoadConfig(cfgPath, tc.opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := cfg.Servers["s"].Stdio.Env["WHERE"]; got != tc.want {
			t.Errorf("%s: read from %q, want %q", tc.name, got, tc.want)
		}
	}

	const secret = "sk-live-do-not-show"
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"no equals", entry(filepath.ToSlash(write("a.env", "OK=1\n"+secret+"\n")), ""),
			[]string{`server "s": field "envFile"`, "a.env:2: want NAME=value"}},
		{"bad name", entry(filepath.ToSlash(write("b.env", "1X="+secret+"\n")), ""), []string{"b.env:1: want NAME=value"}},
		{"unterminated quote", entry(filepath.ToSlash(write("c.env", "\n\nK=\""+secret+"\n")), ""), []string{"c.env:3: K: no closing \""}},
		{"after the quote", entry(filepath.ToSlash(write("d.env", "K='"+secret+"' x\n")), ""), []string{"d.env:1: K: text after the closing quote"}},
		{"every bad line", entry(filepath.ToSlash(write("e.env", "x\ny\n")), ""), []string{"e.env:1:", "e.env:2:"}},
		{"missing", entry(filepath.ToSlash(filepath.Join(dir, "nope.env")), ""), []string{`field "envFile"`, "nope.env"}},
		{"a directory", entry(filepath.ToSlash(dir), ""), []string{"not a regular file"}},
		{"relative without a base", entry("x.env", ""), []string{`"x.env" is relative`, "client.LoadConfig", "client.WithWorkspaceFolder"}},
		{"http server", `{"mcpServers": {"s": {"url": "http://127.0.0.1:1/mcp", "envFile": "` + filepath.ToSlash(good) + `"}}}`,
			[]string{"do not apply to a http server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := parseErr(t, tc.json)
			wantAll(t, msg, tc.want...)
			if strings.Contains(msg, secret) {
				t.Errorf("error shows a value: %s", msg)
			}
		})
	}
}

// TestLoadConfigGeminiFile reads a Gemini CLI settings.json
// (testdata/config/gemini/.gemini): its other settings are skipped,
// httpUrl is streamable HTTP, url legacy SSE, timeout milliseconds,
// trust and description kept, $VAR expanded, includeTools and
// excludeTools the tool filter, cwd passed on.
func TestLoadConfigGeminiFile(t *testing.T) {
	cfg, err := LoadConfig("testdata/config/gemini/.gemini/settings.json", env(map[string]string{
		"DB_CONNECTION_STRING": "postgres://db", "EXTERNAL_API_KEY": "ext-key", "API_TOKEN": "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dialect != DialectGemini {
		t.Fatalf("dialect %q", cfg.Dialect)
	}
	py := cfg.Servers["python"]
	if py.Type != "stdio" || py.Stdio.Dir != "./mcp-servers/python" || py.Timeout != 15*time.Second ||
		py.Stdio.Env["DATABASE_URL"] != "postgres://db" || py.Stdio.Env["API_KEY"] != "ext-key" ||
		!slices.Equal(py.ToolFilter.Allow, []string{"safe_tool", "file_reader"}) || py.ToolFilter.Deny != nil {
		t.Errorf("python: %v %+v %q", py, py.ToolFilter, py.Stdio.Env)
	}
	remote := cfg.Servers["remote"]
	spec, err := remote.Spec()
	if err != nil || spec.HTTP == nil || spec.HTTP.Kind != mcphttp.StreamableHTTP || remote.HTTP.URL != "http://localhost:3000/mcp" ||
		remote.Timeout != 30*time.Second || !remote.Trust || remote.Description != "The team's remote tools" ||
		remote.HTTP.Headers["Authorization"] != "Bearer tok" {
		t.Errorf("remote: %v %+v, %v", remote, spec.HTTP, err)
	}
	legacy := cfg.Servers["legacy"]
	if spec, err := legacy.Spec(); err != nil || legacy.Type != "sse" || spec.HTTP.Kind != mcphttp.SSE ||
		!slices.Equal(legacy.ToolFilter.Deny, []string{"delete_*"}) {
		t.Errorf("legacy: %v, %v", legacy, err)
	}
	if typed := cfg.Servers["typed"]; typed.Type != "http" {
		t.Errorf("typed: url with type http read as %q", typed.Type)
	}
}

// TestParseConfigGemini: how a Gemini CLI file is recognised, what its
// fields mean there and not elsewhere, and its errors.
func TestParseConfigGemini(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		opts       []ConfigOption
		check      func(t *testing.T, cfg *Config)
	}{
		{"httpUrl makes it Gemini's: url is SSE, timeout milliseconds",
			`{"mcpServers": {"h": {"httpUrl": "http://127.0.0.1:1/mcp"}, "s": {"url": "http://127.0.0.1:1/sse", "timeout": 30000}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if cfg.Dialect != DialectGemini || cfg.Servers["h"].Type != "http" || cfg.Servers["s"].Type != "sse" ||
					cfg.Servers["s"].Timeout != 30*time.Second {
					t.Errorf("%q %v", cfg.Dialect, cfg.Servers)
				}
			}},
		{"trust makes it Gemini's", `{"mcpServers": {"s": {"command": "x", "trust": true, "timeout": 500}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if s := cfg.Servers["s"]; cfg.Dialect != DialectGemini || !s.Trust || s.Timeout != 500*time.Millisecond {
					t.Errorf("%q %v", cfg.Dialect, s)
				}
			}},
		{"$schema makes it Gemini's, and its other settings are skipped",
			`{"$schema": "https://raw.githubusercontent.com/google-gemini/gemini-cli/main/schemas/settings.schema.json",
			  "ui": {"theme": "x"}, "mcpServers": {"s": {"url": "http://127.0.0.1:1/sse"}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if cfg.Dialect != DialectGemini || cfg.Servers["s"].Type != "sse" {
					t.Errorf("%q %v", cfg.Dialect, cfg.Servers)
				}
			}},
		{"WithDialect says so", `{"mcpServers": {"s": {"url": "http://127.0.0.1:1/sse", "timeout": 2500}}}`,
			[]ConfigOption{WithDialect(DialectGemini)},
			func(t *testing.T, cfg *Config) {
				if s := cfg.Servers["s"]; s.Type != "sse" || s.Timeout != 2500*time.Millisecond {
					t.Errorf("%v", s)
				}
			}},
		{"a duration string means the same", `{"mcpServers": {"s": {"httpUrl": "http://127.0.0.1:1/mcp", "timeout": "45s"}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if s := cfg.Servers["s"]; s.Timeout != 45*time.Second {
					t.Errorf("%v", s.Timeout)
				}
			}},
		{"$VAR set and unset", `{"mcpServers": {"s": {"command": "x", "trust": false, "args": ["$TOKEN", "$UNSET_ONE", "a$TOKEN-b"]}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if a := cfg.Servers["s"].Stdio.Args; !slices.Equal(a, []string{"t0k", "$UNSET_ONE", "at0k-b"}) {
					t.Errorf("args %q", a)
				}
			}},
		{"elsewhere url without type stays streamable HTTP, timeout seconds",
			`{"mcpServers": {"s": {"url": "http://127.0.0.1:1/mcp", "timeout": 30}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if s := cfg.Servers["s"]; cfg.Dialect != DialectMCPServers || s.Type != "http" || s.Timeout != 30*time.Second {
					t.Errorf("%q %v %v", cfg.Dialect, s, s.Timeout)
				}
			}},
		{"VS Code's file is VS Code's", `{"servers": {"s": {"url": "http://127.0.0.1:1/mcp", "timeout": "1m"}}}`, nil,
			func(t *testing.T, cfg *Config) {
				if s := cfg.Servers["s"]; cfg.Dialect != DialectVSCode || s.Type != "http" || s.Timeout != time.Minute {
					t.Errorf("%q %v", cfg.Dialect, s)
				}
			}},
		{"authProviderType dynamic_discovery is the default", `{"mcpServers": {"s": {"httpUrl": "http://127.0.0.1:1/mcp", "authProviderType": "dynamic_discovery"}}}`, nil,
			func(t *testing.T, cfg *Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.json), append([]ConfigOption{env(map[string]string{"TOKEN": "t0k"})}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg)
		})
	}

	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"Gemini's 30000 read as seconds", `{"mcpServers": {"s": {"command": "x", "timeout": 30000}}}`,
			[]string{`server "s": field "timeout"`, "30000 seconds is 8h20m0s", "client.WithDialect(client.DialectGemini)", `"8h20m0s"`}},
		{"httpUrl and url", `{"mcpServers": {"s": {"httpUrl": "http://h/mcp", "url": "http://h/sse"}}}`,
			[]string{`field "httpUrl"`, "url is set too"}},
		{"httpUrl with type sse", `{"mcpServers": {"s": {"httpUrl": "http://h/mcp", "type": "sse"}}}`,
			[]string{`field "httpUrl"`, "type is sse"}},
		{"negative milliseconds", `{"mcpServers": {"s": {"httpUrl": "http://h/mcp", "timeout": -1}}}`,
			[]string{`field "timeout"`, "milliseconds"}},
		{"trust not a bool", `{"mcpServers": {"s": {"command": "x", "trust": "yes"}}}`, []string{`field "trust"`, "true or false"}},
		{"google credentials", `{"mcpServers": {"s": {"httpUrl": "http://h/mcp", "authProviderType": "google_credentials"}}}`,
			[]string{`field "authProviderType"`, `"google_credentials" is not supported`}},
		{"impersonation", `{"mcpServers": {"s": {"httpUrl": "http://h/mcp", "targetAudience": "x"}}}`,
			[]string{`field "targetAudience"`, "not supported"}},
		{"httpUrl with command", `{"mcpServers": {"s": {"httpUrl": "http://h/mcp", "command": "x"}}}`,
			[]string{"do not apply to a http server"}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantAll(t, parseErr(t, tc.json), tc.want...) })
	}
}

// TestParseConfigSyntaxError: a JSON syntax error names the line and the
// column and shows the line, its string values hidden, with a caret under
// the column.
func TestParseConfigSyntaxError(t *testing.T) {
	for _, tc := range []struct {
		name, json   string
		line, column int
		shown        string // the line as shown
		at           string // the shown line from the caret on
	}{
		{"missing comma", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"npx\" \"args\": []}\n  }\n}",
			3, 28, `"a": {"command": "…" "args": []}`, `"args": []}`},
		{"secret on the line", "{\"mcpServers\": {\"a\": {\"url\": \"http://x\",\n\t\"headers\": {\"Authorization\": \"Bearer sk-SECRET\"}}}}}",
			2, 53, `"headers": {"Authorization": "…"}}}}}`, `}`},
		{"unexpected end", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"}\n", 2, 24, `"a": {"command": "…"}`, ``},
		{"bad value", "{\"mcpServers\": {\"a\": {\"lazy\": yes}}}", 1, 31, `{"mcpServers": {"a": {"lazy": yes}}}`, "yes}}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := parseErr(t, tc.json)
			if strings.Contains(msg, "SECRET") {
				t.Errorf("the error shows a string value: %s", msg)
			}
			wantAll(t, msg, fmt.Sprintf("cfg.json: line %d, column %d: invalid JSON: ", tc.line, tc.column))
			lines := strings.Split(msg, "\n")
			if len(lines) != 3 {
				t.Fatalf("want the message, the line and the caret:\n%s", msg)
			}
			num := fmt.Sprint(tc.line)
			shown, ok := strings.CutPrefix(lines[1], "  "+num+" | ")
			if !ok || strings.TrimLeft(shown, " \t") != tc.shown {
				t.Fatalf("line shown as %q, want %q", lines[1], tc.shown)
			}
			pad, ok := strings.CutPrefix(lines[2], "  "+strings.Repeat(" ", len(num))+" | ")
			pad, ok2 := strings.CutSuffix(pad, "^")
			if !ok || !ok2 || strings.Trim(pad, " \t") != "" {
				t.Fatalf("caret line %q", lines[2])
			}
			at := string([]rune(shown)[min(utf8.RuneCountInString(pad), utf8.RuneCountInString(shown)):])
			if at != tc.at {
				t.Errorf("caret points at %q, want %q\n%s", at, tc.at, msg)
			}
		})
	}
}

// TestParseConfigSyntaxErrorLongLine: on a minified file the error shows
// only the part of the line around the column, the caret still under it.
func TestParseConfigSyntaxErrorLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := range 20 {
		fmt.Fprintf(&b, `"s%d": {"command": "x"}, `, i)
	}
	b.WriteString(`"bad": {"lazy": nope}}}`)
	msg := parseErr(t, b.String())
	lines := strings.Split(msg, "\n")
	if len(lines) != 3 {
		t.Fatalf("%s", msg)
	}
	shown := strings.TrimPrefix(lines[1], "  1 | ")
	if n := utf8.RuneCountInString(shown); n > excerptWidth+2 || !strings.HasPrefix(shown, "…") {
		t.Errorf("shown %d runes: %q", n, shown)
	}
	pad := strings.TrimSuffix(strings.TrimPrefix(lines[2], "    | "), "^")
	if at := string([]rune(shown)[utf8.RuneCountInString(pad):]); at != "ope}}}" { // "n" began a null
		t.Errorf("caret at %q\n%s", at, msg)
	}
}

// TestParseConfigJSONC: comments and trailing commas, as VS Code and
// Gemini CLI allow them, are accepted; "//" in a string is not a comment.
func TestParseConfigJSONC(t *testing.T) {
	cfg, err := ParseConfig([]byte(`// top
	{ /* block
	     comment */ "mcpServers": {
		"a": {"url": "http://127.0.0.1:1/mcp", // the endpoint
		      "headers": {"X": "a // b /* c */",},},
		"b": {"command": "x", "args": ["1", "2",],}, // trailing
	},}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Servers["a"]; a.HTTP.URL != "http://127.0.0.1:1/mcp" || a.HTTP.Headers["X"] != "a // b /* c */" {
		t.Errorf("a: %v %q", a, a.HTTP.Headers)
	}
	if b := cfg.Servers["b"]; !slices.Equal(b.Stdio.Args, []string{"1", "2"}) {
		t.Errorf("b: %q", b.Stdio.Args)
	}
	wantAll(t, parseErr(t, `{"mcpServers": {} /* unterminated`), "line 1", "invalid JSON")
}

// TestParseConfigSuggestsKeys: an unknown key is reported with the nearest
// known key of its object when it is a likely typo, else with the list.
func TestParseConfigSuggestsKeys(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"entry", `{"mcpServers": {"a": {"comand": "x"}}}`, `server "a": field "comand": unknown key (did you mean "command"?)`},
		{"case", `{"mcpServers": {"a": {"command": "x", "Args": []}}}`, `field "Args": unknown key (did you mean "args"?)`},
		{"swap", `{"mcpServers": {"a": {"command": "x", "evn": {}}}}`, `field "evn": unknown key (did you mean "env"?)`},
		{"top", `{"mcpServer": {}}`, `field "mcpServer": unknown key (did you mean "mcpServers"?)`},
		{"Gemini key", `{"mcpServers": {"a": {"httpURL": "http://h/mcp"}}}`, `(did you mean "httpUrl"?)`},
		{"tools", `{"mcpServers": {"a": {"command": "x", "tools": {"alow": []}}}}`, `field "tools.alow": unknown key (did you mean "allow"?)`},
		{"limits", `{"mcpServers": {"a": {"command": "x", "limits": {"maxMesageBytes": 1}}}}`, `(did you mean "maxMessageBytes"?)`},
		{"reconnect", `{"mcpServers": {"a": {"command": "x", "reconnect": {"maxAttempt": 1}}}}`, `(did you mean "maxAttempts"?)`},
		{"oauth", `{"mcpServers": {"a": {"url": "http://h/mcp", "oauth": {"clientid": "x"}}}}`, `field "oauth.clientid": unknown key (did you mean "clientId"?)`},
		{"nothing near", `{"mcpServers": {"a": {"command": "x", "frobnicate": 1}}}`, `field "frobnicate": unknown key (want one of type, transport, command`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantAll(t, parseErr(t, tc.json), tc.want) })
	}
}

func TestSuggest(t *testing.T) {
	if s := suggest("url", serverKeys); s != "url" {
		t.Errorf("suggest exact = %q", s)
	}
	if s := suggest("xyz", serverKeys); s != "" {
		t.Errorf("suggest(xyz) = %q, want none", s)
	}
}
