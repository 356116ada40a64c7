package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpfleet/mcpfleet/internal/failure"
	"github.com/mcpfleet/mcpfleet/internal/frame"
	"github.com/mcpfleet/mcpfleet/internal/quiet"
)

// exitDrainWait bounds how long the exit watcher waits, after the process
// exits, for its pipes to reach EOF. EOF normally arrives at once; it is
// late only when a process outside the tree (on Unix, one that called
// setsid) still holds a pipe, and that must not delay Done.
const exitDrainWait = 100 * time.Millisecond

// testHookAfterStart, when set by a test, runs right after the process
// started, to end the Dial context at the one moment no test can aim at.
var testHookAfterStart func()

// Conn is one running server process and the mcp-go transport over its
// stdin and stdout. It satisfies the client package's Conn interface.
//
// The process belongs to the Conn from spawn to reap: it and everything it
// starts form a tree that the Conn owns (a process group on Unix, a Job
// Object on Windows), a goroutine of ours waits for it (so Done closes as
// soon as it exits and it never lingers as a zombie), its stderr is drained
// into a bounded buffer, and Close ends the whole tree.
type Conn struct {
	spec Spec
	opts options
	cmd  *exec.Cmd
	pid  int
	tr   *mcptransport.Stdio
	tree tree        // the OS's handle on the process and its descendants; use under sigMu
	rec  *registered // the entry in opts.registry, or nil

	// Our ends of the pipes. stdin's is owned by tr (its Close closes it);
	// stdout's is read by tr and closed by us once the process is gone.
	stdout *eofReader
	stderr *os.File
	// stray watches stdout for lines that are not JSON-RPC (a banner);
	// silence ends the requests of a server that wrote one and then nothing.
	stray   *strayTap
	silence *strayWatch
	// tooLarge holds the answers the line limiter discarded.
	tooLarge frame.TooLargeAnswers

	ring       *ring
	stderrDone chan struct{} // closed when drainStderr returns

	done chan struct{}         // closed by the exit watcher once the process is reaped
	err  atomic.Pointer[Error] // how the process ended: an *Error around an *ExitError

	// sigMu orders signals against the reap: the tree is signalled only
	// while exited is false, that is while the leader is not yet reaped (on
	// Unix its pid, the group id, cannot have been reused) and the tree not
	// yet released (on Windows the job handle is still open).
	sigMu  sync.Mutex
	exited bool // guarded by sigMu

	closing   atomic.Bool   // Close was called; the exit is deliberate
	closeOnce sync.Once     // starts teardown
	forceOnce sync.Once     // closes force
	force     chan struct{} // closed to skip straight to the kill
	closed    chan struct{} // closed when teardown finished
	closeErr  error         // written by teardown before closed is closed
}

// Dial starts the server process that spec describes and returns its Conn.
// It does not speak MCP: the caller builds an mcp-go client on Transport
// and runs the handshake, so a server that exits before answering fails
// there, and Err then explains why.
//
// ctx bounds the spawn only. The process outlives it (only Close ends
// the process), except when ctx ends during Dial itself: then the process
// is killed and reaped before Dial returns.
//
// Dial fails with ErrCommandNotFound, ErrNotExecutable or ErrDirNotFound
// (each naming the command or directory) when the process cannot start,
// and with ErrOutOfResources when the host has no file descriptor or
// process to spare for it; a failed Dial leaves nothing running or open.
func Dial(ctx context.Context, spec Spec, opts ...Option) (*Conn, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "dial", Command: spec.Command, Err: err}
	}
	path, err := resolve(spec)
	if err != nil {
		return nil, &Error{Op: "start", Command: spec.Command, Err: err}
	}

	// Our own pipes rather than exec's StdinPipe/StdoutPipe: exec.Cmd.Wait
	// closes those, racing with mcp-go still reading the last response, and
	// with *os.File as the child's stdio exec starts no copying goroutines.
	var pipes [6]*os.File // stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW
	for i := 0; i < len(pipes); i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			closeFiles(pipes[:]...)
			return nil, spawnError(spec, err)
		}
	}
	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]

	// Not CommandContext: the process must outlive ctx.
	cmd := exec.Command(path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	// Set up so that the child and whatever it spawns form a tree that
	// Close can end as a whole (see proc_unix.go and proc_windows.go).
	cmd.SysProcAttr = sysProcAttr()

	err = startProcess(cmd)
	// The child has its copies now (or failed); holding ours open would
	// keep the pipes from ever reaching EOF.
	closeFiles(stdinR, stdoutW, stderrW)
	if err != nil {
		closeFiles(stdinW, stdoutR, stderrR)
		return nil, startError(spec, path, err)
	}
	t, err := newTree(cmd.Process, o.diag)
	if err != nil {
		// Not yet running anything of its own (see newTree): ending the
		// process itself ends everything.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeFiles(stdinW, stdoutR, stderrR)
		return nil, spawnError(spec, err)
	}

	watch := newStrayWatch(o.strayGrace)
	c := &Conn{
		spec:       spec,
		opts:       o,
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		tree:       t,
		stray:      newStrayTap(stdoutR, watch),
		silence:    watch,
		stderr:     stderrR,
		ring:       newRing(o.stderrLines, o.stderrBytes),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
		force:      make(chan struct{}),
		closed:     make(chan struct{}),
	}
	c.ring.written = watch.activity
	c.stdout = newEOFReader(stdoutR, c.stray)
	if o.maxMessage > 0 {
		log := o.logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		c.stdout.r = frame.NewLimiter(c.stray, frame.Lines, o.maxMessage, &c.tooLarge, log.With("pid", c.pid))
	}
	// mcp-go gets stdout and stdin only. Its stderr argument would be
	// closed by its Close and is otherwise unused with NewIO; we drain
	// stderr ourselves into the ring buffer.
	c.tr = mcptransport.NewIO(c.stdout, stdinW, nil)
	mcptransport.WithCommandLogger(quiet.Debug(o.diag.With("pid", c.pid)))(c.tr)
	// Recorded before the exit watcher can reap the process, so that its
	// pid (and start time) are still its own.
	c.rec = o.registry.add(c.pid, c.pid, spec.Command)

	go func() {
		defer close(c.stderrDone)
		drainStderr(stderrR, c.ring, o.logger, o.logLevel, o.logRate, c.pid)
	}()
	go c.watch()

	if testHookAfterStart != nil {
		testHookAfterStart()
	}
	if err := ctx.Err(); err != nil {
		// ctx ended while we were spawning: the caller has given up, so the
		// process must not survive the failed Dial.
		c.forceOnce.Do(func() { close(c.force) })
		_ = c.Close(context.Background())
		return nil, &Error{Op: "dial", Command: spec.Command, Err: err}
	}
	return c, nil
}

// Transport returns the mcp-go transport over the process's stdin and
// stdout. It is not started: the caller starts it exactly once (Start does
// not spawn anything, the process already runs) and then initializes.
func (c *Conn) Transport() mcptransport.Interface {
	return &limitedTransport{Stdio: c.tr, c: c}
}

// limitedTransport is mcp-go's transport with the answers the line limiter
// discarded turned into the error that says so, and the requests of a
// server that does not speak MCP on stdout ended (strayWatch).
type limitedTransport struct {
	*mcptransport.Stdio
	c *Conn
}

// SendRequest sends req; if its answer was over the size limit, the error
// is a *frame.TooLarge (see frame.Limiter); if the server wrote a line to
// stdout that is not a message, has written no message yet and then
// nothing more for the stray grace, it is an *Error around a
// *NotMCPError.
func (t *limitedTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	watched, done := t.c.silence.request(ctx)
	resp, err := t.Stdio.SendRequest(watched, req)
	if err != nil && ctx.Err() == nil {
		// Declared here, not for every request: errors.As puts it on the heap.
		var notMCP *NotMCPError
		if errors.As(context.Cause(watched), &notMCP) {
			err = &Error{Command: t.c.spec.Command, PID: t.c.pid, Err: notMCP}
		}
	}
	done()
	if err == nil && resp != nil && resp.Error != nil {
		if e := t.c.tooLarge.Take(req.ID.String()); e != nil {
			return nil, e
		}
	}
	return resp, err
}

// Done is closed within milliseconds of the process's exit, whether it
// crashed, was killed from outside or was ended by Close.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns nil while Done is open, then an *Error (naming the command
// and the process) around an *ExitError that names the exit status or
// signal and quotes an excerpt of stderr. It matches ErrExited, and
// ErrClosed too when Close ended the process.
func (c *Conn) Err() error {
	if e := c.err.Load(); e != nil {
		return e
	}
	return nil
}

// PID returns the process id. On Unix it is also its process group id.
func (c *Conn) PID() int { return c.pid }

// Spec returns the Spec the process was started from.
func (c *Conn) Spec() Spec { return c.spec }

// Stderr returns the most recent lines the process wrote to stderr, oldest
// first, within the buffer set by WithStderrBuffer: for status displays
// and for explaining a failed handshake.
func (c *Conn) Stderr() []string { return c.ring.last(-1) }

// Stray returns the first lines the process wrote to stdout that were not
// JSON-RPC messages (a banner, a log line printed to the wrong stream),
// and how many such lines there were. mcp-go skips them; they often
// explain a server that never answers.
func (c *Conn) Stray() (first []string, total int) { return c.stray.lines() }

// Close ends the process and releases everything the Conn holds:
//
//  1. it closes the mcp-go transport, so pending requests fail at once with
//     transport.ErrTransportClosed, and with it the process's stdin, which
//     asks a well-behaved server to exit;
//  2. after the close grace it sends SIGTERM to the process group (Unix;
//     Windows has no such request and goes on to 3 at once);
//  3. after the term timeout it kills the tree: SIGKILL to the group on
//     Unix, TerminateJobObject on Windows;
//  4. the exit watcher reaps the process; Close closes the remaining pipes.
//
// Close returns when that is done, or when ctx ends: then it kills the tree
// at once and returns an error wrapping ctx.Err(), and the reap still
// happens in the background. The exit status of a process that
// Close ended is not an error (it is in Err); Close reports only a failed
// teardown. It is safe to call more than once and concurrently, and after
// the process died by itself; every call returns the same result.
func (c *Conn) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		go c.teardown()
	})
	select {
	case <-c.closed:
		return c.closeErr
	case <-ctx.Done():
	}
	c.forceOnce.Do(func() { close(c.force) })
	select {
	case <-c.closed:
		return c.closeErr
	default:
		return &Error{Op: "close", Command: c.spec.Command, PID: c.pid,
			Err: fmt.Errorf("%w (sent %s, reaping in the background)", ctx.Err(), killName)}
	}
}

// teardown runs once, on its own goroutine, so that every Close caller can
// leave when its own ctx ends while the escalation carries on.
func (c *Conn) teardown() {
	defer close(c.closed)

	// Closes stdin (our end, which mcp-go owns) and fails pending requests.
	// Its only possible error is from closing stdin, which is of no
	// consequence once we are killing the process anyway.
	_ = c.tr.Close()

	var err error
	exited := c.waitExit(c.opts.closeGrace)
	if !exited && c.signal((*tree).term) {
		exited = c.waitExit(c.opts.termTimeout)
	}
	if !exited {
		c.signal((*tree).kill)
		t := time.NewTimer(c.opts.killTimeout)
		select {
		case <-c.done:
		case <-t.C:
			err = &Error{Op: "close", Command: c.spec.Command, PID: c.pid,
				Err: fmt.Errorf("still not reaped %v after %s", c.opts.killTimeout, killName)}
		}
		t.Stop()
	}

	// The process is gone, but a descendant that left the tree may still
	// hold the write ends. Closing our read ends ends mcp-go's reader and
	// our stderr drain regardless.
	c.stdout.Close()
	_ = c.stderr.Close()
	<-c.stderrDone
	// Released by the exit watcher before Done; what it let go (the Linux
	// guard) is ours to reap too.
	if err == nil && !c.tree.waitReleased(c.opts.killTimeout) {
		err = &Error{Op: "close", Command: c.spec.Command, PID: c.pid,
			Err: fmt.Errorf("its process group's guard was not reaped after %v", c.opts.killTimeout)}
	}
	c.closeErr = err
}

// waitExit waits up to d for the process to exit. It returns false on
// timeout and when a Close caller's ctx ended (force), so the caller
// escalates.
func (c *Conn) waitExit(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-c.force:
		return false
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-c.force:
		return false
	case <-t.C:
		return false
	}
}

// signal applies send (tree.term or tree.kill) to the tree unless the
// leader was already reaped: then the tree may name someone else's
// processes (Unix) or is released (Windows). It reports whether send sent
// anything.
func (c *Conn) signal(send func(*tree) bool) bool {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	return !c.exited && send(&c.tree)
}

// watch is the exit watcher: it waits for the process, reaps it, records
// why it ended and closes Done.
func (c *Conn) watch() {
	if c.tree.waitLeader(c.pid) {
		// The leader has exited but the tree still names only ours.
		// Whatever it left there (helpers, a shell's children) is orphaned
		// and would keep our pipes open: end it now rather than at Close.
		c.sigMu.Lock()
		c.tree.kill()
		c.exited = true
		c.sigMu.Unlock()
	}
	_ = c.cmd.Wait() // the status is read from ProcessState below
	// Out of the state file once reaped. A newer child given the same pid
	// meanwhile has an entry of its own, which remove leaves alone; until
	// then the entry names a process that is gone or, reused, started at
	// another time, which no sweep signals.
	c.opts.registry.remove(c.rec)
	c.sigMu.Lock()
	c.tree.release()
	c.exited = true
	killed := c.tree.killed
	c.sigMu.Unlock()

	// Let the drain take in what the process wrote last, so the error can
	// quote it. Bounded: see exitDrainWait.
	t := time.NewTimer(exitDrainWait)
	defer t.Stop()
	expired := false
	select {
	case <-c.stderrDone:
	case <-t.C:
		expired = true
	}

	st := exitOf(waitStatus(c.cmd.ProcessState), killed, killedExitCode)
	e := &ExitError{PID: c.pid, Code: st.code, Signal: st.signal, Stderr: excerpt(c.ring.last(-1)), Closed: c.closing.Load()}
	c.err.Store(&Error{Command: c.spec.Command, PID: c.pid, Err: e})
	close(c.done)

	// mcp-go notices the death only by EOF on stdout, which a descendant
	// outside the tree can withhold; then pending requests would hang
	// until Close. After the same bounded wait, close the read end to
	// force it.
	if expired {
		c.stdout.Close()
		return
	}
	select {
	case <-c.stdout.eof:
	case <-c.closed:
	case <-t.C:
		c.stdout.Close()
	}
}

// eofReader is the process's stdout as mcp-go reads it. It records the
// first read error (EOF, or the pipe closed by us), which tells the exit
// watcher that mcp-go has seen the end.
type eofReader struct {
	r       io.Reader // f, or f bounded by a frame.Limiter
	f       *os.File
	eof     chan struct{}
	eofOnce sync.Once
}

func newEOFReader(f *os.File, r io.Reader) *eofReader {
	return &eofReader{r: r, f: f, eof: make(chan struct{})}
}

func (r *eofReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil {
		r.eofOnce.Do(func() { close(r.eof) })
	}
	return n, err
}

// Close closes the read end. A concurrent Read returns fs.ErrClosed, which
// mcp-go treats as the end of the stream. Closing twice is harmless.
func (r *eofReader) Close() { _ = r.f.Close() }

// resolve finds the executable and checks the working directory, so that
// the common mistakes get an error naming what is wrong instead of exec's
// "no such file or directory" for any of them.
func resolve(spec Spec) (string, error) {
	if spec.Dir != "" {
		fi, err := os.Stat(spec.Dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("%w: %q does not exist", ErrDirNotFound, spec.Dir)
		case err != nil:
			return "", fmt.Errorf("%w: %w", ErrDirNotFound, err)
		case !fi.IsDir():
			return "", fmt.Errorf("%w: %q is not a directory", ErrDirNotFound, spec.Dir)
		}
	}
	if filepath.Base(spec.Command) == spec.Command {
		// A bare name: searched in the host's $PATH, as exec.Command does.
		path, err := exec.LookPath(spec.Command)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return "", fmt.Errorf("%w: %w", ErrNotExecutable, err)
			}
			return "", fmt.Errorf("%w in $PATH (install it, or give its full path as the command)", ErrCommandNotFound)
		}
		return path, nil
	}
	// A path; relative ones are relative to Dir, as for the child.
	path := spec.Command
	if !filepath.IsAbs(path) && spec.Dir != "" {
		path = filepath.Join(spec.Dir, path)
	}
	if err := checkExecutable(path); err != nil {
		return "", err
	}
	return spec.Command, nil
}

// startError classifies a failed exec for the cases resolve cannot see:
// a script whose interpreter is missing, a mount without exec, a file that
// is neither a binary nor a script.
func startError(spec Spec, path string, err error) error {
	switch {
	case failure.Exhausted(err):
		return spawnError(spec, err)
	case errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("%w: %q (or the interpreter its #! line names): %w", ErrCommandNotFound, path, err)
	case errors.Is(err, fs.ErrPermission), isExecFormatError(err):
		err = fmt.Errorf("%w: %q: %w", ErrNotExecutable, path, err)
	}
	return spawnError(spec, err)
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}
