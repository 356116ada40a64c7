package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/frame"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

// DefaultSessionIdleTTL is how long an HTTP session may go without a
// request before the gateway forgets it (a client that vanished without
// ending its session).
const DefaultSessionIdleTTL = time.Hour

// Timeouts for the http.Server that serves an HTTPServer: a client that
// sends its request slowly, or keeps a connection open idle, must not hold
// a connection and a goroutine for ever.
const (
	// DefaultReadHeaderTimeout bounds the reading of a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the reading of a whole request, body
	// included (a message of the largest size a client may send, at a
	// slow link's pace). net/http lifts the deadline once the body is
	// read, so it cuts no long call and no stream (TestReadTimeoutCutsNoCall).
	DefaultReadTimeout = 60 * time.Second
	// DefaultIdleTimeout bounds how long a kept-alive connection waits for
	// the next request.
	DefaultIdleTimeout = 2 * time.Minute
)

// HTTPOptions configures HTTPHandler.
type HTTPOptions struct {
	// Path is the MCP endpoint. Defaults to "/mcp".
	Path string
	// Token, if set, is the bearer token every request must carry
	// (Authorization: Bearer <token>); others get 401. Without one, whoever
	// reaches the handler can call every tool of the fleet (see CheckBind).
	// Its holders are one client for the limits.
	Token string
	// AllowedOrigins are the browser origins (scheme://host[:port]) allowed
	// besides the local ones (localhost, 127.0.0.1, [::1], any port). A
	// request with another Origin header gets 403: the MCP specification
	// asks servers to validate Origin against DNS rebinding, and a page a
	// browser loaded from elsewhere has no business with the fleet.
	AllowedOrigins []string
	// SessionIdleTTL is how long a session may go unused before it is
	// forgotten (its calls are cancelled). Defaults to
	// DefaultSessionIdleTTL; negative keeps sessions until they end.
	SessionIdleTTL time.Duration
}

// HTTPHandler returns the gateway as a streamable HTTP server (both
// protocol generations: sessions for clients before 2026-07-28, stateless
// requests and subscriptions/listen streams for 2026-07-28), with these
// checks before mcp-go sees a request:
//
//   - the bearer token, when o.Token is set;
//   - the Origin header (see HTTPOptions.AllowedOrigins); mcp-go also
//     refuses, on a loopback listener, a Host header that is not local;
//   - the size of the body: one over the message size limit is not read
//     past the limit and is answered 413 with a JSON-RPC error carrying
//     the request's id, if it could be found;
//   - the client's request rate, and for an initialize the caps on
//     sessions and the client's rate of opening them (WithClientLimits,
//     WithSessionCaps): over one, 429 with Retry-After and a JSON-RPC
//     error that names it;
//   - a 2026-07-28 notifications/cancelled is answered here, not by
//     mcp-go: it holds only for a request of its sender on the same
//     connection (see cancels); a GET stream needs a session of the
//     handler's.
//
// The handler serves o.Path and answers 404 elsewhere. Shutdown ends its
// sessions; call it before Close.
func (g *Gateway) HTTPHandler(o HTTPOptions) *HTTPServer {
	if o.Path == "" {
		o.Path = "/mcp"
	}
	ttl := o.SessionIdleTTL
	if ttl == 0 {
		ttl = DefaultSessionIdleTTL
	}
	h := &HTTPServer{g: g, o: o}
	sopts := []server.StreamableHTTPOption{
		server.WithEndpointPath(o.Path),
		// The gateway mints the session ids, so that a session is counted
		// from the moment it has one (see sessions.go).
		server.WithSessionIdManagerResolver(idResolver{h}),
		server.WithStreamableHTTPLogger(g.log),
	}
	if ttl > 0 {
		sopts = append(sopts, server.WithSessionIdleTTL(ttl))
	}
	h.mcp = server.NewStreamableHTTPServer(g.srv, sopts...)
	for _, origin := range o.AllowedOrigins {
		h.origins = append(h.origins, strings.TrimRight(strings.ToLower(origin), "/"))
	}
	return h
}

// HTTPServer is the gateway's streamable HTTP handler (see
// Gateway.HTTPHandler).
type HTTPServer struct {
	g       *Gateway
	o       HTTPOptions
	origins []string
	mcp     *server.StreamableHTTPServer
	cancels cancels
}

// ServeHTTP checks the request and hands it to mcp-go.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != h.o.Path {
		http.NotFound(w, r)
		return
	}
	if h.o.Token != "" && !bearerOK(r, h.o.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpfleet"`)
		http.Error(w, "mcpfleet: a bearer token is required", http.StatusUnauthorized)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(origin) {
		http.Error(w, "mcpfleet: origin "+origin+" is not allowed", http.StatusForbidden)
		return
	}
	f := &front{Context: r.Context()}
	p := &f.p
	p.set(r, h.o.Token != "")
	cl := h.g.sessions.client(p.client)
	msg := &f.msg
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		body, ok = h.readBody(w, r)
		if !ok {
			return
		}
		msg.parse(r, body)
	} else {
		msg.modern = mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	}
	if r.Method != http.MethodDelete { // ending a session costs nothing
		if err := cl.allow(); err != nil {
			h.refuse(w, msg.ID, err)
			return
		}
	}
	var ctx context.Context = f // r's context with p
	sid := r.Header.Get(server.HeaderKeySessionID)
	switch {
	case msg.modern:
		switch {
		case msg.Method == string(mcp.MethodNotificationCancelled):
			// Never to mcp-go, which would cancel any client's request of
			// that id (see cancels).
			if len(msg.Params.RequestID) > 0 && !h.cancels.cancel(p, msg.Params.RequestID) {
				h.g.log.Debug("mcpfleet: gateway: dropped a cancellation that names no request of its sender",
					"client", p.client, "request", string(msg.Params.RequestID))
			}
			w.WriteHeader(http.StatusAccepted)
			return
		case r.Method == http.MethodPost && h.isExtTaskRequest(msg, body):
			h.serveExtTask(w, r.WithContext(ctx), body) // the fleet's tasks, in the extension's form (tasks.go)
			return
		case msg.Method != "" && len(msg.ID) > 0:
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer h.cancels.add(p, msg.ID, cancel)()
		}
	case r.Method == http.MethodPost && msg.Method == string(mcp.MethodInitialize):
		res, err := h.g.sessions.reserve(cl)
		if err != nil {
			h.refuse(w, msg.ID, err)
			return
		}
		defer h.g.sessions.unreserve(res) // unless the session took it
		ctx = context.WithValue(ctx, reservationKey{}, res)
	case sid != "":
		s := h.g.sessions.owned(sid, h)
		if s == nil {
			if r.Method == http.MethodGet { // mcp-go would make a session of any id
				http.Error(w, "mcpfleet: unknown session", http.StatusNotFound)
				return
			}
			break // mcp-go answers 404
		}
		s.lastUsed.Store(time.Now().UnixNano())
		s.active.Add(1)
		defer s.active.Add(-1)
		if r.Method == http.MethodPost && isTaskRequest(msg) {
			h.serveTask(w, r.WithContext(ctx), body) // the fleet's tasks, under their servers' names (tasks.go)
			return
		}
	case r.Method == http.MethodGet:
		// mcp-go would open a session of its own for it.
		http.Error(w, "mcpfleet: a GET stream needs the Mcp-Session-Id of an initialized session", http.StatusBadRequest)
		return
	}
	w, ctx = h.countNotes(f, w, r, ctx)
	r = r.WithContext(ctx)
	f.ids = idManager{h, r}
	h.mcp.ServeHTTP(w, r)
}

// front is what the HTTP front makes of one request, in one allocation:
// the request's context with its peer (what context.WithValue(ctx,
// peerKey{}, p) would be), its message, the writer that counts the
// notifications of its session, and its idManager.
type front struct {
	context.Context
	p   peer
	msg message
	nw  noteWriter
	ids idManager
}

// Value returns the peer for peerKey, and asks the parent for any other
// key (the context package's own keys too: a child's cancellation links
// to the parent's as through a WithValue).
func (f *front) Value(key any) any {
	if _, ok := key.(peerKey); ok {
		return &f.p
	}
	return f.Context.Value(key)
}

// codeOverLimit is the JSON-RPC error code of a request refused by a
// limit: one of the codes JSON-RPC leaves to servers.
const codeOverLimit = -32000

// refuse answers a request over a limit: 429, Retry-After, and a JSON-RPC
// error with the request's id that says which limit.
func (h *HTTPServer) refuse(w http.ResponseWriter, id json.RawMessage, err error) {
	retry := time.Second
	var le *limitError
	if errors.As(err, &le) && le.retry > 0 {
		retry = le.retry
	}
	h.g.log.Debug("mcpfleet: gateway: refused a request", "err", err, "retry_after", retry)
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string                  `json:"jsonrpc"`
		ID      json.RawMessage         `json:"id"`
		Error   mcp.JSONRPCErrorDetails `json:"error"`
	}{mcp.JSONRPC_VERSION, id, mcp.JSONRPCErrorDetails{Code: codeOverLimit, Message: err.Error()}})
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retry.Seconds())))))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}

// message is what the HTTP front reads of a JSON-RPC message before
// mcp-go does.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"` // of notifications/cancelled
		Meta      struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
		// Task is set for a task-augmented tools/call (params.task).
		Task taskPresence `json:"task"`
		// Name is a tools/call's tool.
		Name string `json:"name"`
	} `json:"params"`
	// modern: the message is of the 2026-07-28 protocol, which has no
	// session, by mcp-go's rule (the header or the _meta says so).
	modern bool
}

// taskPresence records that a member is there, without reading it.
type taskPresence bool

func (p *taskPresence) UnmarshalJSON(b []byte) error {
	*p = string(b) != "null"
	return nil
}

// parse reads the message of body; what does not parse stays empty, and
// mcp-go says what is wrong with it.
func (m *message) parse(r *http.Request, body []byte) {
	_ = json.Unmarshal(body, m)
	m.modern = mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion)
}

// Shutdown ends every HTTP session (their calls are cancelled) and stops
// the session sweeper.
func (h *HTTPServer) Shutdown(ctx context.Context) error {
	err := h.mcp.Shutdown(ctx)
	for _, s := range h.g.sessions.dropOwned(h) { // those that never had a stream
		h.g.endSession(s)
	}
	return err
}

// retire ends the session of id, which the gateway reclaimed: mcp-go
// forgets it as at a DELETE, and its client is told it is unknown from now
// on.
func (h *HTTPServer) retire(id string) {
	r, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, h.o.Path, nil)
	if err != nil {
		return
	}
	r.Header.Set(server.HeaderKeySessionID, id)
	h.mcp.ServeHTTP(discardWriter{}, r)
}

// discardWriter is the response writer of the gateway's own requests.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// idResolver gives mcp-go the gateway's session ids (see idManager).
type idResolver struct{ h *HTTPServer }

func (x idResolver) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r != nil {
		if f, ok := r.Context().(*front); ok && f.ids.r == r && f.ids.h == x.h {
			return &f.ids // made with the request, not boxed again
		}
	}
	return idManager{x.h, r}
}

// idManager mints, checks and retires the session ids of the requests of
// one HTTPServer; r is the request it was resolved for (nil for mcp-go's
// own sweeps).
type idManager struct {
	h *HTTPServer
	r *http.Request
}

// Generate mints the id of a new session, for an initialize request: the
// session is made at once, in the place its request reserved under the
// caps.
func (m idManager) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := "mcpfleet-" + hex.EncodeToString(b[:])
	ctx := context.Background()
	var res *reservation
	if m.r != nil {
		ctx = m.r.Context()
		res, _ = ctx.Value(reservationKey{}).(*reservation)
	}
	m.h.g.sessions.open(ctx, id, m.h, res)
	return id
}

// Validate reports an id the handler did not mint, or that ended, as
// unknown: mcp-go answers 404, and the client starts a new session.
func (m idManager) Validate(id string) (bool, error) {
	if m.h.g.sessions.owned(id, m.h) == nil {
		return false, errors.New("mcpfleet: gateway: unknown session")
	}
	return false, nil
}

// Terminate ends the session of id (a DELETE, or mcp-go's sweep of idle
// sessions): its calls are cancelled, and its place under the caps freed.
// Nothing of an ended id is kept.
func (m idManager) Terminate(id string) (bool, error) {
	if s := m.h.g.sessions.owned(id, m.h); s != nil && m.h.g.sessions.drop(id) == s {
		m.h.g.endSession(s)
	}
	return false, nil
}

// readBody reads a POST's body up to the limit into memory (r.Body is
// then read from there), and answers one over it with 413 and a JSON-RPC
// error. It returns the body, and whether the request goes on.
func (h *HTTPServer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := h.g.o.maxMessage
	body, err := readUpTo(r.Body, limit, r.ContentLength)
	if err != nil {
		return nil, true // mcp-go reports a broken body
	}
	if limit <= 0 || int64(len(body)) <= limit {
		mb := &memBody{}
		mb.Reset(body)
		r.Body = mb
		return body, true
	}
	// Over: keep reading to measure it and find the id at its end (up
	// to four times the limit; past that the connection is closed).
	size := int64(len(body))
	var tail []byte
	head := body[:min(len(body), keepHead)]
	buf := make([]byte, 32<<10)
	for size < 4*limit {
		n, err := r.Body.Read(buf)
		size += int64(n)
		tail = append(tail, buf[:n]...)
		if len(tail) > 2*keepTail {
			tail = append(tail[:0], tail[len(tail)-keepTail:]...)
		}
		if err != nil {
			break
		}
	}
	if len(tail) == 0 {
		tail = body[max(0, len(body)-keepTail):]
	}
	h.g.log.Warn("mcpfleet: gateway: refused a message over the size limit", "size", size, "limit", limit)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write(tooLargeResponse(frame.MessageID(head, tail), size, limit))
	return nil, false
}

// readUpTo reads r to its end, or to limit+1 bytes (limit <= 0: no
// limit), as io.ReadAll of an io.LimitReader does, without their
// wrapper and their growing buffer: size, the Content-Length when the
// request has one (else -1), sizes the buffer at once, up to
// preallocMax (a length that no data backs yet earns no more than that).
func readUpTo(r io.Reader, limit, size int64) ([]byte, error) {
	n := int64(512)
	if size >= 0 {
		n = min(size+1, preallocMax) // +1: room for the read that sees the end
	}
	if limit > 0 {
		n = min(n, limit+1)
	}
	buf := make([]byte, 0, n)
	for {
		if limit > 0 && int64(len(buf)) > limit {
			return buf, nil
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):cap(buf)]
		if limit > 0 && int64(len(buf)+len(room)) > limit+1 {
			room = room[:limit+1-int64(len(buf))]
		}
		m, err := r.Read(room)
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// preallocMax bounds the buffer readUpTo makes from a Content-Length.
const preallocMax = 64 << 10

// memBody is a request body read into memory, as mcp-go reads it again:
// io.NopCloser of a bytes.Reader, in one allocation less.
type memBody struct{ bytes.Reader }

// Close does nothing: the body is in memory.
func (*memBody) Close() error { return nil }

// bearerOK reports whether r carries token as its bearer token.
func bearerOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// originAllowed reports whether a browser page of origin may use the
// gateway: a local one, or one allowed by name.
func (h *HTTPServer) originAllowed(origin string) bool {
	if slices.Contains(h.origins, strings.TrimRight(strings.ToLower(origin), "/")) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return netguard.IsLoopback(u.Hostname())
}

// ErrInsecureBind is the error of a listen address other than a loopback
// one without a token or client certificates (see CheckBind).
var ErrInsecureBind = errors.New("mcpfleet: gateway: serving beyond loopback needs authentication")

// ErrTokenInClear is the error of a listen address other than a loopback
// one where clients would send their bearer token over plain HTTP (see
// CheckBind).
var ErrTokenInClear = errors.New("mcpfleet: gateway: a bearer token beyond loopback needs TLS")

// BindSecurity is what protects a listener of the gateway (see CheckBind).
type BindSecurity struct {
	Token       bool // every request must carry the bearer token
	TLS         bool // HTTPS
	ClientCerts bool // TLS with client certificates required
	// InsecureHTTP accepts a bearer token over plain HTTP beyond loopback
	// (a network the host trusts, or TLS ended in front of the gateway).
	InsecureHTTP bool
}

// CheckBind checks that the gateway may listen on addr, protected by s: a
// loopback address always; another only when authenticated (a bearer
// token, or TLS with client certificates), since anyone who can reach it
// could otherwise call every tool of the fleet, and a bearer token only
// over TLS (or with s.InsecureHTTP), since anyone on the path could
// otherwise read it and call every tool with it.
func CheckBind(addr string, s BindSecurity) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host != "" && netguard.IsLoopback(host) {
		return nil
	}
	where := host
	if where == "" {
		where = "every interface"
	}
	switch {
	case s.ClientCerts:
		return nil
	case !s.Token:
		return fmt.Errorf("%w: %s is reachable from other machines: require a bearer token or client certificates, or bind 127.0.0.1",
			ErrInsecureBind, where)
	case !s.TLS && !s.InsecureHTTP:
		return fmt.Errorf("%w: %s is reachable from other machines, and the token would cross the network in clear: serve HTTPS, or bind 127.0.0.1",
			ErrTokenInClear, where)
	}
	return nil
}
