package client

import (
	"slices"
	"strings"
	"testing"
)

// TestParseConfigUnknownKeys: with WithUnknownKeys, the keys other hosts
// keep in their files (Claude Desktop's globalShortcut at the top, Cline's
// autoApprove in an entry) are reported and skipped; a typo of a known key
// and an unknown key in mcpfleet's own blocks are still errors. Without
// it, every unknown key is an error.
func TestParseConfigUnknownKeys(t *testing.T) {
	const file = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "a": {"command": "a", "autoApprove": ["read"], "alwaysAllow": []}
  }
}`
	var got []string
	cfg, err := ParseConfig([]byte(file), WithUnknownKeys(func(server, key string) { got = append(got, server+"/"+key) }))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/globalShortcut", "a/alwaysAllow", "a/autoApprove"}; !slices.Equal(got, want) {
		t.Fatalf("reported %v, want %v", got, want)
	}
	if cfg.Servers["a"].Stdio.Command != "a" {
		t.Fatalf("the entry: %+v", cfg.Servers["a"])
	}
	if _, err := ParseConfig([]byte(file)); err == nil || !strings.Contains(err.Error(), "globalShortcut") {
		t.Fatalf("without the option: %v", err)
	}
	for _, bad := range []string{
		`{"mcpServers": {"a": {"comand": "a"}}}`,
		`{"mcpServers": {"a": {"command": "a", "reconnect": {"maxAtempts": 3}}}}`,
	} {
		if _, err := ParseConfig([]byte(bad), WithUnknownKeys(func(string, string) {})); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
