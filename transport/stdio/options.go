package stdio

import (
	"log/slog"
	"time"
)

// Defaults of the Options.
const (
	// DefaultCloseGrace is how long Close waits, after closing the child's
	// stdin, for it to exit by itself before sending SIGTERM (on Windows,
	// before terminating its job). Well-behaved stdio servers exit on stdin
	// EOF within milliseconds.
	DefaultCloseGrace = 2 * time.Second
	// DefaultTermTimeout is how long Close waits after SIGTERM before
	// sending SIGKILL. Windows has no SIGTERM step.
	DefaultTermTimeout = 2 * time.Second
	// DefaultKillTimeout is how long Close waits after SIGKILL (on Windows,
	// TerminateJobObject) for the kernel to let the child be reaped (it can lag in uninterruptible
	// sleep) before giving up and leaving the reap to the exit watcher.
	DefaultKillTimeout = 2 * time.Second
	// DefaultStderrLines is how many recent stderr lines are kept.
	DefaultStderrLines = 200
	// DefaultStderrBytes caps the bytes of the kept stderr lines.
	DefaultStderrBytes = 32 << 10
	// MaxStderrLine is the longest stderr line kept; the rest of a longer
	// line is dropped and the kept part marked as truncated. It bounds the
	// memory a child can make us hold with a line that never ends.
	MaxStderrLine = 4 << 10
	// DefaultStrayGrace is how long a request waits, after the server
	// wrote a line to stdout that is not an MCP message and before it
	// wrote any that is, for something more from the server. A server
	// that prints a banner and then serves answers in milliseconds; one
	// that prints "listening on http://..." and then waits for another
	// transport never does, and is better told so in seconds than after
	// the dial timeout.
	DefaultStrayGrace = 3 * time.Second
)

// Option configures Dial.
type Option func(*options)

type options struct {
	closeGrace  time.Duration
	termTimeout time.Duration
	killTimeout time.Duration
	stderrLines int
	stderrBytes int
	logger      *slog.Logger // stderr lines (WithStderrLogger)
	logLevel    slog.Level
	maxMessage  int64        // 0: no limit
	logRate     float64      // stderr lines logged per second; 0: no limit
	diag        *slog.Logger // the transport's own warnings (WithLogger)
	registry    *Registry
	strayGrace  time.Duration // 0: off
}

func defaultOptions() options {
	return options{
		closeGrace:  DefaultCloseGrace,
		termTimeout: DefaultTermTimeout,
		killTimeout: DefaultKillTimeout,
		stderrLines: DefaultStderrLines,
		stderrBytes: DefaultStderrBytes,
		strayGrace:  DefaultStrayGrace,
		diag:        slog.New(slog.DiscardHandler),
	}
}

// WithCloseGrace sets how long Close waits after closing stdin before it
// sends SIGTERM to the process group (on Windows, terminates the job). Zero
// sends it at once. Defaults
// to DefaultCloseGrace.
func WithCloseGrace(d time.Duration) Option {
	return func(o *options) { o.closeGrace = max(d, 0) }
}

// WithTermTimeout sets how long Close waits after SIGTERM before it sends
// SIGKILL to the process group. It has no effect on Windows, which has no
// SIGTERM step. Defaults to DefaultTermTimeout.
func WithTermTimeout(d time.Duration) Option {
	return func(o *options) { o.termTimeout = max(d, 0) }
}

// WithKillTimeout sets how long Close waits after the kill for the child to
// be reaped before it returns an error. Defaults to DefaultKillTimeout.
func WithKillTimeout(d time.Duration) Option {
	return func(o *options) { o.killTimeout = max(d, 0) }
}

// WithStderrBuffer sets how many recent stderr lines are kept and how many
// bytes they may take in total; the oldest go first. Values below 1 keep
// the default. Defaults to DefaultStderrLines and DefaultStderrBytes.
func WithStderrBuffer(lines, bytes int) Option {
	return func(o *options) {
		if lines > 0 {
			o.stderrLines = lines
		}
		if bytes > 0 {
			o.stderrBytes = bytes
		}
	}
}

// WithStderrLogger mirrors each stderr line of the child to l at level,
// with the child's pid. The logger is called from the goroutine that drains
// the pipe, so a slow handler slows the drain (never stops it for good).
// By default lines are only kept in the ring buffer.
func WithStderrLogger(l *slog.Logger, level slog.Level) Option {
	return func(o *options) {
		o.logger = l
		o.logLevel = level
	}
}

// WithMaxMessageBytes bounds one message (one line) the server writes to
// stdout. The limit is enforced while reading: a longer line is discarded
// up to its end, and the request it answered fails with an error that names
// the size and the limit, while the process and the connection go on.
// Zero or less means no limit, the default.
func WithMaxMessageBytes(n int64) Option {
	return func(o *options) { o.maxMessage = max(n, 0) }
}

// WithStderrLogRate bounds how many stderr lines a second are mirrored to
// the WithStderrLogger logger, in bursts of twice as many: a child that
// floods its stderr cannot flood the host's logs. Lines over the rate are
// still kept in the ring buffer; how many were not logged is logged, at
// most once a second. Zero or less means no limit, the default.
func WithStderrLogRate(perSecond float64) Option {
	return func(o *options) { o.logRate = max(perSecond, 0) }
}

// WithLogger sets the logger for the transport's own warnings, such as a
// process group that could not be tied to the host's life (Linux: no
// /bin/sh for the guard); mcp-go's own lines about the connection go to
// it at Debug. Defaults to discarding: the package writes nothing to the
// host's stdout or stderr by itself. A nil logger discards. The child's
// stderr goes elsewhere: see WithStderrLogger.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.diag = l
	}
}

// WithRegistry records the child's process group in r from spawn to reap,
// so that if the host dies without closing the Conn, the next Registry
// opened on the same state file ends the group. Conns of any number may
// share one Registry. By default nothing is recorded.
func WithRegistry(r *Registry) Option {
	return func(o *options) { o.registry = r }
}

// WithStrayGrace sets how long a request waits for the server when it
// wrote a line to stdout that is not an MCP message (a banner, a log
// line), has written no message yet, and has written nothing more since,
// on stdout or stderr. When the grace passes, the requests outstanding
// fail with an *Error around a *NotMCPError that quotes the line and
// matches transport.ErrNotMCP and transport.ErrMisconfigured, rather than
// at their own deadline. The grace starts over with each line the server
// writes to stdout, each write to stderr and each request sent, and the
// first message the server writes ends the watch for good, so a server
// that prints a banner and then serves is not affected. Zero or less
// turns the watch off: requests wait for their own deadline. Defaults to
// DefaultStrayGrace.
func WithStrayGrace(d time.Duration) Option {
	return func(o *options) { o.strayGrace = max(d, 0) }
}
