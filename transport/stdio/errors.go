package stdio

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/failure"
	"github.com/mcpfleet/mcpfleet/transport"
)

// Sentinel errors, wrapped by the *Error of Dial and Err so that callers
// can tell the causes apart with errors.Is. Like os.ErrNotExist, they carry
// no prefix: the *Error around them names the transport and the command.
var (
	// ErrCommandNotFound: the command is not in $PATH or its path does not
	// exist.
	ErrCommandNotFound = errors.New("command not found")
	// ErrNotExecutable: the command exists but cannot be executed (no
	// execute permission, a directory, not a binary or script).
	ErrNotExecutable = errors.New("command not executable")
	// ErrDirNotFound: the working directory does not exist or is not a
	// directory.
	ErrDirNotFound = errors.New("working directory not found")
	// ErrOutOfResources: the host ran out of something a spawn needs: file
	// descriptors (its own limit, RLIMIT_NOFILE, or the system's), processes
	// (RLIMIT_NPROC) or memory. The message says which, and the OS's error
	// is wrapped too (errors.Is(err, syscall.EMFILE) holds). It says nothing
	// about the server: the same Dial can succeed once the host has let go
	// of what it holds, so an owner retries it on its backoff.
	ErrOutOfResources = errors.New("out of resources")
	// ErrExited is matched by every error Err returns: the process is gone.
	ErrExited = errors.New("process exited")
	// ErrClosed is matched by Err when the process ended because Close was
	// called, so a deliberate teardown is not mistaken for a crash. It is
	// transport.ErrClosed, which every transport shares.
	ErrClosed = transport.ErrClosed
)

// Error is the error of every operation of the package on a server's
// process, in the manner of os.PathError: what was being done, with which
// command, to which process, and why. It names the command as the spec
// gave it and never its arguments or environment, which may hold secrets.
//
//	stdio: start npx: command not found in $PATH
//	stdio: gh-mcp (pid 4242): process exited: exit status 1; stderr: Error: GITHUB_TOKEN is not set
type Error struct {
	Op      string // "start", "dial", "close"; empty for the end of a running process (Err)
	Command string // the spec's Command
	PID     int    // the process, once started; 0 before
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("stdio: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
	}
	b.WriteString(e.Command)
	if e.PID != 0 {
		fmt.Fprintf(&b, " (pid %d)", e.PID)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes a failure that no retry can fix without a person match
// transport.ErrMisconfigured: a command not found or not executable, a
// working directory that does not exist.
func (e *Error) Is(target error) bool {
	return target == transport.ErrMisconfigured &&
		(errors.Is(e.Err, ErrCommandNotFound) || errors.Is(e.Err, ErrNotExecutable) || errors.Is(e.Err, ErrDirNotFound))
}

// spawnError is the error of a Dial whose spawn failed (making the pipes,
// starting the process or its guard): if the host is out of file
// descriptors, processes or memory, one that wraps ErrOutOfResources and
// says what ran out; otherwise err, in an *Error naming the command. It names the
// command only, never its arguments or environment: tokens are often
// passed as arguments (--api-key=...), and the error reaches the Manager's
// status, events and logs.
func spawnError(spec Spec, err error) error {
	if failure.Exhausted(err) {
		err = fmt.Errorf("%w: %s: %w", ErrOutOfResources, ranOut(err), err)
	}
	return &Error{Op: "start", Command: spec.Command, Err: err}
}

// Bounds of the stderr excerpt quoted in an ExitError's message; the full
// recent stderr is in Conn.Stderr.
const (
	excerptLines = 8
	excerptBytes = 1 << 10
)

// ExitError says how the process ended and quotes what it wrote to stderr,
// which is usually the only explanation a crashing server gives. Err
// returns it inside an *Error that names the command and the process.
type ExitError struct {
	PID int
	// Code is the exit status, or -1 if a signal ended the process.
	Code int
	// Signal is the signal that ended the process, or 0. On Windows, where
	// no process ends by a signal, it is SIGKILL for one that Close had to
	// terminate (TerminateJobObject; its exit status, 1, could be the
	// server's own), as on Unix, and 0 for every other end.
	Signal syscall.Signal
	// Stderr is an excerpt of what the process wrote to stderr, oldest
	// first, within about 1 KiB: its last lines, and before them, when it
	// is not among them, the first line that looks like an error (the
	// "Error: GITHUB_TOKEN is not set" a stack trace would push out).
	Stderr []string
	// Closed is true when the process ended because Close was called.
	Closed bool
}

func (e *ExitError) Error() string {
	var b strings.Builder
	if e.Closed {
		b.WriteString("closed: ")
	}
	if e.Signal != 0 {
		fmt.Fprintf(&b, "process killed by signal %s", signalName(e.Signal))
	} else {
		fmt.Fprintf(&b, "process exited: exit status %d", e.Code)
	}
	if len(e.Stderr) > 0 {
		b.WriteString("; stderr: ")
		b.WriteString(strings.Join(e.Stderr, " | "))
	} else if !e.Closed {
		b.WriteString("; nothing on stderr")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrExited) always true and errors.Is(err,
// ErrClosed) true for a deliberate close.
func (e *ExitError) Is(target error) bool {
	return target == ErrExited || (target == ErrClosed && e.Closed)
}

// errorLead matches a line that begins like the one that explains a
// failure, in the languages MCP servers are written in ("Error: ...",
// "TypeError: ...", "panic: ...", "FATAL ..."); errorLike, a line that
// mentions one, for when none begins so.
var (
	errorLead = regexp.MustCompile(`(?i)^\s*(\w*(error|exception)|fatal|panic|critical)\b\s*[:\[(-]`)
	errorLike = regexp.MustCompile(`(?i)\b(error|fatal|panic|exception|failed|cannot|can't|not set|not found|denied|missing|invalid|refused)\b`)
)

// excerpt picks from lines (oldest first) what explains a failure best
// within excerptLines and excerptBytes: the last lines, and, if it is not
// among them, the first line that looks like an error, with a mark for
// what was left out between. Lines over the budget are cut.
func excerpt(lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	first := slices.IndexFunc(lines, errorLead.MatchString)
	if first < 0 {
		first = slices.IndexFunc(lines, errorLike.MatchString)
	}
	cut := func(l string, n int) string {
		if len(l) <= n {
			return l
		}
		return l[:n] + truncatedMark
	}
	budget := excerptBytes
	var head []string
	if first >= 0 && first < len(lines)-excerptLines {
		// Not among the last lines: it goes first, and takes at most a
		// third of the budget.
		l := cut(lines[first], excerptBytes/3)
		head = []string{l, "…"}
		budget -= len(l)
	}
	start := len(lines)
	used := 0
	for start > 0 && len(lines)-start < excerptLines-len(head) {
		l := lines[start-1]
		if used+len(l) > budget {
			break
		}
		used += len(l)
		start--
	}
	if start == len(lines) {
		// Even the newest line alone is over the budget: keep its start.
		return append(head, cut(lines[len(lines)-1], budget))
	}
	if len(head) > 0 && start <= first+1 {
		head = head[:1] // nothing left out between
		if start <= first {
			head = nil
		}
	}
	return append(head, lines[start:]...)
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
