package stdio

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/failure"
)

// Sentinel errors, wrapped with %w by Dial and Err so callers can tell the
// causes apart with errors.Is.
var (
	// ErrCommandNotFound: the command is not in $PATH or its path does not
	// exist.
	ErrCommandNotFound = errors.New("mcpfleet: stdio: command not found")
	// ErrNotExecutable: the command exists but cannot be executed (no
	// execute permission, a directory, not a binary or script).
	ErrNotExecutable = errors.New("mcpfleet: stdio: command not executable")
	// ErrDirNotFound: the working directory does not exist or is not a
	// directory.
	ErrDirNotFound = errors.New("mcpfleet: stdio: working directory not found")
	// ErrOutOfResources: the host ran out of something a spawn needs: file
	// descriptors (its own limit, RLIMIT_NOFILE, or the system's), processes
	// (RLIMIT_NPROC) or memory. The message says which, and the OS's error
	// is wrapped too (errors.Is(err, syscall.EMFILE) holds). It says nothing
	// about the server: the same Dial can succeed once the host has let go
	// of what it holds, so an owner retries it on its backoff.
	ErrOutOfResources = errors.New("mcpfleet: stdio: out of resources")
	// ErrExited is matched by every error Err returns: the process is gone.
	ErrExited = errors.New("mcpfleet: stdio: process exited")
	// ErrClosed is matched by Err when the process ended because Close was
	// called, so a deliberate teardown is not mistaken for a crash.
	ErrClosed = errors.New("mcpfleet: stdio: closed")
)

// spawnError is the error of a Dial whose spawn failed (making the pipes,
// starting the process or its guard): if the host is out of file
// descriptors, processes or memory, one that wraps ErrOutOfResources and
// says what ran out; otherwise err, naming the command. It names the
// command only, never its arguments or environment: tokens are often
// passed as arguments (--api-key=...), and the error reaches the Manager's
// status, events and logs.
func spawnError(spec Spec, err error) error {
	if failure.Exhausted(err) {
		return fmt.Errorf("%w: %s: start %s: %w", ErrOutOfResources, ranOut(err), spec.Command, err)
	}
	return fmt.Errorf("mcpfleet: stdio: start %s: %w", spec.Command, err)
}

// errTailLines and errTailBytes bound the stderr quoted in an ExitError's
// message; the full recent stderr is in ExitError.Stderr and Conn.Stderr.
const (
	errTailLines = 5
	errTailBytes = 1 << 10
)

// ExitError is what Err returns once the process is gone: how it ended and
// what it last wrote to stderr, which is usually the only explanation a
// crashing server gives.
type ExitError struct {
	PID int
	// Code is the exit status, or -1 if a signal ended the process.
	Code int
	// Signal is the signal that ended the process, or 0. It is always 0 on
	// Windows, where no process ends by a signal; one that Close had to
	// terminate exits with status 1 there.
	Signal syscall.Signal
	// Stderr holds the last lines the process wrote to stderr, oldest first.
	Stderr []string
	// Closed is true when the process ended because Close was called.
	Closed bool
}

func (e *ExitError) Error() string {
	var b strings.Builder
	if e.Closed {
		b.WriteString("mcpfleet: stdio: closed: ")
	} else {
		b.WriteString("mcpfleet: stdio: ")
	}
	if e.Signal != 0 {
		fmt.Fprintf(&b, "process killed by signal %s", signalName(e.Signal))
	} else {
		fmt.Fprintf(&b, "process exited: exit status %d", e.Code)
	}
	if tail := stderrTail(e.Stderr); tail != "" {
		b.WriteString("; stderr: ")
		b.WriteString(tail)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrExited) always true and errors.Is(err,
// ErrClosed) true for a deliberate close.
func (e *ExitError) Is(target error) bool {
	return target == ErrExited || (target == ErrClosed && e.Closed)
}

// stderrTail joins the last few lines, newest kept when over budget.
func stderrTail(lines []string) string {
	if len(lines) > errTailLines {
		lines = lines[len(lines)-errTailLines:]
	}
	size := 0
	first := len(lines)
	for first > 0 && size+len(lines[first-1]) <= errTailBytes {
		first--
		size += len(lines[first])
	}
	if first == len(lines) && len(lines) > 0 {
		// Even the newest line alone is over budget: keep its start.
		return lines[len(lines)-1][:errTailBytes] + truncatedMark
	}
	return strings.Join(lines[first:], " | ")
}

// signalNames names the signals every OS's syscall package defines;
// osSignalNames (proc_*.go) adds the OS's own.
var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM",
	syscall.SIGTERM: "SIGTERM",
}

// signalName gives the conventional name (SIGKILL) rather than Go's
// description ("killed"), since that is what people search for.
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	if n, ok := osSignalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
