//go:build linux

package stdio

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// How a child dies with its host on Linux, even when the host is killed
// with no chance to clean up (SIGKILL, the OOM killer, a crash):
//
//   - The child itself gets SIGKILL as its parent-death signal (Pdeathsig,
//     set by sysProcAttr). That covers the direct child only: the signal is
//     not inherited by what it starts.
//   - The rest of its process group is ended by a guard: a tiny /bin/sh
//     that joins the child's group, ignores the signals a group commonly
//     gets, and blocks reading a pipe whose write end only the host holds.
//     The kernel closes that end when the host exits, however it exits; the
//     guard's read then returns and it runs `kill -s KILL 0`, which ends
//     everyone in its own group, itself included. That takes the wrapper
//     case (`sh -c "server; sleep 1000"`, or a server that started helpers)
//     with the host.
//
// Why this shape and not another:
//
//   - A shim that leads the group and runs the server as its child would
//     change what the Conn sees: the pid, the exit status (a shell can only
//     forward a signal death by killing itself with it, and an exit status
//     of 143 is ambiguous), and SIGTERM handling (the shim would have to
//     trap it and still wait for the server). The guard is a sibling: the
//     server stays our direct child and the group leader, and everything
//     Close, Err and the exit watcher do is unchanged.
//   - A guard inside the group needs no process group id after the host is
//     gone: `kill 0` names its own group, which cannot have been reused
//     while the guard is in it. A single watchdog process per host would
//     have to signal group ids it was told about earlier, which may by then
//     name someone else's processes, and would need a protocol.
//   - A subreaper (PR_SET_CHILD_SUBREAPER) adopts orphans only while the
//     host lives; a pidfd notices a death but cannot outlive the host.
//   - Pipe EOF is a property of the process, not of a thread, so the guard
//     has none of Pdeathsig's thread caveat (see startProcess).
//
// The cost is one small shell per server process, found at /bin/sh, and one
// more fork and exec per spawn (a few milliseconds on a busy machine).
// Without /bin/sh (a distroless image) the child starts anyway, with
// Pdeathsig alone; the failure is logged, and a state file (Registry)
// still lets the next host end what is left.
//
// Limits: the write end is close-on-exec, so no child inherits it, but a
// fork that does not exec (from cgo) would hold it and delay the guard
// until that fork exits. A process that leaves the group (setsid, setpgid)
// escapes the guard, Close and the sweep alike, as it always did.

// guardShell is the guard's interpreter. An absolute path: the guard must
// not depend on the host's $PATH. A variable only so that tests can take
// it away.
var guardShell = "/bin/sh"

// guardScript is what the guard runs. It ignores the signals that a server
// or its wrapper may send to its own group (kill 0) or that Close sends to
// ask for an exit (SIGTERM), so that it keeps guarding until the group is
// killed or the host is gone; says it is armed; lets go of that pipe; and
// waits. read returns on EOF, that is when the last write end closed: the
// host exited, or the Conn let the group go.
const guardScript = `trap '' HUP INT QUIT TERM USR1 USR2 PIPE; echo armed; exec >/dev/null; read -r x; kill -s KILL 0`

// guardArmed is what the guard writes once its traps are set. Until then
// a signal to the group could end it. Dial does not wait for it (a shell
// takes milliseconds to get there, on a busy machine tens, and the
// server's own start and handshake take longer): an unarmed guard that
// lives on still acts on the host's death, since it finds the pipe closed
// when it gets to reading it.
const guardArmed = "armed\n"

// guardName is the guard's $0, which shows in ps after the script, so a
// person looking at the process list can tell what the extra sh is. argv[0]
// itself stays "sh": busybox picks its applet by it.
const guardName = "mcpfleet-stdio-guard"

// guard is the process that ends the child's group when the host dies.
// Its zero value is no guard.
type guard struct {
	w        *os.File      // the write end only the host holds; closing it ends the group
	armed    chan struct{} // closed once the guard has set its traps
	released chan struct{} // closed by release, with w
	done     chan struct{} // closed once the guard was reaped
}

// sysProcAttr puts the child in a process group of its own, so that Close
// can signal the server together with anything it spawned, and so that a
// Ctrl-C in the host's terminal does not reach it behind the host's back;
// and asks the kernel to SIGKILL the child when its parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startProcess starts cmd from a fresh goroutine locked to its thread.
//
// Pdeathsig fires when the thread that forked the child exits, not the
// process (go.dev/issue/27505). The Go runtime ends a thread only when a
// goroutine exits while locked to it. A fresh goroutine is never the
// caller's own locked goroutine (which might be about to exit and take its
// thread, and so our child, with it); the lock holds it to one thread for
// the fork, and the unlock afterwards returns that thread to the runtime's
// pool rather than ending it. What remains is that some other goroutine
// may later lock that same thread and exit without unlocking it; then the
// child gets SIGKILL early, and the owner sees a crash (the Manager
// reconnects it). That is rare, and the price of having the direct child
// die with its host without relying on anything else.
func startProcess(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- cmd.Start()
	}()
	return <-errc
}

// startGuard starts the guard of the process group pgid, whose leader has
// just been started and is not yet reaped (so the group exists). A guard
// that exits before it is armed (a shell that is not POSIX enough) is
// logged.
func startGuard(pgid int, logger *slog.Logger) (guard, error) {
	var pipes [4]*os.File // stdinR, stdinW, armedR, armedW
	for i := 0; i < len(pipes); i += 2 {
		var err error
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			closeFiles(pipes[:]...)
			return guard{}, fmt.Errorf("guard: pipe: %w", err)
		}
	}
	stdinR, stdinW, armedR, armedW := pipes[0], pipes[1], pipes[2], pipes[3]
	cmd := exec.Command(guardShell, "-c", guardScript, guardName)
	cmd.Stdin, cmd.Stdout = stdinR, armedW // stderr is /dev/null
	cmd.Dir = "/"                          // so that it keeps no directory busy
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	err := cmd.Start()
	closeFiles(stdinR, armedW) // the guard has them; ours would keep the pipes from EOF
	if err != nil {
		closeFiles(stdinW, armedR)
		return guard{}, fmt.Errorf("guard: start %s: %w", guardShell, err)
	}
	g := guard{w: stdinW, armed: make(chan struct{}), released: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		// Ends at the latest when the guard exits, which closes its end.
		b, _ := io.ReadAll(armedR)
		_ = armedR.Close()
		if string(b) == guardArmed {
			close(g.armed)
			// An armed guard lives until it is released or its group is
			// killed, which the exit watcher follows with the release at
			// once. Reap it after that: a Wait holds an OS thread for as
			// long as it waits (waitid blocks), which would be one thread
			// per child for the child's whole life, and Go ends a program
			// at 10,000 threads. One killed from outside meanwhile stays a
			// zombie until then.
			<-g.released
		}
		err := cmd.Wait()
		// A guard killed before it armed went with its group (a Dial
		// cancelled at once, a server that died at start): nothing to say.
		// One that exited by itself has a shell that cannot run it.
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); string(b) != guardArmed && !(ok && ws.Signaled()) {
			logger.Warn("mcpfleet: stdio: the process group will not die with the host: its guard exited unarmed",
				"pgid", pgid, "shell", guardShell, "output", string(b), "exit", err)
		}
	}()
	return g, nil
}

// release closes the write end: the guard kills whatever is left in the
// group, then itself. It is safe on the zero guard and more than once.
func (g *guard) release() {
	if g.w != nil {
		_ = g.w.Close()
		g.w = nil
		close(g.released)
	}
}

// wait waits up to d for the guard to be reaped and reports whether it
// was. The guard exits as soon as its group is killed or it is released.
func (g *guard) wait(d time.Duration) bool {
	if g.done == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.done:
		return true
	case <-t.C:
		return false
	}
}
