package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	nethttp "net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// roundTripper sits between mcp-go and the Conn's own http.Transport. It is
// where the Conn learns what mcp-go does not report: that the notification
// stream opened or broke off, and that the server forgot the session. It
// also applies the per-request timeout everywhere but on the stream, bounds
// the session DELETE, marks the requests that provably never went out
// (ErrNotSent, see send), hands mcp-go a 2026-07-28 JSON-RPC error sent
// with HTTP 404 as the answer it is (see answer404), and resumes an
// answer's event stream that breaks off (resume.go).
type roundTripper struct {
	c    *Conn
	base nethttp.RoundTripper
}

// maxErrorBody bounds how much of an HTTP 400 or 404 body is read to look
// for a stale-session error or a JSON-RPC error answer.
const maxErrorBody = 64 << 10

func (rt *roundTripper) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	if rt.c.life.Err() != nil && req.Method != nethttp.MethodDelete {
		// Closed. mcp-go learns of its own Close through a goroutine that
		// cancels the request's context, which a request to a server
		// nearby can outrun: nothing goes out after Close returned.
		return nil, &notSentError{err: ErrClosed}
	}
	if rt.c.opts.rejoin != nil && req.Method == nethttp.MethodPost && rt.c.spec.Kind == StreamableHTTP {
		if resp, err, ok := rt.rejoinStep(req); ok {
			return resp, err
		}
	}
	switch {
	case rt.isStream(req):
		return rt.stream(req)
	case req.Method == nethttp.MethodDelete:
		return rt.delete(req)
	}
	req = rt.inSession(req)
	if req.Method == nethttp.MethodPost && rt.c.discoverFailed.Load() != nil {
		if method, _ := peekRPC(req); method == string(mcp.MethodInitialize) {
			// mcp-go falls back to the older handshake whenever discover
			// fails; a proxy's 502 says nothing of the server's protocol.
			return nil, &notSentError{err: fmt.Errorf("initialize not sent: %w", *rt.c.discoverFailed.Load())}
		}
	}
	var cancel context.CancelFunc
	if t := rt.c.spec.Timeout; t > 0 {
		var ctx context.Context
		ctx, cancel = context.WithTimeout(req.Context(), t)
		req = req.WithContext(ctx)
	}
	resp, err := rt.answer(req)
	if req.Header.Get(mcp.HeaderMethod) == string(mcp.MethodServerDiscover) {
		rt.c.noteDiscover(resp, err)
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, err
	}
	if rt.resumable(req, resp) {
		resp.Body = rt.resumer(req, resp.Body)
	}
	if cancel != nil {
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	}
	return resp, nil
}

// noteDiscover records why server/discover failed when no answer of the
// server's says so (a transport error, or a proxy's 502, 503 or 504), so
// that the initialize mcp-go falls back to is not sent: it would settle on
// the older protocol (and open a session) with a server that may well
// speak 2026-07-28. A server's own answer (an error, a 404, a result)
// clears it.
func (c *Conn) noteDiscover(resp *nethttp.Response, err error) {
	var why error
	switch {
	case err != nil && !isContextErr(err):
		why = fmt.Errorf("server/discover failed: %w", err)
	case err == nil && (resp.StatusCode == nethttp.StatusBadGateway || resp.StatusCode == nethttp.StatusServiceUnavailable ||
		resp.StatusCode == nethttp.StatusGatewayTimeout):
		why = fmt.Errorf("server/discover got HTTP %d from a proxy in front of the server: its protocol generation is not known", resp.StatusCode)
	}
	if why == nil {
		c.discoverFailed.Store(nil)
		return
	}
	c.discoverFailed.Store(&why)
}

// answer sends req, a request that is not the notification stream's nor
// the DELETE, and returns the server's answer as mcp-go should see it: a
// stale session made a plain 404 (checkSession), a 2026-07-28 error
// answer sent with 404 made the error it is (answer404), the body bounded
// by the message size limit.
func (rt *roundTripper) answer(req *nethttp.Request) (*nethttp.Response, error) {
	resp, err := rt.send(req)
	if err != nil {
		return nil, err
	}
	// A legacy SSE POST's answer travels on the stream: its own body is
	// anything.
	record(req, resp, rt.c.spec.Kind == StreamableHTTP && req.Method == nethttp.MethodPost)
	if resp.StatusCode == nethttp.StatusNotFound && rt.sessionless(req) {
		resp = answer404(resp)
	}
	if rt.foreign(req) {
		// Another connection's session (a task's): its loss is not ours.
		if err := foreignGone(resp); err != nil {
			return nil, err
		}
	} else if rt.onSession(req) {
		if resp, err = rt.checkSession(req, resp); err != nil {
			return nil, err
		}
	}
	if rt.c.opts.maxMessage > 0 && resp.StatusCode == nethttp.StatusOK {
		rt.c.limitBody(resp)
	}
	return resp, nil
}

// isStream reports whether req opens the notification stream: the legacy
// SSE stream, the older protocol's standalone GET stream (a GET with
// Last-Event-ID resumes a response instead), or the 2026-07-28
// subscriptions/listen request.
func (rt *roundTripper) isStream(req *nethttp.Request) bool {
	if req.Method == nethttp.MethodGet {
		return rt.c.spec.Kind == SSE || req.Header.Get("Last-Event-ID") == ""
	}
	return req.Method == nethttp.MethodPost &&
		req.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen)
}

func (rt *roundTripper) stream(req *nethttp.Request) (*nethttp.Response, error) {
	c := rt.c
	// The older protocol's GET stream: once it is over, answer mcp-go's
	// reconnection attempts with 405, which makes it stop trying. The Conn
	// is dead by then, or never had a stream.
	getStream := req.Method == nethttp.MethodGet && c.spec.Kind == StreamableHTTP
	if phase, _, _ := c.stream.get(); getStream && (phase == streamEnded || phase == streamRefused) {
		return methodNotAllowed(req), nil
	}
	resp, err := rt.send(req)
	if err == nil && getStream && resp.StatusCode == nethttp.StatusConflict {
		resp, err = rt.streamConflict(req, resp)
	}
	if err != nil {
		if req.Method == nethttp.MethodGet && req.Context().Err() == nil && !c.closing.Load() {
			c.streamFailed(err)
		}
		return nil, err
	}
	record(req, resp, c.spec.Kind == SSE)
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	// Older mcp-go servers (v0.32, v0.34) answer the GET stream with 202
	// Accepted, which mcp-go's client takes too.
	opened := resp.StatusCode == nethttp.StatusOK || (getStream && resp.StatusCode == nethttp.StatusAccepted)
	if opened && mediaType == "text/event-stream" {
		if c.stream.set(streamOpen, nil) && c.gaveUp.Load() {
			c.openedLate()
		}
		if c.opts.maxMessage > 0 {
			c.limitBody(resp)
		}
		if getStream && c.opts.reopenAttempts > 0 {
			// The session outlives the stream: a break is reopened in it
			// (resume.go), and only a server gone or forgetful ends c.
			resp.Body = rt.reopener(req, resp.Body)
			return resp, nil
		}
		resp.Body = &streamBody{ReadCloser: resp.Body, c: c, ctx: req.Context()}
		return resp, nil
	}
	if req.Method != nethttp.MethodGet {
		// subscriptions/listen answered with a JSON-RPC error: the Listen
		// goroutine sees it and records why.
		return resp, nil
	}
	if resp.StatusCode == nethttp.StatusNotFound && req.Header.Get(transport.HeaderKeySessionID) != "" {
		if phase, _, _ := c.stream.get(); phase == streamOpen {
			c.fail(staleSessionError{status: nethttp.StatusNotFound})
		}
	}
	c.streamFailed(fmt.Errorf("server answered the stream with HTTP %d", resp.StatusCode))
	if c.spec.Kind == SSE && resp.StatusCode < 300 {
		// A 2xx that is no event stream (a web page): mcp-go would read it
		// for an endpoint event until the dial's deadline. The answer is
		// recorded, for the dial's error to describe.
		discard(resp)
		if mediaType == "" {
			mediaType = "no content type"
		}
		return nil, fmt.Errorf("the server answered the event stream with %s", mediaType)
	}
	if getStream {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return methodNotAllowed(req), nil
	}
	return resp, nil
}

// streamConflict asks again for the GET stream that the server answered
// 409 Conflict: it still holds the session's previous stream, whose
// connection broke (or whose Conn was replaced by one that rejoined the
// session) before the server noticed. The TypeScript SDK answers so until
// then. It tries as often as a broken stream is reopened, backing off,
// and returns the last answer.
func (rt *roundTripper) streamConflict(req *nethttp.Request, resp *nethttp.Response) (*nethttp.Response, error) {
	for try := 1; try < max(rt.c.opts.reopenAttempts, 1)+1 && resp.StatusCode == nethttp.StatusConflict; try++ {
		discard(resp)
		t := time.NewTimer(min(resumeBackoff<<(try-1), resumeBackoffMax))
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		}
		var err error
		if resp, err = rt.send(req.Clone(req.Context())); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// send sends req, and says, when it fails, whether the request provably
// never reached the server: then the error wraps ErrNotSent (see attempt).
//
// A request that failed on a connection the pool had kept idle, with
// provably nothing of it written, is sent once more on a fresh connection:
// the server cannot have run it, whatever the method. Two cases reach
// this, both typically after a restart on the same port:
//
//   - net/http's read loop saw the server close the idle connection just
//     after the pool handed it to our request, before the request was
//     written: net/http fails it with "http: server closed idle
//     connection" (errServerClosedIdle) and resends only idempotent
//     methods (shouldRetryRequest), and every MCP request is a POST;
//   - trackedConn found the server's FIN before the first byte and
//     refused the write, but the request was larger than net/http's write
//     buffer: the refusal came while the body was copied, which net/http
//     takes for a failure to read our body and does not resend. (A smaller
//     one net/http resends by itself, as a nothing-written error.)
//
// Nothing else is resent. In particular not a request that failed on a
// reused connection after it was written, with no answer: the server may
// have read it, run it and closed the connection (see trackedConn). Nor
// one whose dial failed: the Manager decides when to try again.
//
// The alternative would be an Idempotency-Key header on every request,
// which net/http honours by resending such a request after it was
// written. It is rejected because it tells the server and every proxy on
// the way that the request is safe to replay under that key, a promise we
// cannot make for a tool call and that a gateway implementing the header
// (draft-ietf-httpapi-idempotency-key) would act on.
//
// The Authorizer's credentials go only to the server's origin (a redirect
// elsewhere is refused before it gets here, see checkRedirect; this holds
// even so).
func (rt *roundTripper) send(req *nethttp.Request) (*nethttp.Response, error) {
	if a := rt.c.opts.auth; a != nil && rt.c.sameOrigin(req) {
		return rt.authorized(req, a)
	}
	return rt.sendOnce(req)
}

// sendOnce is send without the Authorizer: one request (resent only as
// send describes).
func (rt *roundTripper) sendOnce(req *nethttp.Request) (*nethttp.Response, error) {
	var att attempt
	resp, err := rt.base.RoundTrip(att.watch(req))
	if err != nil && isServerClosedIdle(err) {
		att.unwrite()
	}
	if err != nil && !att.written() && att.reused.Load() && req.Context().Err() == nil && !rt.c.closing.Load() {
		if retry, ok := rewind(req); ok {
			// The pool may hold more connections the server closed: drop
			// the idle ones, so the resend dials. The stream and requests
			// in flight are not idle and stay.
			rt.c.pool.CloseIdleConnections()
			rt.c.log.Debug("mcpfleet: http: resending a request not written on a closed idle connection",
				"method", req.Header.Get(mcp.HeaderMethod), "err", err)
			resp, err = rt.base.RoundTrip(att.watch(retry))
			if err != nil && isServerClosedIdle(err) {
				att.unwrite()
			}
		}
	}
	if err == nil {
		return resp, nil
	}
	if !att.written() && (!isContextErr(err) || rt.c.closing.Load()) {
		// A context error is left alone when it is the caller's (or the
		// request timeout's): the caller gave up, which is its own class.
		// When the Conn is closing, mcp-go cancelled the request itself.
		err = &notSentError{err: err}
	}
	return nil, err
}

// errServerClosedIdleText is net/http's errServerClosedIdle, which it does
// not export. Its transport sets it only when its read loop met the
// server's EOF while no response was expected on the connection: the
// server closed it before our request was registered there, so any bytes
// net/http wrote afterwards (mapRoundTripError returns this error whether
// or not some were) went to a server that had already closed. Only a
// server that half-closes and then reads on could have run them; an MCP
// server does not.
const errServerClosedIdleText = "http: server closed idle connection"

// isServerClosedIdle reports whether err is net/http's errServerClosedIdle.
func isServerClosedIdle(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errServerClosedIdleText {
			return true
		}
	}
	return false
}

// attempt records, through an httptrace.ClientTrace, whether a request
// (in all the attempts net/http and send made) may have reached the
// server. The trace callbacks run on net/http's goroutines.
//
// What is provable: net/http's HTTP/1 Request.write fires WroteRequest
// (deferred) once it starts writing, and HTTP/2 fires it on every path
// once the headers are out and the body is being written. So when it
// never fired, the server cannot have received the request's body, and
// an MCP request is its body: nothing can have run it. When it fired with
// an error on an HTTP/1 connection of ours that counted no byte written
// for the request (trackedConn), the same holds for that attempt.
// Anything else counts as written: a write that failed part way may have
// delivered the whole JSON-RPC message.
type attempt struct {
	conn   atomic.Pointer[trackedConn] // the connection of the latest attempt; nil for HTTP/2
	reused atomic.Bool                 // the latest attempt's connection came from the pool
	wrote  atomic.Bool                 // some attempt may have delivered the request

	// first is the trace of the first watch, allocated with the attempt.
	// A resend gets a trace of its own: httptrace.WithClientTrace composes
	// the caller's hooks into the trace it is given, so one trace given
	// twice would call them twice.
	first   httptrace.ClientTrace
	watched bool
}

// watch returns req with the attempt's trace composed into its context
// (net/http calls the caller's trace hooks too).
func (a *attempt) watch(req *nethttp.Request) *nethttp.Request {
	trace := &a.first
	if a.watched {
		trace = &httptrace.ClientTrace{}
	}
	a.watched = true
	trace.GotConn, trace.WroteRequest = a.gotConn, a.wroteRequest
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
}

// gotConn is the trace's GotConn: net/http calls it again for each attempt
// it makes.
func (a *attempt) gotConn(info httptrace.GotConnInfo) {
	c := tracked(info.Conn)
	if c != nil {
		c.begin(info.Reused)
	}
	a.conn.Store(c)
	a.reused.Store(info.Reused)
}

// wroteRequest is the trace's WroteRequest.
func (a *attempt) wroteRequest(info httptrace.WroteRequestInfo) {
	if info.Err == nil {
		a.wrote.Store(true)
		return
	}
	if c := a.conn.Load(); c == nil || c.wrote() > 0 {
		a.wrote.Store(true)
	}
}

// written reports whether the request may have reached the server.
func (a *attempt) written() bool { return a.wrote.Load() }

// unwrite records that the attempt just failed proves nothing was
// delivered after all (see isServerClosedIdle). Only the latest attempt
// can have set wrote: net/http retries, and send resends, only what was
// not written.
func (a *attempt) unwrite() { a.wrote.Store(false) }

// rewind returns a copy of req to send again with its body rewound, and
// false when the body cannot be read again.
func rewind(req *nethttp.Request) (*nethttp.Request, bool) {
	retry := req.Clone(req.Context())
	if req.Body == nil || req.Body == nethttp.NoBody {
		return retry, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	retry.Body = body
	return retry, true
}

// delete sends the session DELETE bounded by the delete timeout and by the
// context Close was called with.
func (rt *roundTripper) delete(req *nethttp.Request) (*nethttp.Response, error) {
	if rt.c.deleteSkipped() {
		// The session is kept for a later connection, or already gone.
		return synthetic(req, nethttp.StatusNoContent), nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), rt.c.opts.deleteTimeout)
	stop := context.AfterFunc(rt.c.abort, cancel)
	release := func() { stop(); cancel() }
	req = req.WithContext(ctx)
	if a := rt.c.opts.auth; a != nil && rt.c.sameOrigin(req) {
		req = req.Clone(ctx)
		if err := a.Authorize(req); err != nil {
			release()
			return nil, err
		}
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: release}
	return resp, nil
}

// onSession reports whether req was sent on a session the server may have
// forgotten: a Streamable HTTP request carrying a session ID, or a POST to
// the endpoint a legacy SSE stream announced (its session is in the URL).
func (rt *roundTripper) onSession(req *nethttp.Request) bool {
	if rt.c.spec.Kind == SSE {
		return req.Method == nethttp.MethodPost
	}
	return req.Header.Get(transport.HeaderKeySessionID) != ""
}

// checkSession looks at the answer to a request sent on a session for
// signs that the server forgot it: HTTP 404, or HTTP 400 with a JSON-RPC
// error about the session (the TypeScript SDK answers -32000 "No valid
// session ID provided", mcp-go's SSE server -32602 "Invalid session ID").
//
// For Streamable HTTP the answer becomes a plain 404, which mcp-go
// understands: it ends the session, and this and every later request fails
// with transport.ErrSessionTerminated. mcp-go's SSE transport has no such
// notion, so there the request fails with an error that matches both
// ErrStaleSession and transport.ErrSessionTerminated.
func (rt *roundTripper) checkSession(req *nethttp.Request, resp *nethttp.Response) (*nethttp.Response, error) {
	var stale error
	switch resp.StatusCode {
	case nethttp.StatusNotFound:
		stale = staleSessionError{status: nethttp.StatusNotFound}
	case nethttp.StatusBadRequest:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if isSessionError(body) {
			stale = staleSessionError{status: nethttp.StatusBadRequest}
		}
	}
	if stale == nil {
		return resp, nil
	}
	rt.c.fail(stale)
	if rt.c.spec.Kind == SSE {
		resp.Body.Close()
		return nil, stale
	}
	if resp.StatusCode != nethttp.StatusNotFound {
		resp.Body.Close()
		resp = synthetic(req, nethttp.StatusNotFound)
	}
	return resp, nil
}

// sessionless reports whether req is a 2026-07-28 request: it carries no
// session ID, and there is no session on that protocol for the server to
// forget.
func (rt *roundTripper) sessionless(req *nethttp.Request) bool {
	return rt.c.spec.Kind == StreamableHTTP && req.Method == nethttp.MethodPost &&
		req.Header.Get(transport.HeaderKeySessionID) == "" &&
		(req.Header.Get(mcp.HeaderMethod) != "" ||
			mcp.IsModernProtocol(req.Header.Get(transport.HeaderKeyProtocolVersion)))
}

// answer404 returns resp, an HTTP 404 to a 2026-07-28 request, as an HTTP
// 200 when its body is a JSON-RPC error response to a request: on that
// protocol a server answers -32601 "method not found" with 404 (mcp-go's
// does, as the protocol prescribes), while mcp-go's client takes every 404
// for a stale session and reports transport.ErrSessionTerminated. The
// server answered; the caller gets its error. Any other 404 is left as it
// is.
func answer404(resp *nethttp.Response) *nethttp.Response {
	orig := resp.Body
	body, _ := io.ReadAll(io.LimitReader(orig, maxErrorBody))
	if !isErrorAnswer(body) {
		resp.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(body), orig), Closer: orig}
		return resp
	}
	orig.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.StatusCode = nethttp.StatusOK
	resp.Status = "200 OK"
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(len(body))
	return resp
}

// isErrorAnswer reports whether body is one JSON-RPC error response to a
// request (with an id).
func isErrorAnswer(body []byte) bool {
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Error == nil || msg.JSONRPC != mcp.JSONRPC_VERSION {
		return false
	}
	id := bytes.TrimSpace(msg.ID)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// isSessionError reports whether body is a JSON-RPC error about the
// session.
func isSessionError(body []byte) bool {
	var msg struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Error == nil {
		return false
	}
	switch msg.Error.Code {
	case -32000, mcp.INVALID_PARAMS:
		return strings.Contains(strings.ToLower(msg.Error.Message), "session")
	}
	return false
}

func methodNotAllowed(req *nethttp.Request) *nethttp.Response {
	return synthetic(req, nethttp.StatusMethodNotAllowed)
}

// synthetic returns an empty response with status code, made up here
// rather than received.
func synthetic(req *nethttp.Request, code int) *nethttp.Response {
	return &nethttp.Response{
		Status:     fmt.Sprintf("%d %s", code, nethttp.StatusText(code)),
		StatusCode: code,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(nethttp.Header),
		Body:       nethttp.NoBody,
		Request:    req,
	}
}

// streamBody reports the notification stream breaking off.
type streamBody struct {
	io.ReadCloser
	c   *Conn
	ctx context.Context // the stream request's: ended when we end the stream
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.ctx.Err() == nil && !b.c.closing.Load() {
		b.c.streamLost(fmt.Errorf("server ended the stream: %w", err))
	}
	return n, err
}

// readCloser is a body made of a Reader and the Closer of the body it
// reads from.
type readCloser struct {
	io.Reader
	io.Closer
}

// cancelBody releases a request's context once its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
