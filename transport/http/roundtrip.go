package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	nethttp "net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// roundTripper sits between mcp-go and the Conn's own http.Transport. It is
// where the Conn learns what mcp-go does not report: that the notification
// stream opened or broke off, and that the server forgot the session. It
// also applies the per-request timeout everywhere but on the stream, bounds
// the session DELETE, and resends a request that died on a dead idle
// keep-alive connection (see send).
type roundTripper struct {
	c    *Conn
	base nethttp.RoundTripper
}

// maxErrorBody bounds how much of an HTTP 400 body is read to look for a
// stale-session error.
const maxErrorBody = 64 << 10

func (rt *roundTripper) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	switch {
	case rt.isStream(req):
		return rt.stream(req)
	case req.Method == nethttp.MethodDelete:
		return rt.delete(req)
	}
	var cancel context.CancelFunc
	if t := rt.c.spec.Timeout; t > 0 {
		var ctx context.Context
		ctx, cancel = context.WithTimeout(req.Context(), t)
		req = req.WithContext(ctx)
	}
	resp, err := rt.send(req)
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, err
	}
	if rt.onSession(req) {
		if resp, err = rt.checkSession(req, resp); err != nil {
			if cancel != nil {
				cancel()
			}
			return nil, err
		}
	}
	if cancel != nil {
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
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
	if err != nil {
		if req.Method == nethttp.MethodGet && req.Context().Err() == nil && !c.closing.Load() {
			c.streamFailed(err)
		}
		return nil, err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == nethttp.StatusOK && mediaType == "text/event-stream" {
		c.stream.set(streamOpen, nil)
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
	if getStream {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return methodNotAllowed(req), nil
	}
	return resp, nil
}

// send sends req once, and once more on a fresh connection when the first
// attempt provably reached no one: it went out on a keep-alive connection
// that had sat idle in the pool, failed before a single response byte came
// back, and its context is still live. That is a connection the server
// closed while it was idle (typically because the server restarted on the
// same port), which the pool handed out before it noticed the close; the
// old server never ran the request and the new one never saw it. net/http
// itself resends only idempotent requests in that case, and every MCP
// request is a POST, so without this a restart would surface as EOF, which
// the Manager must report as an unknown outcome. Browsers resend any method
// in this case for the same reason.
//
// Anything else is left alone: a fresh connection that fails, or a failure
// after response bytes arrived, may have been run by the server.
//
// The stream requests go through here too: a subscriptions/listen POST
// lost this way would read as a stream that failed to open, and a Conn
// torn down for it. (net/http resends the GET stream itself.)
//
// The alternative would be an Idempotency-Key header on every request,
// which net/http honours by resending such a request on the same
// condition. It is rejected because it tells the server and every proxy on
// the way that the request is safe to replay under that key, a promise we
// cannot make for a tool call and that a gateway implementing the header
// (draft-ietf-httpapi-idempotency-key) would act on.
func (rt *roundTripper) send(req *nethttp.Request) (*nethttp.Response, error) {
	var att attempt
	resp, err := rt.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), att.trace())))
	if err == nil || !att.deadIdle() || req.Context().Err() != nil {
		return resp, err
	}
	retry, ok := rewind(req)
	if !ok {
		return nil, err
	}
	// The pool may hold more connections to the old server, idle since
	// before it went away: drop them all, so the resend dials. The pool is
	// this Conn's alone and holds a handful of connections at most; the
	// stream and requests in flight are not idle and stay.
	rt.c.pool.CloseIdleConnections()
	rt.c.log.Debug("mcpfleet: http: resending a request that died on an idle keep-alive connection",
		"method", req.Header.Get(mcp.HeaderMethod), "err", err)
	return rt.base.RoundTrip(retry)
}

// attempt records, through an httptrace.ClientTrace, what send needs to
// know about one attempt. The trace callbacks run on net/http's goroutines.
type attempt struct {
	idle     atomic.Bool // got a connection that sat idle in the pool
	answered atomic.Bool // a response byte came back
}

func (a *attempt) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			// net/http may itself resend on another connection (it does
			// when nothing was written), and calls GotConn again: the
			// last connection is the one that failed.
			a.idle.Store(info.Reused && info.WasIdle)
		},
		GotFirstResponseByte: func() { a.answered.Store(true) },
	}
}

// deadIdle reports whether the attempt failed on a connection that had sat
// idle, before any response byte came back.
func (a *attempt) deadIdle() bool { return a.idle.Load() && !a.answered.Load() }

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
	ctx, cancel := context.WithTimeout(req.Context(), rt.c.opts.deleteTimeout)
	stop := context.AfterFunc(rt.c.abort, cancel)
	release := func() { stop(); cancel() }
	resp, err := rt.base.RoundTrip(req.WithContext(ctx))
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
