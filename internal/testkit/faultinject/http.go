package faultinject

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// HTTPOptions says which HTTP server to run.
type HTTPOptions struct {
	// SSE serves the legacy HTTP+SSE transport (mcp-go's SSEServer, stream
	// at /sse) instead of streamable HTTP (mcp-go's stateful
	// StreamableHTTPServer at /mcp).
	SSE bool
	// SSEResponses makes the fault tools send a notification before they
	// answer, which makes the streamable HTTP server answer their calls
	// with an SSE stream instead of a JSON body.
	SSEResponses bool
	// Quiet declares the tools without list_changed. A client on
	// 2026-07-28 then keeps no notification stream open, so that nothing
	// tells it the server went away or restarted until its next request.
	Quiet bool
}

// Fault is what the HTTP server does to the next call of a fault tool.
type Fault struct {
	// Point is where the exchange breaks: AfterWrite, MidResponse,
	// AfterResponse, Stale404 or Stale400.
	Point Point
	// Gone makes the whole server go away at the fault, as a crashing
	// process does: the listener and every connection close, and a
	// restarted server knows none of the old sessions. Otherwise only the
	// exchange breaks (its TCP connection is closed, or over legacy SSE
	// the event stream that carries the answer) and the server lives on.
	Gone bool
}

// HTTP is an mcp-go server on 127.0.0.1 behind a middleware that breaks
// the exchange of a fault tool's call as armed. It can be stopped and
// started again on the same port.
type HTTP struct {
	opts HTTPOptions
	addr string // fixed by the first start

	executed atomic.Int64
	blocked  chan struct{} // ToolBlock started

	mu sync.Mutex // guards the fields below
	// armed is the fault for the next call of a fault tool; nil when none.
	armed *Fault
	// streamFaults holds, by session and JSON-RPC id (streamKey), what the
	// legacy SSE event stream does to the answer of a faulted call.
	streamFaults map[string]Fault
	// ran is closed and replaced each time a counted tool runs.
	ran chan struct{}
	// dying is set when a fault that takes the server down was taken, and
	// closed once the server is down: Start waits for it, so that a test
	// that restarts the server as soon as its call returned cannot start
	// it before the fault stopped it.
	dying chan struct{}

	life sync.Mutex // serializes starting and stopping; guards cur
	cur  *incarnation
}

// incarnation is one run of the server: built fresh at every start, so a
// restart forgets every session, as a restarted process would.
type incarnation struct {
	srv        *http.Server
	streamable *server.StreamableHTTPServer // nil for SSE
	sse        *server.SSEServer            // nil for streamable HTTP
	served     chan struct{}                // closed when Serve returned
	// streams ends the legacy SSE stream handlers when the server stops.
	streams context.Context
	stop    context.CancelFunc
}

// StartHTTP starts a server on a free port of 127.0.0.1 and stops it when
// the test ends.
func StartHTTP(t testing.TB, o HTTPOptions) *HTTP {
	t.Helper()
	h := &HTTP{opts: o, blocked: make(chan struct{}, 16), ran: make(chan struct{}),
		streamFaults: make(map[string]Fault)}
	if err := h.start("127.0.0.1:0"); err != nil {
		t.Fatalf("faultinject: start: %v", err)
	}
	t.Cleanup(h.Stop)
	return h
}

// URL returns the endpoint a client connects to, the same across restarts.
func (h *HTTP) URL() string {
	if h.opts.SSE {
		return "http://" + h.addr + "/sse"
	}
	return "http://" + h.addr + "/mcp"
}

// Executed returns how many times the counted tools ran, over every
// incarnation.
func (h *HTTP) Executed() int64 { return h.executed.Load() }

// Blocked receives once each time ToolBlock starts.
func (h *HTTP) Blocked() <-chan struct{} { return h.blocked }

// Arm makes the next call of a fault tool meet f, once.
func (h *HTTP) Arm(f Fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = &f
}

// WaitGone waits until a fault that takes the server down, once taken, has
// stopped it (a fault after the response strikes once the answer is out, so
// a client can have it before the server is down), or until ctx ends.
func (h *HTTP) WaitGone(ctx context.Context) error {
	h.mu.Lock()
	dying := h.dying
	h.mu.Unlock()
	if dying == nil {
		return nil
	}
	select {
	case <-dying:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Running reports whether the server is up.
func (h *HTTP) Running() bool {
	h.life.Lock()
	defer h.life.Unlock()
	return h.cur != nil
}

// Start starts the server again on its port if it is stopped; it is a
// no-op while it runs. While a fault that takes the server down was taken
// but has not struck yet, it waits for the server to go down first, or for
// ctx to end.
func (h *HTTP) Start(ctx context.Context) error {
	h.mu.Lock()
	dying := h.dying
	h.mu.Unlock()
	if dying != nil {
		select {
		case <-dying:
		case <-ctx.Done():
			return fmt.Errorf("faultinject: waiting for the server to go down: %w", ctx.Err())
		}
	}
	return h.start(h.addr)
}

func (h *HTTP) start(addr string) error {
	h.life.Lock()
	defer h.life.Unlock()
	if h.cur != nil {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	inc := &incarnation{served: make(chan struct{})}
	inc.streams, inc.stop = context.WithCancel(context.Background())
	mcpSrv := newServer("faultinject-http", hooks{
		stopped: inc.streams.Done(),
		count:   h.count,
		blocked: func() {
			select {
			case h.blocked <- struct{}{}:
			default:
			}
		},
		notify: h.opts.SSEResponses,
		quiet:  h.opts.Quiet,
	})
	var next http.Handler
	if h.opts.SSE {
		inc.sse = server.NewSSEServer(mcpSrv)
		next = inc.sse
	} else {
		inc.streamable = server.NewStreamableHTTPServer(mcpSrv, server.WithStateful(true))
		next = inc.streamable
	}
	inc.srv = &http.Server{Handler: h.middleware(next, inc), ReadHeaderTimeout: 10 * time.Second}
	h.addr = ln.Addr().String()
	h.cur = inc
	go func() {
		defer close(inc.served)
		_ = inc.srv.Serve(ln)
	}()
	return nil
}

// Stop closes the listener and every connection at once, as a crashing
// process would. It is safe to call while stopped, and from a handler.
func (h *HTTP) Stop() {
	h.life.Lock()
	defer h.life.Unlock()
	defer func() {
		h.mu.Lock()
		if h.dying != nil {
			close(h.dying)
			h.dying = nil
		}
		h.mu.Unlock()
	}()
	inc := h.cur
	h.cur = nil
	if inc == nil {
		return
	}
	inc.stop()
	_ = inc.srv.Close()
	<-inc.served
	if inc.sse != nil {
		inc.sse.CloseSessions()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = inc.streamable.Shutdown(ctx)
}

func (h *HTTP) count() int64 {
	n := h.executed.Add(1)
	h.mu.Lock()
	close(h.ran)
	h.ran = make(chan struct{})
	h.mu.Unlock()
	return n
}

// waitExecuted waits until the counted tools ran more than n times.
func (h *HTTP) waitExecuted(ctx context.Context, n int64) error {
	for {
		h.mu.Lock()
		ran := h.ran
		h.mu.Unlock()
		if h.executed.Load() > n {
			return nil
		}
		select {
		case <-ran:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take returns the armed fault if req is a call of a fault tool, and
// disarms it.
func (h *HTTP) take(req *rpcRequest) (Fault, bool) {
	if req == nil || req.Method != string(mcp.MethodToolsCall) || !IsFaultTool(req.Params.Name) {
		return Fault{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.armed == nil {
		return Fault{}, false
	}
	f := *h.armed
	h.armed = nil
	if f.Gone {
		h.dying = make(chan struct{})
	}
	return f, true
}

// rpcRequest is the part of a JSON-RPC request the middleware looks at.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// streamKey names a request on a legacy SSE session. Each client numbers
// its requests from 1, so an id alone is not enough.
func streamKey(session string, id json.RawMessage) string { return session + " " + idKey(id) }

// idKey normalizes a JSON-RPC id (a number or a string) for comparison.
func idKey(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func (h *HTTP) middleware(next http.Handler, inc *incarnation) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.opts.SSE && r.Method == http.MethodGet {
			h.serveStream(next, inc, w, r)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "faultinject: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req rpcRequest
		if json.Unmarshal(body, &req) != nil {
			next.ServeHTTP(w, r)
			return
		}
		f, ok := h.take(&req)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		switch f.Point {
		case Stale404:
			http.Error(w, "Session terminated", http.StatusNotFound)
			return
		case Stale400:
			code, msg := -32000, "Bad Request: No valid session ID provided"
			if h.opts.SSE {
				code, msg = mcp.INVALID_PARAMS, "Invalid session ID"
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": code, "message": msg}})
			return
		}
		if h.opts.SSE {
			h.faultSSEPost(next, f, &req, w, r)
			return
		}
		h.faultStreamable(next, f, w, r)
	})
}

// faultStreamable runs a streamable HTTP call to completion (the tool
// runs), then hands back none, half or all of the answer and breaks the
// connection.
func (h *HTTP) faultStreamable(next http.Handler, f Fault, w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	send := 0
	switch f.Point {
	case MidResponse:
		send = half(body)
	case AfterResponse:
		send = len(body)
	}
	if f.Point != AfterWrite {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		// A length makes the cut answer short and the whole one complete,
		// whatever the content type.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body[:send])
	}
	h.breakConn(w, f.Point != AfterWrite, f.Gone)
}

// half returns where to cut an answer: in the middle of its last SSE event
// for an event stream, in the middle of the body otherwise.
func half(body []byte) int {
	trimmed := bytes.TrimRight(body, "\r\n")
	start := 0
	if i := bytes.LastIndex(trimmed, []byte("\n\n")); i >= 0 {
		start = i + 2
	}
	return start + (len(trimmed)-start)/2
}

// breakConn sends what was written, then closes the request's TCP
// connection, and with gone stops the whole server first, so that no
// client can reach the old server once it sees the break. Stop waits for
// no handler, so a handler may call it.
func (h *HTTP) breakConn(w http.ResponseWriter, wrote, gone bool) {
	rc := http.NewResponseController(w)
	if wrote {
		// Flushing before anything was written would send a 200.
		_ = rc.Flush()
	}
	conn, _, err := rc.Hijack()
	if gone {
		h.Stop()
	}
	if err == nil {
		_ = conn.Close()
	}
}

// faultSSEPost handles a faulted call over legacy SSE. The POST only
// delivers the request (the server answers 202 and runs it); the answer
// travels on the event stream, where serveStream applies the fault.
func (h *HTTP) faultSSEPost(next http.Handler, f Fault, req *rpcRequest, w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.streamFaults[streamKey(r.URL.Query().Get("sessionId"), req.ID)] = f
	h.mu.Unlock()
	if f.Point != AfterWrite {
		next.ServeHTTP(w, r)
		return
	}
	// AfterWrite: the tool runs, its answer is dropped from the stream,
	// and the POST's connection breaks before its 202.
	before := h.executed.Load()
	next.ServeHTTP(httptest.NewRecorder(), r)
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	_ = h.waitExecuted(ctx, before)
	h.breakConn(w, false, f.Gone)
}

// serveStream serves a legacy SSE event stream through a writer that
// applies the faults armed for the answers it carries.
func (h *HTTP) serveStream(next http.Handler, inc *incarnation, w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(inc.streams, cancel)
	defer stop()
	sw := &streamWriter{ResponseWriter: w, h: h, cancel: cancel}
	// mcp-go's SSE server answers the stream request with the session in
	// the endpoint event's URL; streamWriter picks it up from there.
	next.ServeHTTP(sw, r.WithContext(ctx))
}

// streamWriter is a legacy SSE event stream's ResponseWriter. mcp-go's SSE
// server writes one event per Write.
type streamWriter struct {
	http.ResponseWriter
	h       *HTTP
	cancel  context.CancelFunc
	mu      sync.Mutex
	dead    bool
	session string // from the endpoint event
}

var errStreamCut = errors.New("faultinject: stream cut")

func (sw *streamWriter) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.dead {
		return 0, errStreamCut
	}
	if sw.session == "" {
		sw.session = endpointSession(p)
	}
	f, ok := sw.h.streamFault(sw.session, p)
	if !ok {
		return sw.ResponseWriter.Write(p)
	}
	switch f.Point {
	case AfterWrite:
		return len(p), nil // dropped: the POST broke instead
	case MidResponse:
		_, _ = sw.ResponseWriter.Write(p[:half(p)])
	case AfterResponse:
		_, _ = sw.ResponseWriter.Write(p)
	}
	sw.dead = true
	sw.cancel() // the SSE server's handler returns
	sw.h.breakConn(sw.ResponseWriter, true, f.Gone)
	return len(p), nil
}

func (sw *streamWriter) Flush() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.dead {
		return
	}
	if fl, ok := sw.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (sw *streamWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// endpointSession returns the session ID in an endpoint event, or "".
func endpointSession(p []byte) string {
	if !bytes.HasPrefix(p, []byte("event: endpoint")) {
		return ""
	}
	_, rest, ok := bytes.Cut(p, []byte("sessionId="))
	if !ok {
		return ""
	}
	if i := bytes.IndexAny(rest, "&\r\n"); i >= 0 {
		rest = rest[:i]
	}
	return string(rest)
}

// streamFault returns, and forgets, the fault armed for the answer that
// the event p carries on session.
func (h *HTTP) streamFault(session string, p []byte) (Fault, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.streamFaults) == 0 {
		return Fault{}, false
	}
	sc := bufio.NewScanner(bytes.NewReader(p))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &msg) != nil || msg.Method != "" {
			continue // not a response
		}
		key := streamKey(session, msg.ID)
		if f, ok := h.streamFaults[key]; ok {
			delete(h.streamFaults, key)
			return f, true
		}
	}
	return Fault{}, false
}
