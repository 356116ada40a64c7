package gateway_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
)

// TestToolSearchMode: with WithToolSearch the gateway serves the two
// meta-tools instead of the catalog; search_tools finds a fleet's tool,
// and call_tool calls it as a direct call would, the server's requests
// going to the caller included.
func TestToolSearchMode(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{
		"a": {Dialer: client.InProcess(upstream.New("a").MCPServer)},
		"b": {Dialer: client.InProcess(upstream.New("b").MCPServer)},
	}, gateway.WithToolSearch())
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ann := &answering{who: "ann"}
			c := dial(t, url, p.version, ann.options()...)
			if got := toolNames(t, c); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
				t.Fatalf("tools %v", got)
			}
			var found struct {
				Tools []struct{ Name string } `json:"tools"`
			}
			text := mustCall(t, c, "search_tools", map[string]any{"query": "complete a prompt with the model", "limit": 2})
			if err := json.Unmarshal([]byte(text), &found); err != nil || len(found.Tools) == 0 {
				t.Fatalf("search: %s %v", text, err)
			}
			if n := found.Tools[0].Name; n != "a__sample" && n != "b__sample" {
				t.Fatalf("best hit %s", n)
			}
			if got := mustCall(t, c, "call_tool", map[string]any{"name": "b__echo", "arguments": map[string]any{"text": "hi"}}); got != "hi" {
				t.Fatalf("call_tool echo: %q", got)
			}
			if got := mustCall(t, c, "call_tool", map[string]any{"name": "a__sample", "arguments": map[string]any{"prompt": "p"}}); got != "ann answers p" {
				t.Fatalf("call_tool sample: %q", got)
			}
		})
	}
}
