package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestSplitPolicy: the policy member is taken out of a config wherever it
// is, and what is left parses with its lines where they were.
func TestSplitPolicy(t *testing.T) {
	for _, tc := range []string{
		"{\n  \"policy\": {\"rules\": []},\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}}\n}",
		"{\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}},\n  \"policy\": {\"rules\": []}\n}",
		"{\"mcpServers\": {}, \"policy\": {\"rules\": []}, \"inputs\": []}",
		"{\"policy\": {\"rules\": []}}",
	} {
		servers, policy, err := SplitPolicy([]byte(tc))
		if err != nil {
			t.Fatalf("%s: %v", tc, err)
		}
		if string(policy) != `{"rules": []}` {
			t.Fatalf("%s: policy %q", tc, policy)
		}
		if bytes.Contains(servers, []byte("policy")) || bytes.Count(servers, []byte("\n")) != strings.Count(tc, "\n") || len(servers) != len(tc) {
			t.Fatalf("%s: left %q", tc, servers)
		}
		if !json.Valid(servers) {
			t.Fatalf("%s: what is left is not JSON: %q", tc, servers)
		}
	}
	if _, _, err := SplitPolicy([]byte("{ // comment\n \"policy\": {}}")); err == nil {
		t.Fatal("a commented file with a policy was split")
	}
	if s, p, err := SplitPolicy([]byte(`{"mcpServers": {}}`)); err != nil || p != nil || string(s) != `{"mcpServers": {}}` {
		t.Fatalf("no policy: %q %q %v", s, p, err)
	}
}
