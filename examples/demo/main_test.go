//go:build linux

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

func TestMain(m *testing.M) {
	serveIfChild() // the demo's stdio servers are this test binary re-executed
	goleak.VerifyTestMain(m)
}

// TestDemo runs the README's first command and checks that the story it
// tells happened: the crashed child and the restarted HTTP server came back
// on their own, the disabled server failed fast and came back when enabled,
// and no child outlived the manager.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"files   Connected -> Reconnecting (generation 1): connection lost: stdio: ",
		"process killed by signal SIGKILL",
		"files   Reconnecting -> Connected (generation 2)",
		"search  Connected -> Reconnecting (generation 1)",
		"search  Reconnecting -> Connected (generation 2)",
		`call search__lookup: search (pid`,
		`call notes/lookup: error: mcpfleet: server "notes": call tool lookup: server disabled`,
		"notes   Disabling -> Disabled",
		`call notes__lookup: notes (pid`,
		"files   Connected -> Closed (generation 2)",
		"stats (before close)",
		"SERVER   REQUESTS  OK  FAILED  DIALS  RECONNECTS",
		"(total)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if strings.Count(text, "found \"mcp\"") != 4 {
		t.Errorf("want 4 successful lookups")
	}
	if t.Failed() {
		t.Log(text)
	}
	proctest.NoChildren(t)
}
