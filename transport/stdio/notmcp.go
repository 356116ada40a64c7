package stdio

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/transport"
)

// notMCPQuoted bounds how much of a stray line a NotMCPError quotes.
const notMCPQuoted = 120

// NotMCPError is the error of a request (the handshake's, in practice)
// that a Conn gave up on because the server wrote a line to stdout that is
// not a JSON-RPC message and then nothing more, on stdout or stderr, for
// the stray grace (WithStrayGrace): a server meant for another transport
// ("Server listening on http://localhost:3000"), or one that prints its
// banner or logs to stdout and then waits for something else. Waiting out
// the dial timeout would only hide the line. It matches
// transport.ErrNotMCP and transport.ErrMisconfigured, and comes inside an
// *Error that names the command and the process.
type NotMCPError struct {
	// Line is the first line the server wrote to stdout that was not a
	// JSON-RPC message, as much of it as the Conn kept (Conn.Stray).
	Line string
	// Lines is how many such lines there were.
	Lines int
	// Silence is the grace that passed with nothing more from the server.
	Silence time.Duration
}

func (e *NotMCPError) Error() string {
	what := "a line"
	if e.Lines > 1 {
		what = strconv.Itoa(e.Lines) + " lines, first"
	}
	return fmt.Sprintf("the server wrote %s %s to stdout that is not an MCP message, and then nothing more for %v: "+
		"a stdio server may write only MCP (JSON-RPC) messages to stdout, and logs belong on stderr "+
		"(is it a server for another transport, or does it need an argument to speak stdio?)",
		what, quoteLine(e.Line), e.Silence)
}

// Is makes the error match transport.ErrNotMCP and
// transport.ErrMisconfigured: no retry gets a server to answer that
// writes something else and then waits.
func (e *NotMCPError) Is(target error) bool {
	return target == transport.ErrNotMCP || target == transport.ErrMisconfigured
}

// quoteLine quotes line for an error message: control characters and
// invalid UTF-8 escaped, cut at a rune boundary after notMCPQuoted bytes,
// which "…" after the quote marks.
func quoteLine(line string) string {
	cut := false
	if len(line) > notMCPQuoted {
		n := notMCPQuoted
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line, cut = line[:n], true
	}
	q := strconv.Quote(line)
	if cut {
		q += "…"
	}
	return q
}

// strayWatch ends the requests a server will never answer because it does
// not speak MCP on stdout. It is armed until the server writes its first
// line that is a message: until then, while a request is outstanding and
// the server has written a line that is not one, it times the silence
// that follows, and when the stray grace passes with nothing more from the
// server (no line on stdout, no byte on stderr) and no new request either,
// it cancels the outstanding requests with a NotMCPError. The first
// message disarms it for good: a server may print a banner and then serve
// (several do), and the logs a working server prints to stdout are mcp-go's
// to skip.
//
// Its methods are called by the stdout reader (stray, message), the
// stderr drain (activity), the timer, and the senders of requests.
type strayWatch struct {
	grace time.Duration // 0: off
	// afterFunc is time.AfterFunc, or a test's.
	afterFunc func(time.Duration, func()) interface{ Stop() bool }

	mu      sync.Mutex
	spoke   bool // the server wrote a message: disarmed
	first   string
	lines   int
	waiting map[*int]context.CancelCauseFunc // the outstanding requests'
	timer   interface{ Stop() bool }         // running while the silence is timed
	gen     uint64                           // of the timer; a stale one does nothing
}

func newStrayWatch(grace time.Duration) *strayWatch {
	return &strayWatch{
		grace: grace,
		afterFunc: func(d time.Duration, f func()) interface{ Stop() bool } {
			return time.AfterFunc(d, f)
		},
	}
}

// request is called when a request is about to be sent. While the watch
// is armed it returns ctx with a cause the watch may cancel it with, and
// a function to call when the request is over; otherwise ctx itself and
// a no-op.
func (w *strayWatch) request(ctx context.Context) (context.Context, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.grace <= 0 || w.spoke {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	key := new(int)
	if w.waiting == nil {
		w.waiting = make(map[*int]context.CancelCauseFunc)
	}
	w.waiting[key] = cancel
	// A new request gets the full grace to be answered in.
	w.restartLocked()
	return ctx, func() {
		w.mu.Lock()
		delete(w.waiting, key)
		if len(w.waiting) == 0 {
			w.stopLocked()
		}
		w.mu.Unlock()
		cancel(nil)
	}
}

// stray is called with each line the server wrote to stdout that is not a
// message, as much of it as the Conn keeps.
func (w *strayWatch) stray(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines++
	if w.lines == 1 {
		w.first = line
	}
	w.restartLocked()
}

// message is called when a line that is a message begins: the server
// speaks JSON-RPC on stdout, and the watch is over.
func (w *strayWatch) message() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spoke = true
	w.stopLocked()
}

// activity is called when the server wrote to stderr: it is alive and
// busy (loading, downloading), so the silence starts over.
func (w *strayWatch) activity() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.restartLocked()
	}
}

// restartLocked starts timing the silence anew, if there is one to time:
// armed, a stray line seen, a request outstanding.
func (w *strayWatch) restartLocked() {
	w.stopLocked()
	if w.grace <= 0 || w.spoke || w.lines == 0 || len(w.waiting) == 0 {
		return
	}
	gen := w.gen
	w.timer = w.afterFunc(w.grace, func() { w.expire(gen) })
}

// stopLocked stops timing the silence.
func (w *strayWatch) stopLocked() {
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// expire ends the outstanding requests, unless the timer of gen was
// stopped or restarted meanwhile.
func (w *strayWatch) expire(gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != w.gen || w.spoke {
		return
	}
	w.timer = nil
	err := &NotMCPError{Line: w.first, Lines: w.lines, Silence: w.grace}
	for _, cancel := range w.waiting {
		cancel(err)
	}
}

// armed reports whether the watch still waits for the server's first
// message.
func (w *strayWatch) armed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.spoke
}
