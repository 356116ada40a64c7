//go:build linux

package stdio

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// TestGuardInGroup: each child's group has a guard, a child of ours
// (reaped by Close, which dial's cleanup checks) and recognizable in ps.
func TestGuardInGroup(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), eofClose...)
	mustConnect(t, c)
	members, err := proctest.Members(c.PID())
	if err != nil {
		t.Fatal(err)
	}
	var guards []proctest.Proc
	for _, p := range members {
		if p.PID != c.PID() {
			guards = append(guards, p)
		}
	}
	if len(guards) != 1 || guards[0].PPID != os.Getpid() {
		t.Fatalf("want one guard of ours in the group, found %v", members)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(guards[0].PID) + "/cmdline")
	if !strings.Contains(string(cmdline), guardName) {
		t.Errorf("guard's command line %q does not name it", cmdline)
	}
}

// TestGuardOutlastsGroupSignals: the signals a server or its wrapper may
// send to its own group (kill 0), and Close's SIGTERM, do not end the
// guard; once its pipe closes it still ends the group. Were it dead,
// nothing would end the group, whose processes ignore those signals.
func TestGuardOutlastsGroupSignals(t *testing.T) {
	o := startOrphan(t, "trap '' HUP INT QUIT TERM USR1 USR2 PIPE; sleep 1000 >/dev/null & echo ready; exec sleep 1000 >/dev/null")
	pgid := o.cmd.Process.Pid
	g, err := startGuard(pgid, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.armed:
	case <-time.After(waitBound):
		t.Fatal("guard not armed")
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE} {
		if err := syscall.Kill(-pgid, sig); err != nil {
			t.Fatal(err)
		}
	}
	// A guard killed by one of those has it pending at the latest when it
	// wakes up for the EOF, and dies before it can kill anything.
	g.release()
	if got := o.ended(t); got != "signal: killed" {
		t.Errorf("group leader: %s, want killed by the guard", got)
	}
	if err := proctest.WaitGroupsGone(testCtx(t, waitBound), pgid); err != nil {
		t.Error(err)
	}
	if !g.wait(waitBound) {
		t.Error("guard not reaped")
	}
	g.release() // twice is harmless
}

// TestGuardUnavailable: without a usable /bin/sh (a distroless image) the
// child starts and works all the same, with a warning that its group will
// not die with the host; so does one whose shell exits without arming.
func TestGuardUnavailable(t *testing.T) {
	defer func(sh string) { guardShell = sh }(guardShell)
	for _, tt := range []struct{ shell, says string }{
		{"/nonexistent/sh", "no such file"},
		{"/bin/true", "exited unarmed"},
	} {
		t.Run(tt.shell, func(t *testing.T) {
			guardShell = tt.shell
			logs := &logRecorder{}
			c := dial(t, faultSpec(faultserver.ModeNormal), append(eofClose, WithLogger(slog.New(logs)))...)
			mustConnect(t, c)
			if err := c.Close(testCtx(t, waitBound)); err != nil {
				t.Fatal(err)
			}
			if !logs.has("WARN", "will not die with the host", tt.says) {
				t.Errorf("no warning saying %q:\n%s", tt.says, logs)
			}
			if how(c.Err()) != "exit 0" {
				t.Errorf("child ended by %s", how(c.Err()))
			}
		})
	}
}
