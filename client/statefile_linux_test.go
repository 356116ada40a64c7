//go:build linux

package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// linuxStart is the start time a state file records for pid on Linux: the
// boot id and field 22 of /proc/<pid>/stat. Spelled out here so that the
// test pins the format a crashed host of this version leaves behind.
func linuxStart(t *testing.T, pid int) string {
	t.Helper()
	p, err := proctest.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := proctest.BootID()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("linux:%s:%d", boot, p.Start)
}

// startGroup starts script under sh in a process group of its own, as a
// host starts a server, and waits for the line it writes once it has set
// itself up; the cleanup kills what is left and reaps it. done is closed
// once the leader was reaped, with its exit in *how.
func startGroup(t *testing.T, script string) (cmd *exec.Cmd, done chan struct{}, how *string) {
	t.Helper()
	cmd = exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := proctest.ReadyLine(stdout, time.Minute); err != nil {
		t.Fatal(err)
	}
	done, how = make(chan struct{}), new(string)
	go func() {
		*how = fmt.Sprint(cmd.Wait())
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd, done, how
}

// TestStateFileSweep: a host crashed where nothing tied its children to
// it (as on macOS, or where the guard could not run), leaving a server
// group running, with a helper. A Manager given its state file ends that
// group before New returns, leaves alone a running process whose pid the
// file names with another start time (a reused pid), says so in
// OrphanSweep and the log; then records its own stdio child in the file
// (mode 0600, no argument, environment value or directory in it) and
// removes the file at Close.
func TestStateFileSweep(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	orphan, orphanDone, orphanHow := startGroup(t, "sleep 1000 >/dev/null & echo ready; exec sleep 1000 >/dev/null")
	reused, reusedDone, _ := startGroup(t, "echo ready; exec sleep 1000 >/dev/null")
	deadHost := exec.Command("sleep", "0")
	if err := deadHost.Run(); err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`{"format": "mcpfleet/stdio-registry", "version": 1,
		"owner": {"pid": %d, "start": "linux:gone:1"},
		"groups": [
			{"pid": %d, "pgid": %[2]d, "start": %q, "command": "node"},
			{"pid": %d, "pgid": %[4]d, "start": %q, "command": "uvx"}
		]}`,
		deadHost.Process.Pid, orphan.Process.Pid, linuxStart(t, orphan.Process.Pid),
		reused.Process.Pid, linuxStart(t, reused.Process.Pid)+"9") // another start tick
	if err := os.WriteFile(path, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}

	logs := &syncBuffer{}
	m := newTestManager(t, WithStateFile(path), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if got, want := m.OrphanSweep(), (stdio.SweepResult{Listed: 2, Killed: 1}); got != want {
		t.Errorf("OrphanSweep() = %+v, want %+v\n%s", got, want, logs)
	}
	select {
	case <-orphanDone:
		if *orphanHow != "signal: terminated" {
			t.Errorf("orphan ended by %s, want SIGTERM", *orphanHow)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("orphan still running after New")
	}
	if err := proctest.WaitGroupsGone(testCtx(t), orphan.Process.Pid); err != nil {
		t.Error(err) // the helper, which is not our child
	}
	select {
	case <-reusedDone:
		t.Error("a process with a reused pid was killed")
	default:
	}
	for _, want := range []string{"swept the process groups a previous host left", "listed=2 killed=1 failed=0", "command=node", "the pid now names another process"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}

	// Redaction: a server with secrets in its arguments and environment.
	spec := faultSpec(faultserver.ModeNormal, "MCPFLEET_TEST_API_KEY=env-secret-value")
	spec.Stdio.Args = append(spec.Stdio.Args, "--token=arg-secret-value")
	mustAdd(t, m, "s", spec)
	mustWait(t, m, "s", lifecycle.Connected)
	pid, _ := childPID(t, m, "s")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	for _, secret := range []string{"env-secret-value", "MCPFLEET_TEST_API_KEY", "arg-secret-value", "token", filepath.Dir(spec.Stdio.Command)} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("state file holds %q:\n%s", secret, raw)
		}
	}
	// The current version: a header line, then a line per change (here
	// the swept file's rewrite listed nothing, and the child was added).
	type record struct {
		Version int    `json:"version"`
		Op      string `json:"op"`
		PID     int    `json:"pid"`
		Command string `json:"command"`
	}
	var recs []record
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		var r record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v in the state file:\n%s", err, raw)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 || recs[0].Version != 2 || recs[1].Op != "add" || recs[1].PID != pid || recs[1].Command != filepath.Base(spec.Stdio.Command) {
		t.Errorf("state file lists %+v, want a header and the child %d added:\n%s", recs, pid, raw)
	}

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state file left after Close: %v", err)
	}
}

// TestStateFileInUse: a second Manager on the state file of a running one
// sweeps nothing (those are live servers, not orphans), says why at error
// level, and works without a state file.
func TestStateFileInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	m1 := newTestManager(t, WithStateFile(path))
	mustAdd(t, m1, "s", faultSpec(faultserver.ModeNormal))
	mustWait(t, m1, "s", lifecycle.Connected)
	pid, _ := childPID(t, m1, "s")

	logs := &syncBuffer{}
	m2 := newTestManager(t, WithStateFile(path), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if got := m2.OrphanSweep(); got != (stdio.SweepResult{}) {
		t.Errorf("OrphanSweep() = %+v", got)
	}
	if !strings.Contains(logs.String(), "running without a state file") || !strings.Contains(logs.String(), "in use by a running host") {
		t.Errorf("no error logged:\n%s", logs)
	}
	if !proctest.Alive(pid) {
		t.Error("the running Manager's child was killed")
	}
	if st, _ := m1.Status("s"); st.State != lifecycle.Connected {
		t.Errorf("first Manager's server: %v", st.State)
	}
}
