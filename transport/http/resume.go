package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Resumption (protocol 2025-11-25 and older, "Resumability and
// Redelivery"): a request's answer that comes as an SSE stream carries
// event IDs when the server keeps an event store, and a client whose
// stream broke off can ask for the rest with a GET carrying Last-Event-ID.
// mcp-go does this only when the server ends the stream cleanly (the
// polling form, SEP-1699); a stream that breaks (a reset, a cut
// connection: io.ErrUnexpectedEOF) fails its request as
// "unexpected nil response", and the Manager then has to call its outcome
// unknown.
//
// resumeBody closes that gap under mcp-go, where it cannot tell: it wraps
// the answer's body, follows the event IDs and the retry field going
// through, and when reading breaks after an event ID was seen it sends the
// GET itself and goes on reading the new stream, so that mcp-go reads one
// stream that never broke. It hands mcp-go whole events only (it holds
// back the bytes of the event under way), so that the event the break cut
// in two, which the server sends again, is read once and whole.
//
// 2026-07-28 removed resumption: its requests are left alone, and a
// request whose answer broke off there is the Manager's to send again
// under its replay rule.
//
// The same body carries the older protocol's standalone GET stream (the
// notification stream), in its stream mode: a break there, or the server
// ending the stream, is not the end of the session (the server keeps it
// until it answers 404 to its id, or the client sends DELETE), so the
// stream is reopened in the session at once. Only a server that answers
// 404 for the session (it forgot it: the Conn fails as a stale session),
// or that cannot be reached in the stream reopen attempts, ends the Conn
// (ErrStreamLost).
//
// The stream is reopened afresh, without Last-Event-ID, unless
// WithStreamReplay asks for it: the TypeScript SDK's example event store
// (InMemoryEventStore, which servers built from its examples copy) files
// the standalone stream's events under the stream id "_GET_stream" and
// reads a stream id back as what comes before the first '_' of an event
// ID, so a replay there finds no stream, answers 200 and leaves the
// session's notifications going nowhere, for good, with only keep-alives
// on the wire. Notifications sent while the stream was broken are lost
// instead; the Manager makes up for what matters (OnStreamReopen: it
// refetches the lists that changed and polls the tasks).

const (
	// DefaultResumeAttempts is how many times a Conn tries to resume one
	// broken answer stream before the request fails.
	DefaultResumeAttempts = 3

	// resumeBackoff is the wait before the second attempt to resume a
	// stream, doubled for each one after, up to resumeBackoffMax; the
	// server's retry field, when longer, is taken instead. The first
	// attempt waits only for the retry field.
	resumeBackoff    = 100 * time.Millisecond
	resumeBackoffMax = 2 * time.Second

	// DefaultStreamReopenAttempts is how many times a Conn tries to reopen
	// its notification stream (the older protocol's GET stream) in its
	// session after it broke off, before it takes the server for gone
	// (ErrStreamLost). The tries back off as resumption's do: with the
	// default, a server that cannot be reached is given up on about 0.7 s
	// after the break.
	DefaultStreamReopenAttempts = 4
)

// WithStreamReplay makes the Conn reopen its notification stream with
// Last-Event-ID when the server gave event IDs on it, so that the server
// sends again what it sent while the stream was broken. Use it only with
// servers whose event store resumes the standalone GET stream (mcp-go's
// WithEventStore, the official Go SDK's do; the TypeScript SDK's example
// store does not: see the package doc). Defaults to off.
func WithStreamReplay() Option {
	return func(o *options) { o.streamReplay = true }
}

// WithStreamReopenAttempts sets how many times the Conn tries to reopen
// its notification stream in its session after it broke off (see the
// package doc), before the Conn fails with ErrStreamLost. Defaults to
// DefaultStreamReopenAttempts; 0 or less turns reopening off: a broken
// stream is then the connection's loss at once.
func WithStreamReopenAttempts(n int) Option {
	return func(o *options) { o.reopenAttempts = max(n, 0) }
}

// WithResumeAttempts sets how many times the Conn tries to resume one
// answer stream that broke off, before its request fails (see the package
// doc). Defaults to DefaultResumeAttempts; 0 turns resumption off; a
// negative n tries until the request's context ends.
func WithResumeAttempts(n int) Option {
	return func(o *options) { o.resumeAttempts = n }
}

// OnResume sets f to be called each time the Conn resumed a request's
// answer stream that broke off (transport.Resumer): the request goes on
// and ends with its answer. f runs on the goroutine reading the answer; it
// must be quick and must not block. Set it before the transport starts.
func (c *Conn) OnResume(f func()) { c.onResume.Store(&f) }

// resumed reports one resumption to the OnResume callback.
func (c *Conn) resumed() {
	if f := c.onResume.Load(); f != nil {
		(*f)()
	}
}

// reopened records that the notification stream was reopened in its
// session after a break, and tells the OnStreamReopen callback.
func (c *Conn) reopened(cause error, replayed bool) {
	c.reopens.Add(1)
	c.log.Debug("mcpfleet: http: notification stream reopened in its session",
		"session", c.SessionID() != "", "replayed", replayed, "break", cause)
	if f := c.onReopen.Load(); f != nil {
		(*f)()
	}
}

// openedLate tells the OnStreamReopen callback that the notification
// stream opened after Ready stopped waiting for it: the lists were fetched
// without it, and a change announced before it opened went nowhere.
func (c *Conn) openedLate() {
	c.log.Info("mcpfleet: http: notification stream opened after Ready stopped waiting for it")
	if f := c.onReopen.Load(); f != nil {
		(*f)()
	}
}

// OnStreamReopen sets f to be called each time the Conn reopened its
// notification stream in its session after a break
// (transport.SessionKeeper): notifications the server sent meanwhile may
// be lost (see WithStreamReplay). It is called too when the stream first
// opened only after Ready stopped waiting for it (WithStreamOpenTimeout),
// for the same reason. f runs on the goroutine reading the stream; it must
// be quick and must not block. Set it before the transport starts.
func (c *Conn) OnStreamReopen(f func()) { c.onReopen.Store(&f) }

// StreamReopens returns how many times the Conn reopened its notification
// stream in its session after it broke off (see WithStreamReopenAttempts).
func (c *Conn) StreamReopens() int64 { return c.reopens.Load() }

// resumable reports whether resp, the answer to req, is an event stream
// the Conn may resume if it breaks: a Streamable HTTP answer, on the
// protocol before 2026-07-28, to a request (a POST) or to a resumption
// (a GET with Last-Event-ID, which mcp-go sends to poll).
func (rt *roundTripper) resumable(req *nethttp.Request, resp *nethttp.Response) bool {
	if rt.c.opts.resumeAttempts == 0 || rt.c.spec.Kind != StreamableHTTP || resp.StatusCode != nethttp.StatusOK {
		return false
	}
	switch req.Method {
	case nethttp.MethodPost:
	case nethttp.MethodGet:
		if req.Header.Get("Last-Event-ID") == "" {
			return false
		}
	default:
		return false
	}
	return isEventStream(resp.Header.Get("Content-Type")) &&
		!mcp.IsModernProtocol(req.Header.Get(transport.HeaderKeyProtocolVersion))
}

// resumeBody is an answer's event stream that resumes itself when reading
// breaks after an event ID was seen. Read is called from one goroutine
// (mcp-go's reader); Close may come from another at any time.
type resumeBody struct {
	rt  *roundTripper
	req *nethttp.Request // the request answered; its URL and headers make the GET
	// stream marks the notification stream (the older protocol's GET
	// stream): it is reopened after any break, with or without an event
	// ID, and its final failure is the Conn's loss.
	stream bool

	// ctx is the request's, ended also by Close: it bounds the waits and
	// the GETs of resuming.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex    // guards body against Close
	body   io.ReadCloser // the stream being read now
	closed bool

	// Owned by the reader.
	pending []byte // bytes read and not handed out: pending[:ready] are whole events
	ready   int    //
	scanned int    // pending[:scanned] has been parsed into lines
	lineEnd int    // set by scan: the end of the last whole line it saw
	idBuf   string // the SSE "last event ID buffer": the latest id field
	lastID  string // the ID of the last whole event
	retry   time.Duration
	broke   error // why the stream broke, once pending[:ready] is handed out
	err     error // the error Read returns once pending is empty
	// refused is set, in stream mode, once an attempt to reopen the stream
	// found the server's port closed: its process went away, and took the
	// session with it, whatever answers there afterwards.
	refused bool
}

func (rt *roundTripper) resumer(req *nethttp.Request, body io.ReadCloser) *resumeBody {
	ctx, cancel := context.WithCancel(req.Context())
	// A resumption's stream (mcp-go's polling GET) starts where its
	// Last-Event-ID says: it can be resumed from there before it sends
	// an event of its own.
	last := req.Header.Get("Last-Event-ID")
	return &resumeBody{rt: rt, req: req, ctx: ctx, cancel: cancel, body: body, idBuf: last, lastID: last}
}

// reopener wraps body, the notification stream's, so that it is reopened
// in its session when it breaks (stream mode).
func (rt *roundTripper) reopener(req *nethttp.Request, body io.ReadCloser) *resumeBody {
	b := rt.resumer(req, body)
	b.stream = true
	return b
}

func (b *resumeBody) Read(p []byte) (int, error) {
	for {
		if b.ready > 0 {
			n := copy(p, b.pending[:b.ready])
			b.pending = b.pending[:copy(b.pending, b.pending[n:])]
			b.ready -= n
			b.scanned -= n
			return n, nil
		}
		if b.err != nil {
			return 0, b.err
		}
		if b.broke != nil {
			b.resume()
			continue
		}
		body := b.current()
		if body == nil {
			return 0, errResumeClosed
		}
		if len(b.pending) == 0 {
			// The common case: read straight into p, and hold back only
			// the tail of an event that did not end in it.
			n, err := body.Read(p)
			end := b.scan(p[:n], 0)
			if end < n {
				b.pending = append(b.pending, p[end:n]...)
				b.scanned = b.lineEnd - end
			}
			b.upstream(err)
			if end > 0 {
				return end, nil
			}
			continue
		}
		if len(b.pending) == cap(b.pending) {
			b.pending = append(b.pending, make([]byte, max(len(p), 512))...)[:len(b.pending)]
		}
		n, err := body.Read(b.pending[len(b.pending):cap(b.pending)])
		b.pending = b.pending[:len(b.pending)+n]
		b.ready = b.scan(b.pending, b.scanned)
		b.scanned = b.lineEnd
		b.upstream(err)
	}
}

// upstream deals with the error of a read from the stream: a clean end
// (the server ended the stream) hands out everything, a break after an
// event ID is resumed once what came before it is handed out, and any
// other break is the request's error.
func (b *resumeBody) upstream(err error) {
	switch {
	case err == nil:
	case b.stream && b.ctx.Err() == nil && !b.rt.c.closing.Load():
		// The notification stream: its end, clean or not, is not the
		// session's. What came whole before it is handed out first.
		b.broke = err
	case errors.Is(err, io.EOF):
		b.ready, b.scanned = len(b.pending), len(b.pending)
		b.err = io.EOF
	case b.lastID != "" && b.ctx.Err() == nil && !b.rt.c.closing.Load():
		b.broke = err
	default:
		if b.lastID == "" && b.ctx.Err() == nil {
			b.rt.c.log.Debug("mcpfleet: http: an answer stream broke before any event ID; it cannot be resumed",
				"method", b.req.Header.Get(mcp.HeaderMethod), "err", err)
		}
		b.ready, b.scanned = len(b.pending), len(b.pending)
		b.err = err
	}
}

// current returns the stream being read, nil once closed.
func (b *resumeBody) current() io.ReadCloser {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	return b.body
}

// resume replaces the broken stream with the server's resumption of it,
// dropping the event the break cut (the server sends it again whole). When
// that fails, the break is the request's error.
func (b *resumeBody) resume() {
	cause := b.broke
	b.broke = nil
	b.pending, b.ready, b.scanned = b.pending[:0], 0, 0
	b.idBuf = b.lastID
	body, err := b.reopen(cause)
	if err == nil && b.refused {
		// Back, after its port was closed: a new process, which knows
		// nothing of the session, whether it says so or not (a server
		// that does not check session ids would take the stream).
		body.Close()
		b.rt.c.fail(restartedError{})
		b.err = cause
		return
	}
	if err != nil && b.stream {
		// The server cannot be reached, or forgot the session (the
		// Conn failed as stale already, when it said so).
		if b.ctx.Err() == nil && !b.rt.c.closing.Load() {
			// The reopen's error is told, not wrapped: its "not sent" is
			// about the reopen, not about any request of the caller's.
			err = fmt.Errorf("server ended the stream: %w; reopening it in its session: %v", cause, err)
			if b.refused {
				err = fmt.Errorf("%w; %w", err, errProcessGone)
			}
			b.rt.c.streamLost(err)
		}
		b.err = cause
		return
	}
	if err != nil {
		// A Warn: the request's outcome is lost after all.
		b.rt.c.log.Warn("mcpfleet: http: could not resume a broken answer stream",
			"method", b.req.Header.Get(mcp.HeaderMethod), "break", cause, "err", err)
		b.err = cause
		return
	}
	b.mu.Lock()
	old := b.body
	if b.closed {
		b.mu.Unlock()
		body.Close()
		b.err = errResumeClosed
		return
	}
	b.body = body
	b.mu.Unlock()
	old.Close()
	if b.stream {
		b.rt.c.reopened(cause, b.replays())
		return
	}
	b.rt.c.resumed()
}

// errResumeClosed is what Read returns after Close.
var errResumeClosed = errors.New("http: answer stream closed")

// reopen asks the server for the stream after b.lastID, as many times as
// the Conn's resume attempts allow, waiting the server's retry time before
// the first try and backing off after.
func (b *resumeBody) reopen(cause error) (io.ReadCloser, error) {
	attempts := b.rt.c.opts.resumeAttempts
	if b.stream {
		attempts = b.rt.c.opts.reopenAttempts
	}
	wait := b.retry
	err := cause
	for try := 1; attempts < 0 || try <= attempts; try++ {
		if try > 1 {
			wait = max(b.retry, min(resumeBackoff<<(try-2), resumeBackoffMax))
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.ctx.Done():
				t.Stop()
				return nil, b.ctx.Err()
			}
		}
		if b.ctx.Err() != nil || b.rt.c.closing.Load() {
			return nil, fmt.Errorf("resuming: %w", errResumeClosed)
		}
		var final bool
		var body io.ReadCloser
		body, final, err = b.get()
		if err == nil {
			return body, nil
		}
		if b.stream && connRefused(err) {
			b.refused = true
		}
		if final {
			return nil, err
		}
	}
	return nil, err
}

// get sends one GET for the stream after b.lastID. final reports an answer
// that no other try would change: the server refused the resumption (it
// forgot the session or the stream, or does not offer it).
func (b *resumeBody) get() (body io.ReadCloser, final bool, err error) {
	req, err := nethttp.NewRequestWithContext(b.ctx, nethttp.MethodGet, b.req.URL.String(), nil)
	if err != nil {
		return nil, true, err
	}
	req.Header = b.req.Header.Clone()
	for _, h := range []string{"Content-Type", "Content-Length", mcp.HeaderMethod, mcp.HeaderName} {
		req.Header.Del(h)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Del("Last-Event-ID")
	if b.replays() {
		req.Header.Set("Last-Event-ID", b.lastID)
	}
	req.Host = b.req.Host
	resp, err := b.rt.answer(req)
	if err != nil {
		return nil, false, err
	}
	// Older mcp-go servers (v0.32, v0.34) answer the GET stream with 202
	// Accepted (see stream).
	ok := resp.StatusCode == nethttp.StatusOK || b.stream && resp.StatusCode == nethttp.StatusAccepted
	if !ok || !isEventStream(resp.Header.Get("Content-Type")) {
		discard(resp)
		return nil, refusesResumption(resp.StatusCode), fmt.Errorf("resuming: server answered HTTP %d (%s)", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.Body, false, nil
}

// refusesResumption reports whether status, a server's answer to a GET
// with Last-Event-ID, says no later try can succeed: it does not know the
// session or the event (400, 404, 410), offers no GET (405), or refused the
// credentials. Anything else may pass: a 409 in particular, which the
// TypeScript SDK answers while it has not yet noticed that the broken
// stream's connection is gone, and a 5xx.
func refusesResumption(status int) bool {
	switch status {
	case nethttp.StatusBadRequest, nethttp.StatusNotFound, nethttp.StatusGone, nethttp.StatusMethodNotAllowed,
		nethttp.StatusUnauthorized, nethttp.StatusForbidden:
		return true
	}
	return false
}

// replays reports whether the stream is asked for again from b.lastID: an
// answer's always; the notification stream's only WithStreamReplay, and
// once the server gave an event ID on it.
func (b *resumeBody) replays() bool {
	return b.lastID != "" && (!b.stream || b.rt.c.opts.streamReplay)
}

// scan parses the lines of buf from offset from, updating the event IDs
// and the retry time, and returns the end of the last whole event in buf
// (0 if none). It leaves in b.lineEnd the end of the last whole line.
func (b *resumeBody) scan(buf []byte, from int) int {
	end, i := 0, from
	for {
		nl := bytes.IndexByte(buf[i:], '\n')
		if nl < 0 {
			break
		}
		line := buf[i : i+nl]
		i += nl + 1
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		switch {
		case len(line) == 0:
			// The end of an event: its ID counts from now on.
			b.lastID = b.idBuf
			end = i
		case bytes.HasPrefix(line, idField):
			if v := fieldValue(line, len(idField)); bytes.IndexByte(v, 0) < 0 {
				b.idBuf = string(v)
			}
		case bytes.HasPrefix(line, retryField):
			if ms, err := strconv.ParseUint(string(fieldValue(line, len(retryField))), 10, 31); err == nil {
				b.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	b.lineEnd = i
	return end
}

var (
	idField    = []byte("id:")
	retryField = []byte("retry:")
)

// fieldValue is an SSE field's value: what follows the colon, less one
// leading space.
func fieldValue(line []byte, after int) []byte {
	v := line[after:]
	if len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	return v
}

// Close ends the stream being read and any resumption under way.
func (b *resumeBody) Close() error {
	b.cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.body.Close()
}
