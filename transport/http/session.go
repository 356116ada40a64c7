package http

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/redact"
	seam "github.com/mcpfleet/mcpfleet/transport"
)

// Sessions (Streamable HTTP up to protocol 2025-11-25). A server keeps
// what a client asked of it in the client's session (Mcp-Session-Id):
// its tasks, resource subscriptions, logging level, pending requests. The
// session lasts until the server answers 404 to a request that carries
// its id, or the client sends DELETE; a broken TCP connection is not its
// end. So a Conn:
//
//   - reopens its notification stream in the session when it breaks
//     (resume.go's stream mode), and fails only when the server forgot the
//     session (ErrStaleSession) or cannot be reached (ErrStreamLost);
//   - sends DELETE on Close only when the host ends the session: never
//     after it failed, never after KeepSession;
//   - can go on in the session of an earlier Conn (WithRejoin), when the
//     server still knows it: a Conn that lost its server for a while is
//     replaced by one that rejoins, and the server keeps everything;
//   - sends a request in another session than its own when its context
//     says so (transport.WithSession): the poll of a task an earlier Conn
//     started, on a server that binds tasks to sessions.

// Rejoin is the session of an earlier connection to the same server, for
// WithRejoin: its id, the protocol version it was negotiated on, and the
// server's answer to the initialize that began it, which the MCP client
// on the new Conn is given again in place of a new handshake.
type Rejoin struct {
	SessionID string
	Protocol  string
	Result    *mcp.InitializeResult
}

// WithRejoin makes the Conn go on in the session r, if the server still
// knows it. A server that refuses connections (nothing listens on its
// port) has no session to rejoin: a process that answers there later is a
// new one, so Dial and the handshake then fail with an error that matches
// transport.ErrSessionGone, and the caller should start a new session. The Conn intercepts the MCP client's initialize: it first asks
// the server a ping in r's session; if the server answers it, the client
// is given r.Result as initialize's answer (with r's session id), the
// initialized notification is not sent again, and Rejoined reports true:
// the server still holds everything of the session. If the server answers
// 404 (or 400 about the session), or answers otherwise than with a result,
// the session is gone and the initialize goes out as it is, starting a
// new session. If the ping cannot be sent, or a proxy answers it with 502,
// 503 or 504, the initialize fails, and nothing is decided.
//
// Dial with it also WithLegacyProtocol: sessions exist only on the older
// protocol. It has no effect on SSE, whose session ends with its stream.
func WithRejoin(r Rejoin) Option {
	return func(o *options) {
		if r.SessionID != "" && r.Result != nil {
			o.rejoin = &r
		}
	}
}

// Where a Conn made WithRejoin is with its rejoin.
const (
	rejoinUndecided int32 = iota // the initialize has not gone out yet
	rejoinJoined                 // the session lives: the initialized notification is to be dropped
	rejoinDone                   // joined and settled, or declined
)

// SessionID returns the session's id: "" on 2026-07-28, for legacy SSE,
// before the handshake, and for a server that gives none
// (transport.SessionKeeper).
func (c *Conn) SessionID() string {
	if t, ok := c.tr.(*streamableTransport); ok {
		return t.GetSessionId()
	}
	return ""
}

// Rejoined reports whether the Conn went on in the session of WithRejoin
// rather than start one (transport.SessionKeeper).
func (c *Conn) Rejoined() bool { return c.joined.Load() }

// KeepSession makes Close leave the session open on the server: no DELETE
// is sent (transport.SessionKeeper). A Conn that failed never sends one.
func (c *Conn) KeepSession() { c.keep.Store(true) }

// rejoinStep answers req, a POST of a Conn made WithRejoin, itself when
// the rejoin says so; ok is false when req is to go out as usual.
func (rt *roundTripper) rejoinStep(req *nethttp.Request) (resp *nethttp.Response, err error, ok bool) {
	c := rt.c
	state := c.rejoinState.Load()
	if state == rejoinDone {
		return nil, nil, false
	}
	method, id := peekRPC(req)
	switch {
	case state == rejoinUndecided && method == string(mcp.MethodInitialize):
		joined, err := rt.probeSession(req)
		if err != nil {
			return nil, err, true
		}
		if !joined {
			c.rejoinState.Store(rejoinDone)
			c.log.Info("mcpfleet: http: the server no longer knows the session to rejoin; starting a new one")
			return nil, nil, false
		}
		c.rejoinState.Store(rejoinJoined)
		c.joined.Store(true)
		c.log.Debug("mcpfleet: http: rejoined the session of an earlier connection", "protocol", c.opts.rejoin.Protocol)
		return rt.initializeAnswer(req, id)
	case state == rejoinJoined && method == string(mcp.MethodNotificationInitialized):
		// The session was initialized when it began.
		c.rejoinState.Store(rejoinDone)
		return synthetic(req, nethttp.StatusAccepted), nil, true
	}
	return nil, nil, false
}

// rejoinPingID is the JSON-RPC id of the ping that asks whether the
// session to rejoin lives.
const rejoinPingID = "mcpfleet-rejoin"

// probeSession asks the server a ping in the session to rejoin, with
// req's headers (the spec's, the Authorizer's), and reports whether it
// answered it: the session lives. It reports false when the server said
// the session is gone (404, or 400 about the session) or answered the
// ping with an error. An error means the ping could not be sent, or got
// an answer that says nothing of the session (a proxy's 502 while the
// server is away, a 5xx, a refused credential): nothing is decided then,
// and the next Conn asks again.
func (rt *roundTripper) probeSession(req *nethttp.Request) (bool, error) {
	r := rt.c.opts.rejoin
	body := []byte(`{"jsonrpc":"2.0","id":"` + rejoinPingID + `","method":"ping"}`)
	ping, err := nethttp.NewRequestWithContext(req.Context(), nethttp.MethodPost, req.URL.String(), bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	ping.Header = req.Header.Clone()
	ping.Header.Set(transport.HeaderKeySessionID, r.SessionID)
	ping.Header.Set(transport.HeaderKeyProtocolVersion, r.Protocol)
	ping.Header.Set("Content-Type", "application/json")
	ping.Header.Set("Accept", "application/json, text/event-stream")
	ping.Host = req.Host
	resp, err := rt.send(ping)
	if err != nil {
		if connRefused(err) {
			// Nothing listens on the server's port: whatever answers
			// there later is a new process.
			return false, &goneError{err: err}
		}
		return false, err
	}
	defer discard(resp)
	switch resp.StatusCode {
	case nethttp.StatusOK:
		return answeredWithResult(resp)
	case nethttp.StatusBadGateway, nethttp.StatusServiceUnavailable, nethttp.StatusGatewayTimeout:
		// A proxy or load balancer says the server is away: nothing
		// about the session.
		return false, &Error{Op: "rejoin session:", Method: nethttp.MethodPost, URL: redact.URL(rt.c.spec.URL), Status: resp.StatusCode,
			Err: fmt.Errorf("rejoining the session: a ping in it got HTTP %d", resp.StatusCode)}
	}
	// 404, or 400 about the session: gone. Anything else the server
	// itself answered (an error status, an error answer) is no session
	// to go on in; the new initialize shows what is wrong, if anything.
	return false, nil
}

// goneError is the error of a Conn made WithRejoin whose server refused
// connections: it wraps the refusal, and transport.ErrSessionGone, since
// a process that answers there later is a new one.
type goneError struct{ err error }

func (e *goneError) Error() string { return e.err.Error() + "; " + errProcessGone.Error() }

func (e *goneError) Unwrap() []error { return []error{e.err, errProcessGone} }

// answeredWithResult reads resp, a 200 to the rejoin ping, and reports
// whether it carries a JSON-RPC result for it, as JSON or in an event
// stream.
func answeredWithResult(resp *nethttp.Response) (bool, error) {
	body := io.LimitReader(resp.Body, maxErrorBody)
	if !isEventStream(resp.Header.Get("Content-Type")) {
		data, err := io.ReadAll(body)
		if err != nil {
			return false, err
		}
		return isResultFor(data, rejoinPingID), nil
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), maxErrorBody)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		data := bytes.TrimSpace(line[len("data:"):])
		if len(data) > 0 && isResultFor(data, rejoinPingID) {
			return true, nil
		}
	}
	return false, sc.Err()
}

// isResultFor reports whether data is a JSON-RPC response with a result
// to the request of id.
func isResultFor(data []byte, id string) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &msg) != nil || len(msg.Result) == 0 {
		return false
	}
	var got string
	return json.Unmarshal(msg.ID, &got) == nil && got == id
}

// initializeAnswer is the answer to initialize request req (of JSON-RPC
// id id) in the rejoined session: the answer of the handshake that began
// it.
func (rt *roundTripper) initializeAnswer(req *nethttp.Request, id json.RawMessage) (*nethttp.Response, error, bool) {
	r := rt.c.opts.rejoin
	res := *r.Result
	res.ProtocolVersion = r.Protocol
	result, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("rejoin: %w", err), true
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{mcp.JSONRPC_VERSION, id, result})
	if err != nil {
		return nil, fmt.Errorf("rejoin: %w", err), true
	}
	resp := synthetic(req, nethttp.StatusOK)
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set(transport.HeaderKeySessionID, r.SessionID)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil, true
}

// peekRPC returns the method and the id of the JSON-RPC message req
// carries, leaving its body to be read again.
func peekRPC(req *nethttp.Request) (method string, id json.RawMessage) {
	var data []byte
	switch {
	case req.GetBody != nil:
		body, err := req.GetBody()
		if err != nil {
			return "", nil
		}
		data, _ = io.ReadAll(io.LimitReader(body, maxErrorBody))
		body.Close()
	case req.Body != nil && req.Body != nethttp.NoBody:
		var err error
		data, err = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(data))
		if err != nil {
			return "", nil
		}
	}
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &msg) != nil {
		return "", nil
	}
	return msg.Method, msg.ID
}

// foreign reports whether req goes out in a session named by its context
// (transport.WithSession) that is not the Conn's own.
func (rt *roundTripper) foreign(req *nethttp.Request) bool {
	id := seam.SessionOf(req.Context())
	return id != "" && rt.c.spec.Kind == StreamableHTTP && id != rt.c.SessionID()
}

// inSession returns req with its session header set to the session its
// context names, when that is another than the Conn's own.
func (rt *roundTripper) inSession(req *nethttp.Request) *nethttp.Request {
	if !rt.foreign(req) || req.Header.Get(transport.HeaderKeySessionID) == "" {
		return req
	}
	req = req.Clone(req.Context())
	req.Header.Set(transport.HeaderKeySessionID, seam.SessionOf(req.Context()))
	return req
}

// foreignGone returns the error of a request sent in a session of another
// connection that the server answered resp, if the answer says the server
// no longer knows that session (404, or 400 about the session); it then
// consumes resp. Such an answer leaves the Conn's own session alone.
func foreignGone(resp *nethttp.Response) error {
	switch resp.StatusCode {
	case nethttp.StatusNotFound:
	case nethttp.StatusBadRequest:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if !isSessionError(body) {
			return nil
		}
	default:
		return nil
	}
	status := resp.StatusCode
	discard(resp)
	return &sessionGoneError{status: status}
}

// sessionGoneError is the error of a request in another connection's
// session that the server no longer knows.
type sessionGoneError struct{ status int }

func (e *sessionGoneError) Error() string {
	return fmt.Sprintf("%v: the server no longer knows the session of an earlier connection (HTTP %d)", seam.ErrSessionGone, e.status)
}

func (e *sessionGoneError) Is(target error) bool { return target == seam.ErrSessionGone }

// deleteSkipped reports whether the session DELETE must not go out: the
// host keeps the session (KeepSession), or the Conn failed (the server
// forgot the session, or could not be reached, and a later Conn may
// rejoin it).
func (c *Conn) deleteSkipped() bool {
	if c.keep.Load() {
		return true
	}
	err := c.Err()
	return err != nil && !errors.Is(err, ErrClosed)
}
