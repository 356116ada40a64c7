//go:build linux

package client

import (
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver/process"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// envQuiet selects TestNothingOnStderr's own process.
const envQuiet = "MCPFLEET_TEST_QUIET"

// TestNothingOnStderr: a Manager with no logger writes nothing to its
// process's stderr, nor does mcp-go under it, through connects, calls, a
// stdio server killed and a streamable HTTP and a legacy SSE server gone:
// every line mcp-go has goes to the Manager's logger at Debug, which
// discards. The servers run in processes of their own, whose output is
// not this process's.
func TestNothingOnStderr(t *testing.T) {
	child, stderr := proctest.SubprocessStderr(t, envQuiet)
	if !child {
		if len(stderr) > 0 {
			t.Fatalf("the process wrote to its stderr:\n%s", stderr)
		}
		return
	}
	streamable := process.Start(t, httpserver.MCPGo)
	sse := process.Start(t, httpserver.MCPGoSSE)
	// The older protocol (the Go SDK's stateful server refuses 2026-07-28):
	// mcp-go listens for notifications on a GET stream, and says so.
	older := process.Start(t, httpserver.GoSDKStateful)
	m := New(WithPolicy(fastPolicy))
	defer m.Close()
	mustAdd(t, m, "stdio", faultSpec(faultserver.ModeNormal))
	mustAdd(t, m, "http", ServerSpec{HTTP: &mcphttp.Spec{URL: streamable.URL()}})
	mustAdd(t, m, "sse", ServerSpec{HTTP: &mcphttp.Spec{URL: sse.URL(), Kind: mcphttp.SSE}})
	mustAdd(t, m, "older", ServerSpec{HTTP: &mcphttp.Spec{URL: older.URL()}})
	for _, name := range []string{"stdio", "http", "sse", "older"} {
		mustWait(t, m, name, lifecycle.Connected)
	}
	if _, err := m.CallTool(testCtx(t), "stdio", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(testCtx(t), "http", "echo", map[string]any{"message": "x"}); err != nil {
		t.Fatal(err)
	}
	pid, _ := childPID(t, m, "stdio")
	kill(t, pid)
	streamable.Stop() // the HTTP servers go away
	sse.Stop()
	older.Stop()
	for _, name := range []string{"http", "sse", "older"} {
		if err := m.WaitFor(testCtx(t), name, lifecycle.PermanentlyFailed); err != nil && !errors.Is(err, ErrClosed) {
			t.Fatal(err)
		}
	}
	mustWait(t, m, "stdio", lifecycle.Connected)
}
