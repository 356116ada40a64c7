//go:build linux

package stdio

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// The state file tests that need start times and process groups.

// orphan is a process group started by the test as a host would start a
// server, and then left running as if that host had crashed.
type orphan struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait returned
	err  error         // Wait's result, set before done is closed
}

// startOrphan starts script under sh in a process group of its own. A
// script that writes a line to stdout is waited for until it did, so that
// what it set up before (traps, background processes) is in place. The
// cleanup kills the group if it still runs and reaps the leader.
func startOrphan(t *testing.T, script string) *orphan {
	t.Helper()
	o := &orphan{cmd: exec.Command("sh", "-c", script), done: make(chan struct{})}
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o.cmd.Stdout = w
	err = o.cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		o.err = o.cmd.Wait()
		close(o.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
		<-o.done
	})
	if strings.Contains(script, "echo") {
		line := make(chan struct{})
		go func() {
			_, _ = bufio.NewReader(r).ReadString('\n')
			close(line)
		}()
		select {
		case <-line:
		case <-time.After(waitBound):
			t.Fatalf("%q wrote nothing", script)
		}
	}
	return o
}

// record is the entry a host would have written for o.
func (o *orphan) record(t *testing.T) groupRecord {
	t.Helper()
	st, err := readProc(o.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return groupRecord{PID: o.cmd.Process.Pid, PGID: st.pgid, Start: st.start, Command: "sh"}
}

// ended waits for o's leader to have exited and returns how.
func (o *orphan) ended(t *testing.T) string {
	t.Helper()
	select {
	case <-o.done:
		return o.err.Error()
	case <-time.After(waitBound):
		t.Fatalf("group %d still runs", o.cmd.Process.Pid)
		return ""
	}
}

// deadHost is the owner line of a host that crashed: a process that ran
// and was reaped, so its pid names nothing (or, reused, another start).
func deadHost(t *testing.T) *processRecord {
	t.Helper()
	cmd := exec.Command("sleep", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := readProc(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return &processRecord{PID: cmd.Process.Pid, Start: st.start}
}

// writeState writes a state file as a host of the given version writes
// it: the log of this one (2), or the whole document of the one before (1).
func writeState(t *testing.T, path string, version int, owner *processRecord, groups ...groupRecord) {
	t.Helper()
	if err := os.WriteFile(path, encodeState(t, version, owner, groups...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrySweep: a host crashed and left groups running. The next
// Registry on its state file ends the groups that are provably the
// recorded ones, with SIGTERM, and SIGKILL for one that ignores SIGTERM,
// grandchildren included; it leaves alone a live process whose pid matches
// but whose start time does not (a reused pid), and an entry whose process
// is gone. The same for a file of this version (a log) and of the one
// before (one document), which a host upgraded across a crash finds.
func TestRegistrySweep(t *testing.T) {
	for _, version := range []int{registryVersion, registryVersionWhole} {
		t.Run(fmt.Sprintf("version=%d", version), func(t *testing.T) { testRegistrySweep(t, version) })
	}
}

func testRegistrySweep(t *testing.T, version int) {
	path := filepath.Join(t.TempDir(), "state.json")
	// A server with a helper, and one that ignores SIGTERM (its sleep too).
	polite := startOrphan(t, "sleep 1000 >/dev/null & echo ready; exec sleep 1000 >/dev/null")
	stubborn := startOrphan(t, "trap '' TERM; echo ready; exec sleep 1000 >/dev/null")
	reused := startOrphan(t, "sleep 1000") // alive, but not the recorded process
	gone := deadHost(t)

	reusedRec := reused.record(t)
	reusedRec.Start = reusedRec.Start[:strings.LastIndexByte(reusedRec.Start, ':')+1] + "1"
	writeState(t, path, version, deadHost(t),
		polite.record(t), stubborn.record(t), reusedRec,
		groupRecord{PID: gone.PID, PGID: gone.PID, Start: gone.Start, Command: "sleep"})

	logs := &logRecorder{}
	start := time.Now()
	r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)), WithSweepGrace(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Logf("sweep took %v", time.Since(start))

	if got, want := r.Swept(), (SweepResult{Listed: 4, Killed: 2}); got != want {
		t.Errorf("Swept() = %+v, want %+v\n%s", got, want, logs)
	}
	if got := polite.ended(t); got != "signal: terminated" {
		t.Errorf("polite group's leader: %s, want SIGTERM", got)
	}
	if got := stubborn.ended(t); got != "signal: killed" {
		t.Errorf("stubborn group's leader: %s, want SIGKILL", got)
	}
	// Polled, not awaited: the helper is not our child.
	if err := proctest.WaitGroupsGone(testCtx(t, waitBound), polite.cmd.Process.Pid, stubborn.cmd.Process.Pid); err != nil {
		t.Error(err)
	}
	select {
	case <-reused.done:
		t.Errorf("a process with a reused pid was killed: %v", reused.err)
	default:
	}
	if !proctest.Alive(reused.cmd.Process.Pid) {
		t.Error("the process with the reused pid is not running")
	}
	for _, want := range []string{"the pid now names another process", "exited", "ended a process group", "swept the process groups"} {
		if !logs.has(want) {
			t.Errorf("nothing logged saying %q:\n%s", want, logs)
		}
	}
	// Taken over: this host owns it now, and nothing is left to sweep.
	if sf := readState(t, path); sf.Version != registryVersion || sf.Owner == nil || sf.Owner.PID != os.Getpid() || len(sf.Groups) != 0 {
		t.Errorf("state file after the sweep: %+v", sf)
	}
}

// TestRegistryInUse: a state file whose host still runs is not swept and
// not taken over, even by another Registry of the same process; once that
// one is closed, it is free.
func TestRegistryInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	r1, err := OpenRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, faultSpec(faultserver.ModeNormal), append(eofClose, WithRegistry(r1))...)
	mustConnect(t, c)
	before, _ := os.ReadFile(path)

	if r2, err := OpenRegistry(path); !errors.Is(err, ErrRegistryInUse) {
		r2.Close()
		t.Fatalf("second OpenRegistry: %v, want ErrRegistryInUse", err)
	} else {
		t.Log(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("the file in use was changed:\n%s\nto\n%s", before, after)
	}
	if c.Err() != nil {
		t.Fatalf("the live host's child was touched: %v", c.Err())
	}
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	r3, err := OpenRegistry(path)
	if err != nil {
		t.Fatalf("OpenRegistry after Close: %v", err)
	}
	if got := r3.Swept(); got != (SweepResult{}) {
		t.Errorf("Swept() = %+v, want nothing", got)
	}
	r3.Close()
}

// TestRegistryRecordsConns: Conns dialled at once with one Registry are
// all in the file while they run and out of it once reaped; the file has
// mode 0600 and holds the command's base name only, none of its
// arguments or environment; Close removes it.
func TestRegistryRecordsConns(t *testing.T) {
	const n = 6
	path := filepath.Join(t.TempDir(), "state.json")
	logs := &logRecorder{}
	r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	spec := faultSpec(faultserver.ModeNormal, "MCPFLEET_SECRET_NAME=env-secret-value")
	spec.Args = append(spec.Args, "--api-key=arg-secret-value")

	conns := make([]*Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := Dial(testCtx(t, waitBound), spec, append(eofClose, WithRegistry(r))...)
			if err != nil {
				t.Error(err)
				return
			}
			conns[i] = c
		})
	}
	wg.Wait()
	t.Cleanup(func() { noChildren(t) })
	if t.Failed() {
		for _, c := range conns {
			if c != nil {
				c.Close(testCtx(t, waitBound))
			}
		}
		t.FailNow()
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	for _, secret := range []string{"env-secret-value", "MCPFLEET_SECRET_NAME", "arg-secret-value", "api-key", "test.run", filepath.Dir(spec.Command)} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("state file holds %q:\n%s", secret, raw)
		}
	}
	sf := readState(t, path)
	if len(sf.Groups) != n {
		t.Fatalf("%d groups recorded, want %d:\n%s", len(sf.Groups), n, raw)
	}
	byPID := map[int]groupRecord{}
	for _, g := range sf.Groups {
		byPID[g.PID] = g
	}
	for _, c := range conns {
		g, ok := byPID[c.PID()]
		if !ok || g.PGID != c.PID() || g.Command != filepath.Base(spec.Command) || g.Start == "" {
			t.Errorf("pid %d recorded as %+v (found %v)", c.PID(), g, ok)
		}
	}

	for _, c := range conns {
		wg.Go(func() {
			if err := c.Close(testCtx(t, waitBound)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if sf := readState(t, path); len(sf.Groups) != 0 || sf.Owner == nil {
		t.Errorf("after every Close: %+v", sf)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file left after Close: %v", err)
	}
	if logs.has("WARN") {
		t.Errorf("warnings:\n%s", logs)
	}
}

// TestRegistryClosedWhileRunning: a Registry closed while a Conn recorded
// in it still runs leaves its group in the file, with no owner; the next
// Registry ends it (here SIGKILL after the grace: the server ignores
// SIGTERM), and the Conn sees an exit it did not cause.
func TestRegistryClosedWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	logs := &logRecorder{}
	r1, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, faultSpec(faultserver.ModeIgnoreSIGTERM), append(fastClose, WithRegistry(r1))...)
	mustConnect(t, c)
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	if !logs.has("WARN", "still run", "groups=1") {
		t.Errorf("no warning about the running group:\n%s", logs)
	}
	if sf := readState(t, path); sf.Owner != nil || len(sf.Groups) != 1 || sf.Groups[0].PID != c.PID() {
		t.Fatalf("after Close: %+v", sf)
	}

	r2, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)), WithSweepGrace(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got, want := r2.Swept(), (SweepResult{Listed: 1, Killed: 1}); got != want {
		t.Errorf("Swept() = %+v, want %+v\n%s", got, want, logs)
	}
	waitDone(t, c)
	if got := how(c.Err()); got != "SIGKILL" || errors.Is(c.Err(), ErrClosed) {
		t.Errorf("the swept Conn ended by %s (%v), want SIGKILL and not ErrClosed", got, c.Err())
	}
}

// TestParseStat: the command name may hold spaces and parentheses.
func TestParseStat(t *testing.T) {
	line := "42 (a (weird) name) Z 7 43 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0"
	s, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if s.pgid != 43 || s.start != "987654" || !s.zombie {
		t.Errorf("parsed %+v", s)
	}
	for _, bad := range []string{"", "42 no parens", "42 (c) S 1 2", "42 (c) S 7 x 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}
