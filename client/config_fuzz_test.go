package client

import (
	"fmt"
	"testing"
)

// FuzzParseConfig: whatever the input, ParseConfig never panics; what it
// accepts turns into valid specs; and how an entry prints never depends on
// its secret values. `make test` runs it briefly; the seed corpus is in
// testdata/fuzz/FuzzParseConfig.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers": {"a": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "${HOME:-/x}"}}}}`,
		`{"servers": {"b": {"type": "http", "url": "http://127.0.0.1/mcp", "headers": {"Authorization": "Bearer t"}}}}`,
		`{"mcpServers": {"c": {"type": "sse", "url": "http://h/sse", "timeout": "1m", "disabled": true,
			"reconnect": {"maxAttempts": -1, "jitter": 0.1, "probeInterval": "off"}}}}`,
		`{"mcpServers": {"d": {"command": "x", "timeout": 1e300}}}`,
		`{"mcpServers": {"i": {"command": "x", "idleTimeout": "5m", "lazy": true}}}`,
		`{"mcpServers": {"e": {"command": "${A:-${B}}"}}}`,
		`{"mcpServers": {"": {}}}`,
		`{"mcpServers": {"f": {"command": "x", "tools": {"allow": ["read_*", "get_?"], "deny": ["[a-z]x"]}}}}`,
		`{"mcpServers": {"g": {"command": "x", "includeTools": ["a"], "excludeTools": ["${T:-b*}", "[c"]}}}`,
		`[]`, `null`, `{"mcpServers": null}`,
		// VS Code: inputs, its variables, envFile, comments and trailing commas.
		`{"inputs": [{"type": "promptString", "id": "tok", "password": true, "default": "d"},
			{"type": "pickString", "id": "p", "options": ["a", {"label": "B", "value": "b"}]}],
		 "servers": {"v": {"command": "${workspaceFolder}${/}bin", "args": ["${userHome}", "${env:HOME}", "${input:tok}",
			"${workspaceFolderBasename}", "${input:p}", "${command:x}"], "envFile": ".env", /* c */ }, // c
		 }}`,
		// Gemini CLI: httpUrl, url as SSE, timeout in milliseconds, trust, $VAR, other settings.
		`{"ui": {"theme": "x"}, "mcpServers": {"g": {"httpUrl": "http://h/mcp", "timeout": 30000, "trust": true,
			"headers": {"A": "$HOME $NOPE"}}, "s": {"url": "http://h/sse", "description": "d", "cwd": "./x"}}}`,
		`{"mcpServers": {"t": {"command": "x", "timeout": 30000}}}`,
		"{\"mcpServers\": {\n\t\"a\": {\"command\": \"x\" \"env\": {\"K\": \"secret\"}}}}",
	} {
		f.Add([]byte(seed))
	}
	lookup := WithLookupEnv(func(k string) (string, bool) {
		if k == "HOME" {
			return "/home/fuzz", true
		}
		return "", false
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, lookup, WithWorkspaceFolder("/nonexistent/ws"))
		if err != nil {
			if cfg != nil {
				t.Fatal("error with a config")
			}
			return
		}
		for name, sc := range cfg.Servers {
			if _, err := sc.Spec(); err != nil {
				t.Fatalf("server %q accepted but its spec is invalid: %v", name, err)
			}
			redacted := sc
			if s := sc.Stdio; s != nil {
				c := *s
				c.Env = redactValues(s.Env)
				redacted.Stdio = &c
			}
			if h := sc.HTTP; h != nil {
				c := *h
				c.Headers = redactValues(h.Headers)
				redacted.HTTP = &c
			}
			if fmt.Sprintf("%v", sc) != fmt.Sprintf("%v", redacted) {
				t.Fatalf("server %q prints its secret values: %v", name, sc)
			}
		}
	})
}

func redactValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = "REDACTED"
	}
	return out
}
