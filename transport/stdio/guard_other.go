//go:build unix && !linux

package stdio

import (
	"log/slog"
	"os/exec"
	"syscall"
	"time"
)

// Other Unixes have neither a per-thread parent-death signal worth its
// caveats nor a test run of the Linux guard (guard_linux.go), so a child
// started here outlives a host that is killed without a chance to clean
// up; the state file (Registry) is how the next host ends it.

// guard is the Linux group guard; there is none here.
type guard struct{}

// sysProcAttr puts the child in a process group of its own, so that Close
// can signal the server together with anything it spawned, and so that a
// Ctrl-C in the host's terminal does not reach it behind the host's back.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// startProcess starts cmd.
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }

// startGuard starts nothing.
func startGuard(int, *slog.Logger) (guard, error) { return guard{}, nil }

func (g *guard) release()                {}
func (g *guard) wait(time.Duration) bool { return true }
