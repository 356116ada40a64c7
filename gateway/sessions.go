package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/time/rate"
)

// session is one downstream client as the gateway counts it: an MCP
// session where the transport has one (stdio, streamable HTTP before
// 2026-07-28), else, for the stateless 2026-07-28 protocol over HTTP, the
// client's network address. Limits, calls and their cancellation belong to
// it.
type session struct {
	// Set at creation, read-only.
	key sessionKey
	id  string // the MCP session id; empty for an address
	lim *rate.Limiter
	max int64 // requests to servers at once; <= 0: no limit

	// ended is set when the session ended (dropped, or the gateway
	// closed); the gateway then cancels its calls (callTable.endSession).
	ended atomic.Bool

	inflight atomic.Int64
	lastUsed atomic.Int64 // unix nanoseconds
	notes    *notes       // of an MCP session's streams (see notes.go)

	mu sync.Mutex // guards cs
	// cs is the mcp-go session, for the requests the gateway sends it;
	// nil for an address.
	cs server.ClientSession
}

// limitError is the error of a request over one of its session's limits.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// acquire counts a request to a server against the session's limit.
func (s *session) acquire() error {
	s.lastUsed.Store(time.Now().UnixNano())
	n := s.inflight.Add(1)
	if s.max > 0 && n > s.max {
		s.inflight.Add(-1)
		return &limitError{fmt.Sprintf("mcpfleet: gateway: over the session's limit of %d requests in flight; wait for one to finish", s.max)}
	}
	return nil
}

func (s *session) release() {
	s.inflight.Add(-1)
	s.lastUsed.Store(time.Now().UnixNano())
}

// clientSession returns the mcp-go session, if the session has one.
func (s *session) clientSession() server.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs
}

// sessionTable holds the sessions by key.
type sessionTable struct {
	max   int64
	rate  float64
	burst int

	mu    sync.Mutex
	byKey map[sessionKey]*session
	// addressed counts the sessions keyed by address, which have no end
	// of their own: those unused for addressIdle are forgotten when more
	// than addressKeep are known.
	addressed int
}

// Bounds of the sessions keyed by a client's address.
const (
	addressKeep = 256
	addressIdle = time.Minute
)

func (t *sessionTable) init(o options) {
	t.byKey = map[sessionKey]*session{}
	t.max = int64(o.maxInFlight)
	t.rate = o.requestRate
	t.burst = max(1, int(2*o.requestRate))
}

// sessionKey names a session: by its MCP session id (byID), or by the
// client's address. A struct, not a joined string, so that finding the
// session of a request makes no string.
type sessionKey struct {
	byID bool
	name string
}

// remoteKey carries the client's address in the context of an HTTP request.
type remoteKey struct{}

// of returns the session of the downstream request in ctx, making it at
// its first request.
func (t *sessionTable) of(ctx context.Context) *session {
	cs := server.ClientSessionFromContext(ctx)
	if cs != nil && cs.SessionID() != "" {
		return t.get(sessionKey{true, cs.SessionID()}, cs.SessionID(), cs)
	}
	addr, _ := ctx.Value(remoteKey{}).(string)
	if addr == "" {
		addr = "local"
	}
	return t.get(sessionKey{false, addr}, "", nil)
}

func (t *sessionTable) get(key sessionKey, id string, cs server.ClientSession) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byKey[key]; s != nil {
		if cs != nil {
			s.mu.Lock()
			if s.cs == nil {
				s.cs = cs
			}
			s.mu.Unlock()
		}
		return s
	}
	if id == "" {
		t.pruneLocked()
		t.addressed++
	}
	s := &session{key: key, id: id, max: t.max, cs: cs, notes: newNotes()}
	if t.rate > 0 {
		s.lim = rate.NewLimiter(rate.Limit(t.rate), t.burst)
	}
	s.lastUsed.Store(time.Now().UnixNano())
	t.byKey[key] = s
	return s
}

// lookup returns the session of the MCP session id, if there is one.
func (t *sessionTable) lookup(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[sessionKey{true, id}]
}

// pruneLocked forgets the sessions keyed by address that have been idle
// for a while, once there are many.
func (t *sessionTable) pruneLocked() {
	if t.addressed < addressKeep {
		return
	}
	cutoff := time.Now().Add(-addressIdle).UnixNano()
	for k, s := range t.byKey {
		if s.id == "" && s.inflight.Load() == 0 && s.lastUsed.Load() < cutoff {
			delete(t.byKey, k)
			t.addressed--
		}
	}
}

// drop forgets the session of id and marks it ended; the caller cancels
// its calls (callTable.endSession).
func (t *sessionTable) drop(id string) *session {
	t.mu.Lock()
	s := t.byKey[sessionKey{true, id}]
	delete(t.byKey, sessionKey{true, id})
	t.mu.Unlock()
	if s != nil {
		s.ended.Store(true)
	}
	return s
}

// registered returns the sessions that have an MCP session.
func (t *sessionTable) registered() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*session
	for _, s := range t.byKey {
		if s.id != "" {
			out = append(out, s)
		}
	}
	return out
}

// endAll ends every session, at Close.
func (t *sessionTable) endAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.byKey {
		s.ended.Store(true)
	}
}

// sessionRegistered is mcp-go's hook for a new MCP session (stdio, or an
// initialize over streamable HTTP).
func (g *Gateway) sessionRegistered(ctx context.Context, cs server.ClientSession) {
	g.sessions.get(sessionKey{true, cs.SessionID()}, cs.SessionID(), cs)
	g.log.Debug("mcpfleet: gateway: session started", "session", cs.SessionID())
}

// sessionUnregistered is mcp-go's hook for a session that ended: stdin
// closed, a DELETE, an idle session swept. Its calls are cancelled (their
// servers are sent notifications/cancelled) and its subscriptions
// dropped.
func (g *Gateway) sessionUnregistered(ctx context.Context, cs server.ClientSession) {
	if s := g.sessions.drop(cs.SessionID()); s != nil {
		g.calls.endSession(s)
		g.log.Debug("mcpfleet: gateway: session ended", "session", cs.SessionID(), "in_flight", s.inflight.Load())
	}
	g.subs.drop(cs)
}

// admit is mcp-go's request-initialization hook: every request of a
// downstream client passes it before it is handled. It holds the session
// to its request rate, holds the first lists (and calls of tools not yet
// served) until the fleet started (see WithStartupWait), and serves
// resources/subscribe and
// resources/unsubscribe, which mcp-go only acknowledges: the gateway
// subscribes the server once for all the sessions that ask (an error here
// is the client's JSON-RPC error).
func (g *Gateway) admit(ctx context.Context, _ any, message any) error {
	s := g.sessions.of(ctx)
	s.lastUsed.Store(time.Now().UnixNano())
	if s.lim != nil && !s.lim.Allow() {
		return &limitError{fmt.Sprintf("mcpfleet: gateway: over the session's request rate (%g a second, bursts of %d); retry later",
			float64(s.lim.Limit()), s.lim.Burst())}
	}
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	select {
	case <-g.started:
		if !bytes.Contains(raw, []byte(`"resources/`)) {
			return nil // the rest is for subscriptions and the startup only
		}
	default:
	}
	var m struct {
		Method mcp.MCPMethod `json:"method"`
		Params struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil // mcp-go says what is wrong with it
	}
	// A host that knows the tools from before calls without listing: a
	// call of a tool not (yet) served waits for the startup too.
	if listMethods[m.Method] || m.Method == mcp.MethodToolsCall && g.srv.GetTool(m.Params.Name) == nil {
		g.awaitStarted(ctx)
	}
	switch m.Method {
	case mcp.MethodResourcesSubscribe:
		if m.Params.URI == "" {
			return nil
		}
		return g.subs.subscribe(ctx, server.ClientSessionFromContext(ctx), m.Params.URI)
	case mcp.MethodResourcesUnsubscribe:
		if m.Params.URI == "" {
			return nil
		}
		return g.subs.unsubscribe(ctx, server.ClientSessionFromContext(ctx), m.Params.URI)
	}
	return nil
}
