//go:build linux

package client

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// The Manager over real child processes: the test binary re-executed as the
// fault server (see TestMain), the official Go SDK server, and the pinned
// npm servers. Each test ends with the manager closed and /proc showing no
// child or zombie of ours; goleak in TestMain checks the goroutines.

// closeAndCheck closes the manager and checks that it reported no teardown
// failure and that every pid given is gone. NoChildren is left to callers
// that run alone.
func closeAndCheck(t *testing.T, m *Manager, rec *recorder, pids ...int) {
	t.Helper()
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	<-rec.done // Close delivers every queued event, then ends the subscription
	for _, e := range rec.snapshot() {
		if e.Kind == EventCloseError {
			t.Errorf("close error event: %v", e.Err)
		}
	}
	proctest.WaitDead(t, pids...)
}

// TestStdioFaults drives the Manager against each fault mode of the fault
// server and checks the state sequence it goes through, then closes it and
// checks that no process of ours is left.
func TestStdioFaults(t *testing.T) {
	echo := func(t *testing.T, m *Manager, want string) {
		t.Helper()
		res, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": want})
		if err != nil || text(res) != want {
			t.Fatalf("echo = %q, %v; want %q", text(res), err, want)
		}
	}
	tests := []struct {
		name string
		spec ServerSpec
		opts []Option
		// run drives the fault once the first state of want was reached,
		// and returns pids besides the child that must be dead after Close.
		run  func(t *testing.T, m *Manager, rec *recorder) []int
		want []string // the state sequence before Close
		// check looks at the status before Close.
		check func(t *testing.T, st ServerStatus)
	}{{
		name: "exit at start",
		spec: faultSpec(faultserver.ModeExitAtStart),
		opts: []Option{WithPolicy(lifecycle.Policy{InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond,
			MaxAttempts: 2, ProbeInterval: -1})},
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.PermanentlyFailed)
			_, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "x"})
			if !errors.Is(err, ErrPermanentlyFailed) || !errors.Is(err, stdio.ErrExited) {
				t.Errorf("call = %v, want ErrPermanentlyFailed wrapping stdio.ErrExited", err)
			}
			retries := 0
			for _, e := range rec.snapshot() {
				if e.Kind == EventRetry {
					retries++
				}
			}
			if retries != 2 {
				t.Errorf("%d retry events, want 2 (MaxAttempts)", retries)
			}
			return nil
		},
		want: []string{"Connecting", "PermanentlyFailed"},
		check: func(t *testing.T, st ServerStatus) {
			if !slices.Contains(st.Stderr, faultserver.ExitAtStartLine) {
				t.Errorf("Stderr = %q, want the line the server wrote before it died at start", st.Stderr)
			}
			var ee *stdio.ExitError
			if !errors.As(st.LastError, &ee) || ee.Code != faultserver.ExitAtStartCode {
				t.Errorf("LastError = %v, want an *stdio.ExitError with exit status %d", st.LastError, faultserver.ExitAtStartCode)
			} else if !strings.Contains(st.LastError.Error(), faultserver.ExitAtStartLine) {
				t.Errorf("LastError = %q, want it to quote the child's stderr %q", st.LastError, faultserver.ExitAtStartLine)
			}
			if st.Generation != 0 {
				t.Errorf("generation %d, want 0: never connected", st.Generation)
			}
		},
	}, {
		name: "crash after 2 calls, non-idempotent call lost",
		spec: faultSpec(faultserver.ModeCrashAfter, faultserver.EnvN+"=2"),
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.Connected)
			echo(t, m, "one")
			echo(t, m, "two")
			// The third call kills the server before it answers; "add"
			// declares no hints, so it must not be sent again.
			_, err := m.CallTool(testCtx(t), "s", "add", map[string]any{"a": 1, "b": 2})
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("add on a crashing server = %v, want ErrOutcomeUnknown", err)
			}
			rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
			echo(t, m, "after") // the new child counts from zero
			return nil
		},
		want: []string{"Connecting", "Connected", "Reconnecting", "Connected"},
		check: func(t *testing.T, st ServerStatus) {
			if st.Generation != 2 || st.LastError != nil {
				t.Errorf("generation %d, last error %v; want 2, nil", st.Generation, st.LastError)
			}
		},
	}, {
		name: "crash after 1 call, read-only call replayed",
		spec: faultSpec(faultserver.ModeCrashAfter, faultserver.EnvN+"=1"),
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.Connected)
			echo(t, m, "one")
			// echo is read-only: lost with the first child, it is sent once
			// more to the second, which answers it as its first call.
			echo(t, m, "replayed")
			return nil
		},
		want: []string{"Connecting", "Connected", "Reconnecting", "Connected"},
		check: func(t *testing.T, st ServerStatus) {
			if st.Generation != 2 {
				t.Errorf("generation %d, want 2", st.Generation)
			}
		},
	}, {
		name: "hang",
		spec: faultSpec(faultserver.ModeHang),
		opts: []Option{
			WithTimeouts(Timeouts{Dial: 300 * time.Millisecond}),
			WithPolicy(lifecycle.Policy{InitialInterval: time.Millisecond, MaxAttempts: 1, ProbeInterval: -1}),
			// It ignores stdin EOF: a short grace, then SIGTERM ends it.
			WithStdioOptions(stdio.WithCloseGrace(20 * time.Millisecond)),
		},
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.PermanentlyFailed)
			return nil
		},
		want: []string{"Connecting", "PermanentlyFailed"},
		check: func(t *testing.T, st ServerStatus) {
			if !errors.Is(st.LastError, context.DeadlineExceeded) {
				t.Errorf("LastError = %v, want the dial timeout (context.DeadlineExceeded)", st.LastError)
			}
		},
	}, {
		name: "garbage on stdout",
		spec: faultSpec(faultserver.ModeGarbageStdout),
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.Connected)
			for _, w := range []string{"a", "b", "c"} {
				echo(t, m, w)
			}
			return nil
		},
		want: []string{"Connecting", "Connected"},
		check: func(t *testing.T, st ServerStatus) {
			if st.Tools != 5 || st.Generation != 1 {
				t.Errorf("%d tools, generation %d; want 5 (echo, add, sleep, big, pid), 1", st.Tools, st.Generation)
			}
		},
	}, {
		name: "stderr flood",
		spec: faultSpec(faultserver.ModeStderrFlood),
		opts: []Option{WithStdioOptions(stdio.WithStderrBuffer(50, 8<<10))},
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.Connected)
			for _, w := range []string{"a", "b", "c"} {
				echo(t, m, w)
			}
			return nil
		},
		want: []string{"Connecting", "Connected"},
		check: func(t *testing.T, st ServerStatus) {
			total := 0
			for _, l := range st.Stderr {
				total += len(l)
			}
			if len(st.Stderr) == 0 || len(st.Stderr) > 50 || total > 8<<10 {
				t.Errorf("status holds %d stderr lines, %d bytes; want 1..50 lines within 8 KiB", len(st.Stderr), total)
			}
		},
	}, {
		name: "ignore SIGTERM",
		spec: faultSpec(faultserver.ModeIgnoreSIGTERM),
		// Close must get to SIGKILL well within the manager's close timeout.
		opts: []Option{WithStdioOptions(stdio.WithCloseGrace(20*time.Millisecond), stdio.WithTermTimeout(50*time.Millisecond))},
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			mustWait(t, m, "s", lifecycle.Connected)
			echo(t, m, "x")
			return nil
		},
		want: []string{"Connecting", "Connected"},
	}, {
		name: "grandchild, child killed from outside",
		spec: faultSpec(faultserver.ModeGrandchild),
		run: func(t *testing.T, m *Manager, rec *recorder) []int {
			grandchild := func() int {
				t.Helper()
				res, err := m.CallTool(testCtx(t), "s", "grandchild", nil)
				pid, perr := strconv.Atoi(text(res))
				if err != nil || perr != nil || !proctest.Alive(pid) {
					t.Fatalf("grandchild = %q, %v; want the pid of a live process", text(res), err)
				}
				return pid
			}
			mustWait(t, m, "s", lifecycle.Connected)
			gc1 := grandchild()
			pid, _ := childPID(t, m, "s")
			// The grandchild holds the child's stdout open, so no EOF tells
			// mcp-go of the death: the exit watcher must.
			kill(t, pid)
			rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
			proctest.WaitDead(t, pid, gc1) // the group went with the child
			echo(t, m, "after")
			return []int{gc1, grandchild()}
		},
		want: []string{"Connecting", "Connected", "Reconnecting", "Connected"},
		check: func(t *testing.T, st ServerStatus) {
			if st.Generation != 2 {
				t.Errorf("generation %d, want 2", st.Generation)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestManager(t, tt.opts...)
			rec := record(m)
			mustAdd(t, m, "s", tt.spec)
			var pids []int
			if tt.run != nil {
				pids = tt.run(t, m, rec)
			}
			rec.waitStates(t, "s", tt.want...)
			var child int
			if st, _ := m.Status("s"); st.State == lifecycle.Connected {
				child, _ = childPID(t, m, "s")
			}
			if tt.check != nil {
				st, err := m.Status("s")
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, st)
			}
			start := time.Now()
			if child != 0 {
				pids = append(pids, child)
			}
			closeAndCheck(t, m, rec, pids...)
			t.Logf("Close took %v", time.Since(start))
			if got, want := states(rec.snapshot(), "s"), append(slices.Clip(tt.want), "Closed"); !slices.Equal(got, want) {
				t.Errorf("states %v, want %v", got, want)
			}
			proctest.NoChildren(t)
		})
	}
}

// TestStdioThirdPartyReconnect runs servers we did not write through the
// Manager: connect, list, call; then the child is killed from outside, and
// the manager must notice, reconnect by itself under the next generation,
// and serve the next call.
func TestStdioThirdPartyReconnect(t *testing.T) {
	type call struct {
		tool string
		args map[string]any
		want string // a substring of the text result
	}
	tests := []struct {
		name string
		spec func(t *testing.T) *stdio.Spec
		// before is called before the kill, after on the new child.
		before, after call
	}{{
		name:   "everything",
		spec:   func(t *testing.T) *stdio.Spec { return &stdio.Spec{Command: npmtest.Bin(t, "mcp-server-everything")} },
		before: call{"echo", map[string]any{"message": "before"}, "before"},
		after:  call{"echo", map[string]any{"message": "after"}, "after"},
	}, {
		name: "memory",
		spec: func(t *testing.T) *stdio.Spec {
			// Its default store is inside node_modules; keep tests out of it.
			return &stdio.Spec{Command: npmtest.Bin(t, "mcp-server-memory"),
				Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
		},
		// What the first child stored, the second reads back from the file.
		before: call{"create_entities", map[string]any{"entities": []any{map[string]any{
			"name": "mcpfleet", "entityType": "project", "observations": []any{"survives a SIGKILL"}}}}, "mcpfleet"},
		after: call{"read_graph", map[string]any{}, "survives a SIGKILL"},
	}, {
		name: "filesystem",
		spec: func(t *testing.T) *stdio.Spec {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from mcpfleet"), 0o600); err != nil {
				t.Fatal(err)
			}
			return &stdio.Spec{Command: npmtest.Bin(t, "mcp-server-filesystem"), Args: []string{dir}}
		},
		// Relative paths resolve against the allowed directory.
		before: call{"list_directory", map[string]any{"path": "."}, "hello.txt"},
		after:  call{"read_text_file", map[string]any{"path": "hello.txt"}, "hello from mcpfleet"},
	}, {
		name: "sequential-thinking",
		spec: func(t *testing.T) *stdio.Spec {
			return &stdio.Spec{Command: npmtest.Bin(t, "mcp-server-sequential-thinking")}
		},
		before: call{"sequentialthinking", map[string]any{"thought": "one step", "nextThoughtNeeded": false,
			"thoughtNumber": 1, "totalThoughts": 1}, "thoughtNumber"},
		after: call{"sequentialthinking", map[string]any{"thought": "again", "nextThoughtNeeded": false,
			"thoughtNumber": 1, "totalThoughts": 1}, "thoughtNumber"},
	}, {
		name: "go-sdk",
		spec: func(*testing.T) *stdio.Spec {
			inv := gosdkserver.Command()
			return &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}
		},
		before: call{"echo", map[string]any{"text": "before"}, "before"},
		after:  call{"echo", map[string]any{"text": "after"}, "after"},
	}}
	t.Run("servers", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				spec := tt.spec(t)
				// Node takes its time to start and to exit, more so with
				// the other servers starting beside it.
				m := newTestManager(t, WithTimeouts(Timeouts{Ready: 15 * time.Second, Close: 10 * time.Second}))
				rec := record(m)
				mustAdd(t, m, tt.name, ServerSpec{Stdio: spec})
				mustWait(t, m, tt.name, lifecycle.Connected)
				callAndCheck := func(c call) {
					t.Helper()
					// An unchanged catalog stays published across the
					// reconnect under the generation that first fetched it.
					cat, ok := m.View().Catalog(tt.name)
					if !ok {
						t.Fatalf("no published catalog for %s", tt.name)
					}
					qualified := tt.name + "__" + c.tool
					if _, ok := m.View().Tool(qualified); !ok {
						t.Fatalf("the View has no %q (%d tools of %s)", qualified, len(cat.Tools()), tt.name)
					}
					res, err := m.Call(testCtx(t), qualified, c.args)
					if err != nil || res.IsError || !strings.Contains(text(res), c.want) {
						t.Fatalf("%s = %q (isError %v), %v; want it to contain %q", c.tool, text(res), res != nil && res.IsError, err, c.want)
					}
				}
				callAndCheck(tt.before)

				pid, gen := childPID(t, m, tt.name)
				if gen != 1 {
					t.Fatalf("generation %d, want 1", gen)
				}
				kill(t, pid)
				rec.waitStates(t, tt.name, "Connecting", "Connected", "Reconnecting", "Connected")
				lost := rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Reconnecting })
				var ee *stdio.ExitError
				if !errors.As(lost.Err, &ee) || ee.Signal != syscall.SIGKILL || ee.PID != pid || lost.Generation != 1 {
					t.Errorf("Reconnecting event: generation %d, cause %v; want generation 1 and pid %d killed by SIGKILL",
						lost.Generation, lost.Err, pid)
				}
				pid2, gen2 := childPID(t, m, tt.name)
				if gen2 != 2 || pid2 == pid {
					t.Fatalf("after the kill: pid %d generation %d; want a new child (not %d) under generation 2", pid2, gen2, pid)
				}
				callAndCheck(tt.after)
				closeAndCheck(t, m, rec, pid, pid2)
			})
		}
	})
	proctest.NoChildren(t)
}

// TestStdioCallInFlightWhenChildDies kills the child while a non-idempotent
// call runs on it: the call must fail at once with ErrOutcomeUnknown, and
// must not have been sent to the next child.
func TestStdioCallInFlightWhenChildDies(t *testing.T) {
	const sleep = time.Minute
	w := newStderrWatch()
	m := newTestManager(t, WithStdioOptions(stdio.WithStderrLogger(slog.New(w), slog.LevelInfo)))
	rec := record(m)
	mustAdd(t, m, "s", faultSpec(faultserver.ModeNormal))
	mustWait(t, m, "s", lifecycle.Connected)
	pid, _ := childPID(t, m, "s")

	type result struct {
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, err := m.CallTool(context.Background(), "s", "sleep", map[string]any{"ms": sleep.Milliseconds()})
		done <- result{err, time.Now()}
	}()
	line := w.wait(t, faultserver.SleepLine)
	if line.pid != pid {
		t.Fatalf("the sleep runs in pid %d, the manager's child is %d", line.pid, pid)
	}
	if st, _ := m.Status("s"); st.InFlight != 1 {
		t.Errorf("InFlight = %d while the sleep runs, want 1", st.InFlight)
	}
	killed := time.Now()
	kill(t, pid)

	// Bounded well below the sleep: a hang fails here, not at the test timeout.
	bound := time.NewTimer(sleep / 4)
	defer bound.Stop()
	var res result
	select {
	case res = <-done:
	case <-bound.C:
		t.Fatalf("the call is still pending %v after its server was killed", sleep/4)
	}
	t.Logf("call returned %v after the kill: %v", res.at.Sub(killed), res.err)
	var ue *UnavailableError
	if !errors.Is(res.err, ErrOutcomeUnknown) || errors.As(res.err, &ue) {
		t.Fatalf("call = %v, want an error wrapping ErrOutcomeUnknown", res.err)
	}

	// The manager reconnects by itself; the new child serves calls, and the
	// lost call was never sent to it.
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	res2, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "next"})
	if err != nil || text(res2) != "next" {
		t.Fatalf("echo after the reconnect = %q, %v", text(res2), err)
	}
	pid2, gen := childPID(t, m, "s")
	closeAndCheck(t, m, rec, pid, pid2) // every stderr line is in once Close returns
	if n := w.count(faultserver.SleepLine); n != 1 {
		t.Errorf("the servers started the sleep %d times, want exactly 1 (no replay)", n)
	}
	if gen != 2 {
		t.Errorf("generation %d after one loss, want 2", gen)
	}
	proctest.NoChildren(t)
}
