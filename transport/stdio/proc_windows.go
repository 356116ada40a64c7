//go:build windows

package stdio

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// killName names the kill in errors, as the OS calls it.
const killName = "TerminateJobObject"

// killedExitCode is the exit status of the processes kill ends: 1, the
// status os.Process.Kill gives on Windows. Err reports a process that
// Close's kill ended as ended by SIGKILL all the same (see exitOf).
const killedExitCode = 1

// creationFlags are the flags sysProcAttr starts a child with:
//
//   - CREATE_SUSPENDED, so that it runs no code, and so starts no process
//     of its own, before newTree has put it in the job;
//   - CREATE_NEW_PROCESS_GROUP, so that a Ctrl-C in the host's console does
//     not reach it behind the host's back, as Setpgid does on Unix;
//   - CREATE_NO_WINDOW: a console program (every stdio server is one)
//     started by a host with no console of its own, a GUI or a service,
//     would get a console window of its own, which flashes open for every
//     child. With it, the child has a console without a window; what it
//     starts inherits that console, so neither flashes either. It also
//     keeps a console host's Ctrl-Break from reaching the child.
//
// They compose: CREATE_NO_WINDOW is ignored only beside CREATE_NEW_CONSOLE
// or DETACHED_PROCESS, which are not used; the other two are about the
// first thread and the process group.
const creationFlags = windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW

// sysProcAttr is how a child is started (creationFlags).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: creationFlags}
}

// waitStatus is how the reaped process ended, as wait reported it: on
// Windows always an exit code (an NTSTATUS such as 0xC0000005 for a crash,
// as an unsigned number).
func waitStatus(ps *os.ProcessState) exitStatus {
	return exitStatus{code: ps.ExitCode()}
}

// tree is the child and its descendants: a Job Object the child was put in
// before it ran. What it starts joins the job (the job allows no
// breakaway), so ending the job ends them all. Only we hold a handle to
// the job, and it kills everything in it when that handle closes
// (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE), so the tree dies with the host
// even when the host is killed without a chance to clean up.
type tree struct {
	job    windows.Handle
	killed bool // kill was called: the job's processes exit with killedExitCode
}

// killOnClose is the job's only limit. A package variable because the
// uintptr given to SetInformationJobObject must not be to a stack value,
// which the runtime may move; nothing writes it.
var killOnClose = windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
	BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
		LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
	},
}

// newTree puts the child, started suspended by sysProcAttr, in a new
// kill-on-close job, and only then lets it run. On error the child may
// still be suspended; the caller kills and reaps it.
func newTree(p *os.Process, _ *slog.Logger) (tree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return tree{}, fmt.Errorf("CreateJobObject: %w", err)
	}
	t := tree{job: job}
	if err := t.adopt(uint32(p.Pid)); err != nil {
		t.release()
		return tree{}, err
	}
	return t, nil
}

// adopt sets the job's limit, assigns the process pid to it and resumes it.
func (t *tree) adopt(pid uint32) error {
	if _, err := windows.SetInformationJobObject(t.job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&killOnClose)), uint32(unsafe.Sizeof(killOnClose))); err != nil {
		return fmt.Errorf("SetInformationJobObject: %w", err)
	}
	// Opening by pid cannot reach someone else's process: the caller's
	// *os.Process holds a handle to ours, which keeps the pid from being
	// reused.
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("OpenProcess: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(t.job, h); err != nil {
		return fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	return resume(pid)
}

// resume resumes the threads of process pid: of a process started
// suspended, that is its main thread alone. os/exec closes the thread
// handle CreateProcess returned, so the thread is found again by its
// process id.
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("CreateToolhelp32Snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, oerr := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if oerr != nil {
			return fmt.Errorf("OpenThread: %w", oerr)
		}
		_, rerr := windows.ResumeThread(th)
		_ = windows.CloseHandle(th)
		if rerr != nil {
			return fmt.Errorf("ResumeThread: %w", rerr)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("Thread32Next: %w", err)
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d to resume", pid)
	}
	return nil
}

// term reports that there is no polite request to send: the console
// control events need the host to share the child's console, which a
// service or a GUI host has not. Closing stdin, which Close did first, is
// the request on Windows, so Close goes from the grace straight to kill.
func (t *tree) term() bool { return false }

// kill ends every process in the job.
func (t *tree) kill() bool {
	_ = windows.TerminateJobObject(t.job, killedExitCode)
	t.killed = true
	return true
}

// waitLeader returns false at once, leaving the wait (and the reap) to
// exec.Cmd.Wait: unlike a Unix group id the job handle keeps naming our
// processes after the reap, so release ends what the child left behind.
func (t *tree) waitLeader(int) bool { return false }

// release, called once the child is reaped (or when newTree fails), ends
// what the child left in the job, which would keep our pipes open, and
// closes the handle, so the job goes away.
func (t *tree) release() {
	_ = windows.TerminateJobObject(t.job, killedExitCode)
	_ = windows.CloseHandle(t.job)
}

// waitReleased reports at once: release ended the job synchronously and
// left nothing of ours to reap.
func (t *tree) waitReleased(time.Duration) bool { return true }

// startProcess starts cmd. The job, not a parent-death signal, ties the
// child to the host here, so any goroutine may start it.
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }

// checkExecutable reports, naming the path, why the command at path could
// not be executed. Windows has no execute permission: a file is run by its
// extension, which may be left out if it is one in PATHEXT (server for
// server.exe), as exec does.
func checkExecutable(path string) error {
	if _, err := exec.LookPath(path); err == nil {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %q does not exist, with or without an extension from PATHEXT", ErrCommandNotFound, path)
	case err != nil:
		return fmt.Errorf("%w: %q: %w", ErrNotExecutable, path, err)
	case fi.IsDir():
		return fmt.Errorf("%w: %q is a directory", ErrNotExecutable, path)
	}
	return fmt.Errorf("%w: %q has no extension from PATHEXT", ErrNotExecutable, path)
}

// ranOut says what the host ran out of; err is one that failure.Exhausted
// reports.
func ranOut(err error) string {
	switch {
	case errors.Is(err, windows.ERROR_TOO_MANY_OPEN_FILES):
		return "too many open handles in the host process"
	case errors.Is(err, windows.ERROR_NO_SYSTEM_RESOURCES):
		return "out of system resources"
	}
	return "out of memory"
}

// isExecFormatError reports the error CreateProcess gives for a file that
// is not a program.
func isExecFormatError(err error) bool { return errors.Is(err, windows.ERROR_BAD_EXE_FORMAT) }

// osSignalNames is empty: no process on Windows ends by a signal.
var osSignalNames map[syscall.Signal]string
