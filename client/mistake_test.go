package client

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// slowPolicy is the default reconnect policy with a slow probe that no test
// waits for: a server that reaches PermanentlyFailed with it did so at
// once, not after the budget (about two minutes).
var slowPolicy = lifecycle.Policy{ProbeInterval: time.Hour, MaxInterval: time.Hour}

// TestMistakeSettlesAtOnce: before a server ever connected, a failure that
// no retry can fix without a person settles it in PermanentlyFailed after
// the attempt that showed it (three alike for a server that exits at
// start), with the cause in the status, and calls fail fast with it.
func TestMistakeSettlesAtOnce(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exitAtStart := faultSpec(faultserver.ModeExitAtStart)
	for _, tt := range []struct {
		name     string
		spec     ServerSpec
		attempts int
		is       error
		says     []string
	}{
		{"command not in PATH", ServerSpec{Stdio: &stdio.Spec{Command: "mcpfleet-no-such-server"}}, 1,
			stdio.ErrCommandNotFound, []string{"stdio: start mcpfleet-no-such-server: command not found in $PATH"}},
		{"no such path", ServerSpec{Stdio: &stdio.Spec{Command: filepath.Join(dir, "nope")}}, 1,
			stdio.ErrCommandNotFound, []string{"does not exist"}},
		{"not executable", ServerSpec{Stdio: &stdio.Spec{Command: notExec}}, 1,
			stdio.ErrNotExecutable, []string{"has no execute permission"}},
		{"no such working directory", ServerSpec{Stdio: &stdio.Spec{Command: "sh", Dir: filepath.Join(dir, "nodir")}}, 1,
			stdio.ErrDirNotFound, []string{"working directory not found"}},
		{"exits at start", exitAtStart, mistakeExits,
			stdio.ErrExited, []string{"exited before answering initialize 3 times in a row, each with exit status 3",
				faultserver.ExitAtStartLine}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, WithPolicy(slowPolicy))
			rec := record(m)
			mustAdd(t, m, "s", tt.spec)
			mustWait(t, m, "s", lifecycle.PermanentlyFailed)
			rec.waitStates(t, "s", "Connecting", "PermanentlyFailed")

			st, err := m.Status("s")
			if err != nil {
				t.Fatal(err)
			}
			if st.Attempt != tt.attempts {
				t.Errorf("Attempt = %d, want %d", st.Attempt, tt.attempts)
			}
			if dials := m.Stats().Servers[0].Dials; dials != uint64(tt.attempts) {
				t.Errorf("%d dials, want %d", dials, tt.attempts)
			}
			if !errors.Is(st.LastError, tt.is) {
				t.Errorf("LastError %v does not match %v", st.LastError, tt.is)
			}
			for _, says := range tt.says {
				if !strings.Contains(st.LastError.Error(), says) {
					t.Errorf("LastError %q does not say %q", st.LastError, says)
				}
			}

			// A call fails fast, with the cause: no wait for the ready timeout.
			ctx, cancel := context.WithTimeout(testCtx(t), time.Hour)
			defer cancel()
			_, err = m.CallTool(ctx, "s", "echo", nil)
			if !errors.Is(err, ErrPermanentlyFailed) || !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says[0]) {
				t.Errorf("call = %v; want ErrPermanentlyFailed with the cause", err)
			}
			t.Logf("call: %v", err)
		})
	}
}

// TestMistakeFixedIsFound: a server settled for a mistake is found again,
// once fixed, by the slow probe without the host, and by Reconnect at once.
func TestMistakeFixedIsFound(t *testing.T) {
	server, err := os.Executable() // the fault server is this test binary
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"probe", "reconnect"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server")
			spec := faultSpec(faultserver.ModeNormal)
			spec.Stdio.Command = path
			policy := slowPolicy
			if how == "probe" {
				policy = lifecycle.Policy{MaxInterval: 20 * time.Millisecond, ProbeInterval: 50 * time.Millisecond}
			}
			m := newTestManager(t, WithPolicy(policy))
			rec := record(m)
			mustAdd(t, m, "s", spec)
			mustWait(t, m, "s", lifecycle.PermanentlyFailed)
			// Waiting for Connected ends at once, with the cause.
			if err := m.WaitFor(testCtx(t), "s", lifecycle.Connected); !errors.Is(err, ErrPermanentlyFailed) ||
				!errors.Is(err, stdio.ErrCommandNotFound) {
				t.Fatalf("WaitFor(Connected) = %v; want ErrPermanentlyFailed with the cause", err)
			}
			if err := os.Symlink(server, path); err != nil { // installed
				t.Fatal(err)
			}
			if how == "reconnect" {
				if err := m.Reconnect(testCtx(t), "s"); err != nil {
					t.Fatal(err)
				}
			}
			rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Connected })
			if res, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "back"}); err != nil || text(res) != "back" {
				t.Fatalf("echo = %q, %v", text(res), err)
			}
		})
	}
}

// TestOutageAfterWorkingIsNoMistake: once a server worked in its slot, the
// same failure (its command gone, as during a deploy that replaces it) is
// an outage on the normal budget, not a mistake, and it comes back.
func TestOutageAfterWorkingIsNoMistake(t *testing.T) {
	server, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "server")
	if err := os.Symlink(server, path); err != nil {
		t.Fatal(err)
	}
	spec := faultSpec(faultserver.ModeNormal)
	spec.Stdio.Command = path
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: 5 * time.Millisecond,
		MaxInterval: 20 * time.Millisecond, MaxAttempts: -1, Jitter: -1}))
	rec := record(m)
	mustAdd(t, m, "s", spec)
	mustWait(t, m, "s", lifecycle.Connected)
	pid, _ := childPID(t, m, "s")

	if err := os.Remove(path); err != nil { // the deploy takes it away...
		t.Fatal(err)
	}
	kill(t, pid) // ...and the old process goes
	// It fails for a missing command, again and again, and stays on its
	// budget: Reconnecting, never PermanentlyFailed.
	e := rec.wait(t, func(e Event) bool { return e.Server == "s" && e.Kind == EventRetry && e.Attempt >= 3 })
	if !errors.Is(e.Err, stdio.ErrCommandNotFound) || !errors.Is(e.Err, transport.ErrMisconfigured) {
		t.Fatalf("retry event: %v; want the missing command", e.Err)
	}
	if st, _ := m.Status("s"); st.State != lifecycle.Reconnecting {
		t.Fatalf("state %s after the command went away, want Reconnecting", st.State)
	}
	if err := os.Symlink(server, path); err != nil { // ...and brings the new one
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	for _, st := range states(rec.snapshot(), "s") {
		if st == lifecycle.PermanentlyFailed.String() {
			t.Fatalf("a server that worked went PermanentlyFailed: %v", states(rec.snapshot(), "s"))
		}
	}
}

// TestBannerThenSilenceIsExplained: a server that prints a line that is
// not JSON-RPC and then never answers gets an error that says what was
// waited for and quotes the line, instead of a bare deadline.
func TestBannerThenSilenceIsExplained(t *testing.T) {
	m := newTestManager(t, WithPolicy(slowPolicy), WithTimeouts(Timeouts{Dial: 2 * time.Second}))
	rec := record(m)
	mustAdd(t, m, "s", faultSpec(faultserver.ModeBannerHang))
	// The first dial whose process started in time (a loaded machine may
	// take longer than the dial timeout to start it).
	e := rec.wait(t, func(e Event) bool {
		var step *dialStepError
		return e.Server == "s" && e.Kind == EventRetry && errors.As(e.Err, &step)
	})
	t.Logf("%v", e.Err)
	for _, says := range []string{"initialize: gave up after ", "waiting for an answer to initialize",
		"1 line to stdout that is not JSON-RPC", faultserver.BannerLine} {
		if !strings.Contains(e.Err.Error(), says) {
			t.Errorf("dial error %q does not say %q", e.Err, says)
		}
	}
	if strings.Count(e.Err.Error(), "deadline exceeded") > 0 {
		t.Errorf("dial error %q quotes the bare deadline", e.Err)
	}
}

// TestApplyRequiredMistakeReturnsAtOnce: Apply does not wait out its
// context for a required server that settled for a mistake: it returns
// with an error that names the server and the cause, while the other
// servers of the config are added as usual.
func TestApplyRequiredMistakeReturnsAtOnce(t *testing.T) {
	m := newTestManager(t, WithPolicy(slowPolicy))
	ok := faultserver.Command(faultserver.ModeNormal)
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"broken": map[string]any{"command": "mcpfleet-no-such-server", "required": true},
		"ok":     map[string]any{"command": ok.Path, "args": ok.Args, "env": ok.Env, "required": true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := m.Apply(ctx, cfg)
	if ctx.Err() != nil {
		t.Fatal("Apply waited for its context")
	}
	var se *ServerError
	if !errors.As(err, &se) || se.Server != "broken" || !errors.Is(err, ErrPermanentlyFailed) ||
		!errors.Is(err, stdio.ErrCommandNotFound) || !strings.Contains(err.Error(), "required server") {
		t.Fatalf("Apply = %v; want the required server named, PermanentlyFailed, command not found", err)
	}
	t.Logf("apply: %v", err)
	if strings.Join(res.Added, ",") != "broken,ok" {
		t.Errorf("added %v", res.Added)
	}
}
