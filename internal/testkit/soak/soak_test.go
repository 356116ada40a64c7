//go:build linux

package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the Go SDK stdio server.
	gosdkserver.Main()
	goleak.VerifyTestMain(m)
}

// TestSoak runs the fleet under random faults for SOAK (default 30s) and
// fails on any call outside the documented classes, any server not back,
// any leftover child. The Markdown summary goes to stdout between marker
// lines, so that it can be pasted as it is.
func TestSoak(t *testing.T) {
	// What runs now (the testing framework's own) is not the soak's.
	before := goleak.IgnoreCurrent()
	cfg, err := configFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	// Skips (fails under CI) with the command to run when the npm servers
	// are missing, before anything starts.
	tsBin := npmtest.Bin(t, "mcp-server-everything")
	node, resumeScript := npmtest.File(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js")
	if d, ok := t.Deadline(); ok && time.Until(d) < cfg.needs() {
		t.Fatalf("%s=%v needs a test timeout of at least %v (go test -timeout), have %v",
			EnvDuration, cfg.duration, (cfg.needs() + time.Minute - 1).Truncate(time.Minute), time.Until(d).Round(time.Second))
	}
	t.Logf("soak for %v with seed %d (%s=%d replays the schedule as far as timing allows)",
		cfg.duration, cfg.seed, EnvSeed, cfg.seed)

	r := newRun(t, cfg, tsBin, node, resumeScript)
	r.start()
	r.soak()
	r.settle()
	r.checkSessions()
	r.shutdown()
	if n := r.led.unaccounted(); n > 0 {
		r.led.fail(failure{rule: ruleLeftOver, detail: fmt.Sprintf("%d calls never returned, even after Close", n), errText: "unaccounted"})
	}
	// goleak in TestMain checks only a passing run; checked here, a leak is
	// reported beside the soak's other failures.
	if err := goleak.Find(before); err != nil {
		r.led.fail(failure{rule: ruleLeak, detail: err.Error(), errText: "leak"})
	}

	var b bytes.Buffer
	r.summary(&b)
	// Straight to stdout: t.Log would indent every line but the first.
	fmt.Printf("\n--- soak summary (Markdown) ---\n%s--- end of soak summary ---\n\n", b.String())
	r.failed()
}

// Example_classify shows how the soak sorts what a call returned.
func Example_classify() {
	want := "Echo: hi"
	ok := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("Echo: hi")}}
	wrong := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("Echo: someone else")}}
	down := &client.UnavailableError{Server: "s", State: lifecycle.Reconnecting, Cause: context.DeadlineExceeded}
	for _, c := range []struct {
		res         *mcp.CallToolResult
		err, ctxErr error
	}{
		{ok, nil, nil},
		{wrong, nil, nil},
		{nil, fmt.Errorf("%w: server %q: broken pipe", client.ErrOutcomeUnknown, "s"), nil},
		{nil, down, context.DeadlineExceeded},
		{nil, fmt.Errorf("%w: server %q", client.ErrDisabled, "s"), nil},
		{nil, fmt.Errorf("mcpfleet: server %q: %w", "s", context.DeadlineExceeded), context.DeadlineExceeded},
		{nil, errors.New(`mcpfleet: server "s": transport error: unexpected nil response`), nil},
	} {
		cl, why := classify(c.res, c.err, c.ctxErr, want)
		fmt.Println(strings.TrimSpace(cl.String() + " " + why))
	}
	// Output:
	// ok
	// failed wrong answer: got "Echo: someone else" (1 content items), want "Echo: hi"
	// outcome unknown
	// unavailable
	// disabled
	// own deadline
	// failed error outside the classes
}
