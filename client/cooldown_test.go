package client

import (
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// The shared cooldown names an upstream by its URL without what differs
// per user (userinfo, query, fragment), and reads one schedule for every
// replica: the policy's backoff without jitter, capped. The cooldown
// across replicas, counted at the upstream, and the wake-up are
// internal/testkit/sharedtest's, run on every shared store.
func TestCooldownKeyAndSteps(t *testing.T) {
	key := func(u string) string { return cooldownKey(ServerSpec{HTTP: &mcphttp.Spec{URL: u}}) }
	base := key("https://mcp.example.com/mcp")
	for _, u := range []string{"https://alice:pw@mcp.example.com/mcp", "https://mcp.example.com/mcp?token=secret", "https://mcp.example.com/mcp#x"} {
		if key(u) != base {
			t.Errorf("%s: another upstream than its URL without per-user parts", u)
		}
	}
	if key("https://mcp.example.com/other") == base || key("https://mcp2.example.com/mcp") == base {
		t.Error("two upstreams, one key")
	}
	if k := cooldownKey(ServerSpec{Stdio: &stdio.Spec{Command: "x"}}); k != "" {
		t.Errorf("a stdio server has a shared cooldown: %q", k)
	}
	p := lifecycle.Policy{InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, Multiplier: 2, Jitter: 0.5}
	var got []time.Duration
	for n := range 6 {
		got = append(got, cooldownStep(p, n))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps %v, want %v", got, want)
		}
	}
}
