//go:build unix

package stdio

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/failure"
)

// killName names the kill in errors, as the OS calls it.
const killName = "SIGKILL"

// killedExitCode is -1: a kill is a signal here, which wait reports
// itself (see exitOf).
const killedExitCode = -1

// testHookNoGuard, set by a test, starts children without a guard, so that
// the parent-death signal can be shown to work alone.
var testHookNoGuard bool

// tree is the child and its descendants: the process group the child leads,
// whose id is the child's pid. The id is ours only until the child is
// reaped, which is why every use is guarded by Conn.exited. On Linux a
// guard in the group ends it if the host dies (guard_linux.go).
type tree struct {
	pgid   int
	guard  guard
	killed bool // kill was called (see exitOf); wait tells the signal here
}

// newTree returns the tree of a child started with sysProcAttr. Setpgid
// made the group before the child ran any code of its own. It starts the
// group's guard; a guard that cannot start (no /bin/sh) is logged and done
// without, as the child runs correctly without it (it only outlives a
// killed host).
//
// Except when the host is out of file descriptors or processes: then
// newTree kills the group and fails, and Dial with it (the caller reaps the
// child). The child would run unguarded for its whole life for a shortage
// that is likely over by the next attempt, and the host's next spawn would
// most likely fail anyway.
func newTree(p *os.Process, logger *slog.Logger) (tree, error) {
	if testHookNoGuard {
		return tree{pgid: p.Pid}, nil
	}
	g, err := startGuard(p.Pid, logger)
	if err != nil {
		if failure.Exhausted(err) {
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
			return tree{}, err
		}
		logger.Warn("mcpfleet: stdio: the process group will not die with the host", "pid", p.Pid, "error", err)
	}
	return tree{pgid: p.Pid, guard: g}, nil
}

// waitStatus is how the reaped process ended, as wait reported it.
func waitStatus(ps *os.ProcessState) exitStatus {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitStatus{code: -1, signal: ws.Signal()}
	}
	return exitStatus{code: ps.ExitCode()}
}

// term sends SIGTERM to the group, the polite request to exit.
func (t *tree) term() bool {
	// ESRCH (all gone) is fine; EPERM cannot happen for our own group.
	_ = syscall.Kill(-t.pgid, syscall.SIGTERM)
	return true
}

// kill sends SIGKILL to the group.
func (t *tree) kill() bool {
	_ = syscall.Kill(-t.pgid, syscall.SIGKILL)
	t.killed = true
	return true
}

// waitLeader blocks until the child has exited and reports whether it is
// still unreaped, so that its group id still names only our processes and
// the exit watcher may kill what the child left in the group. Only Linux
// can wait without reaping (wait_linux.go); elsewhere it returns false once
// the child is gone and the group is left alone (wait_other.go).
func (t *tree) waitLeader(pid int) bool {
	return waitExitedNoReap(pid) == nil
}

// release is called once the child is reaped. A process group needs no
// releasing; after the reap its id may name someone else's processes, and
// Conn.exited keeps it from being signalled again. The guard, which is
// still in the group if anything is, is let go: it kills what the child
// left there (safe, since the guard's own membership keeps the id ours).
func (t *tree) release() { t.guard.release() }

// waitReleased waits up to d for what release let go to be gone: the
// guard, which must be reaped before Close returns.
func (t *tree) waitReleased(d time.Duration) bool { return t.guard.wait(d) }

// checkExecutable reports, naming the path, why the command at path could
// not be executed: missing, a directory, or without execute permission.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %q does not exist", ErrCommandNotFound, path)
	case err != nil:
		return fmt.Errorf("%w: %q: %w", ErrNotExecutable, path, err)
	case fi.IsDir():
		return fmt.Errorf("%w: %q is a directory", ErrNotExecutable, path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%w: %q has no execute permission", ErrNotExecutable, path)
	}
	return nil
}

// ranOut says what the host ran out of, and which limit it reached; err
// is one that failure.Exhausted reports.
func ranOut(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE):
		var l syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil {
			return fmt.Sprintf("too many open files in the host process (its limit, RLIMIT_NOFILE, is %d)", l.Cur)
		}
		return "too many open files in the host process (RLIMIT_NOFILE)"
	case errors.Is(err, syscall.ENFILE):
		return "too many open files in the system"
	case errors.Is(err, syscall.EAGAIN):
		return "too many processes (the host user's RLIMIT_NPROC, or the system's limit on processes or threads)"
	case errors.Is(err, syscall.ENOMEM):
		return "out of memory"
	}
	return "out of resources"
}

// isExecFormatError reports the exec error of a file that is neither a
// binary nor a script.
func isExecFormatError(err error) bool { return errors.Is(err, syscall.ENOEXEC) }

// osSignalNames names the signals that only Unix has, beyond signalNames.
var osSignalNames = map[syscall.Signal]string{
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
}
