package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/time/rate"
)

// The gateway counts what downstream clients may cost it at two levels.
//
// A client (clientState) is who the limits hold to: over HTTP the bearer
// token or client certificate it showed, else its network address (see
// peer); over stdio the one client there is. Its requests a second and its
// requests in flight are limited, and so are the sessions it may hold and
// how fast it may open them: a client that opens sessions gains nothing
// by it.
//
// A session is one conversation of a client's: an MCP session where the
// transport has one (stdio; streamable HTTP before 2026-07-28), else, for
// the sessionless 2026-07-28 protocol over HTTP, the requests of one client
// program at one address (its client identity, address and the clientInfo
// its requests carry). Calls, multi round-trip state and log
// subscriptions belong to a session; a session's end cancels its calls.
// 2026-07-28 requests are not told apart by connection, since the rounds
// of one call may come on different connections; the clientInfo a request
// names is the client's own word, so it separates programs, not
// principals (the requestState a round must echo is what binds a round to
// its call).
//
// Sessions are capped overall and per client. At a cap, a session that
// has been idle for a while (nothing in flight, no stream open, no request
// for reclaimAfter; a 2026-07-28 session with nothing in flight at once)
// is reclaimed, least recently used first: its client is told the session
// is unknown (404) and starts another, as a client whose session expired
// does. Without one, the new session is refused (429, Retry-After).

// clientState is one downstream client as the limits count it.
type clientState struct {
	// Set at creation, read-only.
	key   string
	lim   *rate.Limiter // requests a second; nil: no limit
	opens *rate.Limiter // sessions opened a second; nil: no limit
	max   int64         // requests to servers at once; <= 0: no limit

	inflight atomic.Int64
	lastUsed atomic.Int64 // unix nanoseconds

	sessions int // guarded by sessionTable.mu: the sessions it holds
}

// limitError is the error of a request over one of its client's limits.
type limitError struct {
	msg   string
	retry time.Duration // when to try again, if the limit says
}

func (e *limitError) Error() string { return e.msg }

// acquire counts a request to a server against the client's limit.
func (c *clientState) acquire() error {
	c.lastUsed.Store(time.Now().UnixNano())
	n := c.inflight.Add(1)
	if c.max > 0 && n > c.max {
		c.inflight.Add(-1)
		return &limitError{msg: fmt.Sprintf("mcpfleet: gateway: over the client's limit of %d requests in flight; wait for one to finish", c.max)}
	}
	return nil
}

func (c *clientState) release() {
	c.inflight.Add(-1)
	c.lastUsed.Store(time.Now().UnixNano())
}

// allow takes a request from the client's rate, or returns the error that
// refuses it.
func (c *clientState) allow() error {
	c.lastUsed.Store(time.Now().UnixNano())
	if c.lim == nil {
		return nil
	}
	if d, ok := take(c.lim); !ok {
		return &limitError{msg: fmt.Sprintf("mcpfleet: gateway: over the client's request rate (%g a second, bursts of %d); retry later",
			float64(c.lim.Limit()), c.lim.Burst()), retry: d}
	}
	return nil
}

// take takes a token of l now if it has one; else it returns how long until
// it will.
func take(l *rate.Limiter) (time.Duration, bool) {
	now := time.Now()
	r := l.ReserveN(now, 1)
	if !r.OK() {
		return time.Hour, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// session is one conversation of a client's (see above).
type session struct {
	// Set at creation, read-only.
	key   sessionKey
	id    string // the MCP session id; empty for a 2026-07-28 one
	cl    *clientState
	owner *HTTPServer // the HTTP handler that minted the id; nil otherwise
	notes *notes      // of an MCP session's streams (see notes.go)

	// ended is set when the session ended (dropped, reclaimed, or the
	// gateway closed); the gateway then cancels its calls
	// (callTable.endSession).
	ended atomic.Bool
	// logs is set once the session asked for the servers' log messages
	// (logging/setLevel).
	logs atomic.Bool

	inflight atomic.Int64 // its requests to servers
	active   atomic.Int64 // its HTTP requests being served, streams among them
	lastUsed atomic.Int64 // unix nanoseconds
	opened   time.Time    // set at creation, read-only

	mu sync.Mutex // guards cs
	// cs is the mcp-go session, for the requests the gateway sends it;
	// nil for a 2026-07-28 one.
	cs server.ClientSession

	counted bool // guarded by sessionTable.mu: it holds a place under the caps
}

// acquire counts a request to a server against the session's client's
// limit.
func (s *session) acquire() error {
	s.lastUsed.Store(time.Now().UnixNano())
	if err := s.cl.acquire(); err != nil {
		return err
	}
	s.inflight.Add(1)
	return nil
}

func (s *session) release() {
	s.inflight.Add(-1)
	s.cl.release()
	s.lastUsed.Store(time.Now().UnixNano())
}

// clientSession returns the mcp-go session, if the session has one.
func (s *session) clientSession() server.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs
}

// sessionKey names a session: by its MCP session id, or, for a 2026-07-28
// one, by its client, address and client info. A struct, not a joined
// string, so that finding the session of a request with an id makes no
// string.
type sessionKey struct {
	kind sessionKind
	name string
}

type sessionKind uint8

const (
	byID   sessionKind = iota // an MCP session
	modern                    // 2026-07-28 over HTTP
	local                     // no session and no peer: an in-process transport
)

// sessionTable holds the clients and their sessions.
type sessionTable struct {
	// Set by init, read-only.
	maxInFlight            int64
	rate                   float64
	burst                  int
	maxTotal, maxPerClient int // <= 0: no cap
	openRate               float64
	openBurst              int
	reclaimAfter           time.Duration
	onEnd                  func(*session) // ends a session taken out of the table
	obs                    Observer       // told when a session starts and ends
	who                    string         // the identity served, for obs

	mu      sync.Mutex
	byKey   map[sessionKey]*session
	clients map[string]*clientState
	pruned  time.Time // when clients were last walked for idle ones
	total   int       // the sessions and reservations under the caps
	modern  int       // the 2026-07-28 sessions
}

// Bounds of the tables of things that have no end of their own: the
// 2026-07-28 sessions and the clients are forgotten, once there are more
// than these, when unused for keepIdle.
const (
	modernKeep = 256
	clientKeep = 1024
	keepIdle   = time.Minute
	// clientMax bounds the clients the table tells apart; more share the
	// limits of overflowClient.
	clientMax      = 4 * clientKeep
	overflowClient = "overflow"
)

func (t *sessionTable) init(o options) {
	t.byKey = map[sessionKey]*session{}
	t.clients = map[string]*clientState{}
	t.maxInFlight = int64(o.maxInFlight)
	t.rate = o.requestRate
	t.burst = max(1, int(2*o.requestRate))
	t.maxTotal, t.maxPerClient = o.maxSessions, o.maxClientSessions
	t.openRate = o.sessionOpenRate
	t.openBurst = max(1, int(math.Ceil(10*o.sessionOpenRate)))
	t.reclaimAfter = DefaultSessionReclaimAfter
}

// addLocked puts a new session in the table and tells the Observer.
func (t *sessionTable) addLocked(s *session) {
	now := time.Now()
	s.opened = now
	s.lastUsed.Store(now.UnixNano())
	t.byKey[s.key] = s
	t.obs.SessionStarted(SessionInfo{Identity: t.who, Modern: s.key.kind == modern})
}

// endedLocked marks s ended, and tells the Observer the first time.
func (t *sessionTable) endedLocked(s *session) {
	if !s.ended.Swap(true) {
		t.obs.SessionEnded(SessionInfo{Identity: t.who, Modern: s.key.kind == modern, Duration: time.Since(s.opened)})
	}
}

// clientLocked returns the client of key, making it at its first request.
func (t *sessionTable) clientLocked(key string) *clientState {
	if c := t.clients[key]; c != nil {
		return c
	}
	if len(t.clients) >= clientKeep {
		// Forget the idle ones, at most once a second: a walk of the
		// table per new client would let many clients cost a lot.
		if now := time.Now(); now.Sub(t.pruned) >= time.Second {
			t.pruned = now
			cutoff := now.Add(-keepIdle).UnixNano()
			for k, c := range t.clients {
				if c.sessions == 0 && c.inflight.Load() == 0 && c.lastUsed.Load() < cutoff {
					delete(t.clients, k)
				}
			}
		}
		if len(t.clients) >= clientMax {
			// Many clients at once, none idle: those beyond share one set
			// of limits rather than grow the table without end.
			key = overflowClient
			if c := t.clients[key]; c != nil {
				return c
			}
		}
	}
	c := &clientState{key: key, max: t.maxInFlight}
	if t.rate > 0 {
		c.lim = rate.NewLimiter(rate.Limit(t.rate), t.burst)
	}
	if t.openRate > 0 {
		c.opens = rate.NewLimiter(rate.Limit(t.openRate), t.openBurst)
	}
	c.lastUsed.Store(time.Now().UnixNano())
	t.clients[key] = c
	return c
}

// client returns the client of key.
func (t *sessionTable) client(key string) *clientState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clientLocked(key)
}

// clientKeyOf returns the key of the client of the request in ctx.
func clientKeyOf(ctx context.Context) string {
	if p := peerFrom(ctx); p != nil {
		return p.client
	}
	return "local"
}

// errSessionGone is the error of a request of an MCP session that ended
// while it was handled.
var errSessionGone = errors.New("mcpfleet: gateway: the session ended")

// of returns the session of the downstream request in ctx, making it at
// its first request if it has none (a 2026-07-28 one; an MCP session of a
// transport other than the gateway's HTTP front, such as stdio).
func (t *sessionTable) of(ctx context.Context) (*session, error) {
	cs := server.ClientSessionFromContext(ctx)
	if cs != nil && cs.SessionID() != "" {
		id := cs.SessionID()
		t.mu.Lock()
		s := t.byKey[sessionKey{byID, id}]
		t.mu.Unlock()
		if s != nil {
			return s, nil
		}
		if peerFrom(ctx) != nil {
			// The HTTP front's sessions are made when their id is (see
			// open); one that is gone has ended.
			return nil, errSessionGone
		}
		return t.get(ctx, id, cs), nil
	}
	p := peerFrom(ctx)
	if p == nil {
		return t.getLocal(), nil
	}
	name, version := "", ""
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.ClientInfo != nil {
		name, version = pi.ClientInfo.Name, pi.ClientInfo.Version
	}
	key := sessionKey{modern, p.client + "\x00" + p.addr + "\x00" + name + "\x00" + version}
	t.mu.Lock()
	if s := t.byKey[key]; s != nil {
		t.mu.Unlock()
		return s, nil
	}
	cl := t.clientLocked(p.client)
	var victims []*session
	if t.modern >= modernKeep {
		victims = t.pruneModernLocked()
	}
	more, err := t.roomLocked(cl)
	if err != nil {
		t.mu.Unlock()
		t.endVictims(victims)
		return nil, err
	}
	victims = append(victims, more...)
	s := &session{key: key, cl: cl, notes: newNotes(), counted: true}
	t.addLocked(s)
	t.modern++
	t.mu.Unlock()
	t.endVictims(victims)
	return s, nil
}

// get returns the MCP session of id, making it uncounted if it is new (a
// transport's own, such as stdio's).
func (t *sessionTable) get(ctx context.Context, id string, cs server.ClientSession) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byKey[sessionKey{byID, id}]; s != nil {
		if cs != nil {
			s.mu.Lock()
			if s.cs == nil {
				s.cs = cs
			}
			s.mu.Unlock()
		}
		return s
	}
	s := &session{key: sessionKey{byID, id}, id: id, cl: t.clientLocked(clientKeyOf(ctx)), cs: cs, notes: newNotes()}
	t.addLocked(s)
	return s
}

// getLocal returns the session of requests that have neither a session
// nor a peer.
func (t *sessionTable) getLocal() *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := sessionKey{local, ""}
	if s := t.byKey[key]; s != nil {
		return s
	}
	s := &session{key: key, cl: t.clientLocked("local"), notes: newNotes()}
	t.addLocked(s)
	return s
}

// reservation is a place under the caps taken for a session that an
// initialize request is about to open; open takes it over.
type reservation struct {
	cl   *clientState
	used atomic.Bool
}

// reservationKey carries the *reservation of an initialize request.
type reservationKey struct{}

// reserve takes a place under the caps for a new MCP session of cl's, or
// returns the error that refuses it: over the rate of opening sessions, or
// at a cap with no session to reclaim.
func (t *sessionTable) reserve(cl *clientState) (*reservation, error) {
	t.mu.Lock()
	if cl.opens != nil {
		if d, ok := take(cl.opens); !ok {
			t.mu.Unlock()
			return nil, &limitError{msg: fmt.Sprintf("mcpfleet: gateway: over the client's rate of opening sessions (%g a second, bursts of %d); retry later",
				float64(cl.opens.Limit()), cl.opens.Burst()), retry: d}
		}
	}
	victims, err := t.roomLocked(cl)
	t.mu.Unlock()
	t.endVictims(victims)
	if err != nil {
		return nil, err
	}
	return &reservation{cl: cl}, nil
}

// unreserve gives back a place open did not take.
func (t *sessionTable) unreserve(r *reservation) {
	if r == nil || r.used.Swap(true) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r.cl.sessions--
	t.total--
}

// roomLocked takes a place under the caps for a new session of cl's (the
// counts go up), reclaiming sessions to make room; the caller ends the
// victims it returns once it unlocked.
func (t *sessionTable) roomLocked(cl *clientState) ([]*session, error) {
	var victims []*session
	if t.maxPerClient > 0 && cl.sessions >= t.maxPerClient {
		v := t.idleLocked(cl)
		if v == nil {
			return nil, &limitError{msg: fmt.Sprintf("mcpfleet: gateway: the client holds %d sessions, its cap, and none is idle; end one (DELETE) or retry later",
				cl.sessions), retry: t.reclaimAfter}
		}
		t.forgetLocked(v)
		victims = append(victims, v)
	}
	if t.maxTotal > 0 && t.total >= t.maxTotal {
		v := t.idleLocked(nil)
		if v == nil {
			return victims, &limitError{msg: fmt.Sprintf("mcpfleet: gateway: %d sessions are open, the gateway's cap, and none is idle; retry later",
				t.total), retry: t.reclaimAfter}
		}
		t.forgetLocked(v)
		victims = append(victims, v)
	}
	cl.sessions++
	t.total++
	return victims, nil
}

// idleLocked returns the least recently used session that may be
// reclaimed, of cl's (nil: of anyone's).
func (t *sessionTable) idleLocked(cl *clientState) *session {
	now := time.Now().UnixNano()
	cutoff := now - t.reclaimAfter.Nanoseconds()
	var best *session
	for _, s := range t.byKey {
		if !s.counted || (cl != nil && s.cl != cl) || s.inflight.Load() > 0 || s.active.Load() > 0 {
			continue
		}
		used := s.lastUsed.Load()
		if s.key.kind == byID && used > cutoff {
			continue
		}
		if best == nil || used < best.lastUsed.Load() {
			best = s
		}
	}
	return best
}

// forgetLocked takes s out of the table and its place under the caps.
func (t *sessionTable) forgetLocked(s *session) {
	if t.byKey[s.key] != s {
		return
	}
	delete(t.byKey, s.key)
	if s.key.kind == modern {
		t.modern--
	}
	if s.counted {
		s.counted = false
		s.cl.sessions--
		t.total--
	}
	t.endedLocked(s)
}

// pruneModernLocked forgets the 2026-07-28 sessions idle for keepIdle.
func (t *sessionTable) pruneModernLocked() []*session {
	cutoff := time.Now().Add(-keepIdle).UnixNano()
	var out []*session
	for _, s := range t.byKey {
		if s.key.kind == modern && s.inflight.Load() == 0 && s.lastUsed.Load() < cutoff {
			t.forgetLocked(s)
			out = append(out, s)
		}
	}
	return out
}

// endVictims ends sessions taken out of the table: an MCP session's id is
// retired with the handler that minted it (its client gets 404 from now
// on, and mcp-go forgets it).
func (t *sessionTable) endVictims(victims []*session) {
	for _, s := range victims {
		if s.owner != nil {
			s.owner.retire(s.id)
		}
		if t.onEnd != nil {
			t.onEnd(s)
		}
	}
}

// open makes the MCP session of id, minted by h for the initialize request
// that reserved r, under r's place.
func (t *sessionTable) open(ctx context.Context, id string, h *HTTPServer, r *reservation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cl *clientState
	if r != nil && !r.used.Swap(true) {
		cl = r.cl
	} else {
		// No reservation (mcp-go minted an id for something else): counted
		// all the same, over the caps if it must.
		cl = t.clientLocked(clientKeyOf(ctx))
		cl.sessions++
		t.total++
	}
	s := &session{key: sessionKey{byID, id}, id: id, cl: cl, owner: h, notes: newNotes(), counted: true}
	t.addLocked(s)
}

// owned returns the session of id if h minted it.
func (t *sessionTable) owned(id string, h *HTTPServer) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byKey[sessionKey{byID, id}]; s != nil && s.owner == h {
		return s
	}
	return nil
}

// lookup returns the session of the MCP session id, if there is one.
func (t *sessionTable) lookup(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byKey[sessionKey{byID, id}]
}

// drop forgets the session of id and marks it ended; the caller cancels
// its calls (callTable.endSession).
func (t *sessionTable) drop(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byKey[sessionKey{byID, id}]
	if s != nil {
		t.forgetLocked(s)
	}
	return s
}

// dropOwned forgets the sessions of h's ids, at h's shutdown; the caller
// ends them.
func (t *sessionTable) dropOwned(h *HTTPServer) []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*session
	for _, s := range t.byKey {
		if s.owner == h {
			t.forgetLocked(s)
			out = append(out, s)
		}
	}
	return out
}

// sizes returns how many sessions the table holds, and how many of them
// count under the caps.
func (t *sessionTable) sizes() (sessions, counted int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey), t.total
}

// registered returns the sessions that have an MCP session.
func (t *sessionTable) registered() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*session
	for _, s := range t.byKey {
		if s.key.kind == byID && s.clientSession() != nil {
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
		t.endedLocked(s)
	}
}

// sessionRegistered is mcp-go's hook for a new MCP session (stdio, or an
// initialize over streamable HTTP, whose session the gateway made when
// mcp-go minted its id).
func (g *Gateway) sessionRegistered(ctx context.Context, cs server.ClientSession) {
	g.sessions.get(ctx, cs.SessionID(), cs)
	g.log.Debug("mcpfleet: gateway: session started", "session", cs.SessionID())
}

// sessionUnregistered is mcp-go's hook for a session that ended: stdin
// closed, a DELETE, an idle session swept. Its subscriptions are dropped;
// a session of another transport than the HTTP front ends here, and its
// calls are cancelled (their servers are sent notifications/cancelled). A
// session of the HTTP front ends when its id is retired (a DELETE, the idle
// sweep, reclaimed), which comes first; mcp-go may also forget the session
// object of an id that lives on (a stream that made it ended), and the
// session then goes on without it.
func (g *Gateway) sessionUnregistered(ctx context.Context, cs server.ClientSession) {
	if s := g.sessions.lookup(cs.SessionID()); s != nil {
		if s.owner != nil {
			s.mu.Lock()
			if s.cs == cs {
				s.cs = nil
			}
			s.mu.Unlock()
		} else if s := g.sessions.drop(cs.SessionID()); s != nil {
			g.calls.endSession(s)
			g.log.Debug("mcpfleet: gateway: session ended", "session", cs.SessionID(), "in_flight", s.inflight.Load())
		}
	}
	g.subs.drop(cs)
}

// endSession ends s, taken out of the table: its calls are cancelled and its
// subscriptions dropped.
func (g *Gateway) endSession(s *session) {
	g.calls.endSession(s)
	if cs := s.clientSession(); cs != nil {
		g.subs.drop(cs)
	}
	g.log.Debug("mcpfleet: gateway: session ended", "session", s.id, "in_flight", s.inflight.Load())
}

// admit is mcp-go's request-initialization hook: every request of a
// downstream client passes it before it is handled. It holds a client of
// a transport other than the HTTP front (which does it itself, to answer
// 429) to its request rate, holds the first lists (and calls of tools not
// yet served) until the fleet started (see WithStartupWait), and serves
// resources/subscribe and resources/unsubscribe, which mcp-go only
// acknowledges: the gateway subscribes the server once for all the
// sessions that ask (an error here is the client's JSON-RPC error).
func (g *Gateway) admit(ctx context.Context, _ any, message any) error {
	if peerFrom(ctx) == nil {
		if err := g.sessions.client(clientKeyOf(ctx)).allow(); err != nil {
			return err
		}
	}
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	select {
	case <-g.started:
		if !bytes.Contains(raw, []byte(`"resources/`)) && (!g.restricting() ||
			!bytes.Contains(raw, []byte(`"tools/call"`)) && !bytes.Contains(raw, []byte(`"prompts/get"`))) {
			return nil // the rest is for subscriptions, the policy and the startup only
		}
	default:
	}
	var m struct {
		Method mcp.MCPMethod `json:"method"`
		Params struct {
			URI  string `json:"uri"`
			Name string `json:"name"`
			Meta struct {
				ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil // mcp-go says what is wrong with it
	}
	if g.restricting() {
		if err := g.admitDenied(ctx, m.Method, m.Params.Name, m.Params.URI); err != nil {
			return err
		}
	}
	// A host that knows the tools from before calls without listing: a
	// call of a tool not (yet) served waits for the startup too.
	if listMethods[m.Method] || m.Method == mcp.MethodToolsCall && g.srv.GetTool(m.Params.Name) == nil {
		g.awaitStarted(ctx)
	}
	if mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion) {
		// The 2026-07-28 protocol has no resources/subscribe (a listen
		// stream's filter replaces it), and mcp-go refuses it: subscribing
		// first would leave a subscription of a request's session, which
		// never ends.
		return nil
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
