package client

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestConfigBlockKeys checks that each block (tools, limits, oauth,
// reconnect, an input) accepts every key its unknown-key error lists, and
// lists every key it accepts: the list and the parser are one table, and
// a key added to one and not the other would be refused or left out of
// the suggestion.
func TestConfigBlockKeys(t *testing.T) {
	want := map[string][]string{
		"tools":  {"allow", "deny"},
		"limits": {"maxMessageBytes", "maxCatalogItems", "maxCatalogPages", "notificationRate", "maxServerRequests", "serverRequestRate"},
		"oauth": {"clientId", "clientSecret", "scopes", "callbackPort", "redirectUri", "grant", "clientMetadataUrl",
			"tokenEndpointAuthMethod", "privateKey", "signingAlgorithm", "clientName", "issuer", "idpTokenEndpoint",
			"idpClientId", "idpClientSecret", "idTokenFile"},
		"reconnect": {"initialInterval", "maxInterval", "multiplier", "jitter", "maxAttempts", "maxElapsed", "stableAfter", "probeInterval"},
		"inputs":    {"id", "type", "description", "default", "password", "options", "command", "args"},
	}
	doc := func(block, body string) string {
		if block == "inputs" {
			return `{"inputs": [{` + body + `}], "mcpServers": {"a": {"command": "x"}}}`
		}
		return `{"mcpServers": {"a": {"url": "http://h/mcp", "` + block + `": {` + body + `}}}}`
	}
	listed := regexp.MustCompile(`unknown key \(want one of ([^)]*)\)`)
	for block, keys := range want {
		t.Run(block, func(t *testing.T) {
			_, err := ParseConfig([]byte(doc(block, `"zzzzzzzzzzzz": 1`)))
			m := listed.FindStringSubmatch(fmt.Sprint(err))
			if m == nil {
				t.Fatalf("error = %v, want an unknown key listing the known ones", err)
			}
			if got := strings.Join(keys, ", "); m[1] != got {
				t.Errorf("listed keys = %s\nwant %s", m[1], got)
			}
			for _, k := range keys {
				// A value of the wrong type for every key: an error
				// naming the key, never "unknown key".
				_, err := ParseConfig([]byte(doc(block, fmt.Sprintf("%q: {}", k))))
				if err != nil && strings.Contains(err.Error(), "unknown key") {
					t.Errorf("key %s: %v", k, err)
				}
			}
		})
	}
}
