package client

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// Sessions. A server of Streamable HTTP up to protocol 2025-11-25 keeps
// what the host asked of it in its session: tasks, resource
// subscriptions, the logging level, pending requests. The session lasts
// until the server answers 404 to its id, or the client sends DELETE; a
// broken connection is not its end. So:
//
//   - the Conn reopens a broken notification stream in the session, and
//     the slot stays Connected meanwhile (transport/http);
//   - a runtime lost to a fault (its server unreachable, a run of
//     timeouts, a call refused before it went out) is closed without
//     DELETE, and the next dial rejoins its session when the server still
//     knows it (keepSessionLocked, dialOnce): the slot shows Reconnecting
//     for as long as the server is away, and calls then go on in the
//     same session, with nothing sent again;
//   - DELETE goes out only when the host ends the session (Remove,
//     Disable, Close, Reconnect, a new spec, idle shutdown), and not even
//     then while a task is bound to the session (lease.close), so that a
//     later runtime, or a later Manager, can still poll it.

// keepSessionLocked is what the loss of l to a fault does to its session:
// the session stays open on the server (no DELETE), and, unless the
// server said it is gone, the next dial rejoins it. s.mu is held.
func (s *slot) keepSessionLocked(l *lease, cause error) {
	k, ok := l.conn.(transport.SessionKeeper)
	if !ok {
		return
	}
	k.KeepSession()
	id := k.SessionID()
	if id == "" || l.catalog == nil || sessionGone(cause) || sessionGone(connErr(l.conn)) {
		s.rejoin = nil
		return
	}
	s.rejoin = &mcphttp.Rejoin{SessionID: id, Protocol: l.protocol, Result: &mcp.InitializeResult{
		ProtocolVersion: l.protocol,
		Capabilities:    l.catalog.Capabilities,
		ServerInfo:      l.catalog.ServerInfo,
		Instructions:    l.catalog.Instructions,
	}}
}

// sessionGone reports whether err says the server no longer knows the
// session: HTTP 404 for it, or the 400 forms transport/http turns into it.
func sessionGone(err error) bool {
	return err != nil && (errors.Is(err, mcptransport.ErrSessionTerminated) || errors.Is(err, transport.ErrSessionGone))
}

// rejoined reports whether c went on in the session of a runtime before
// it: the server still holds the host's subscriptions and logging level.
func rejoined(c transport.Conn) bool {
	k, ok := c.(transport.SessionKeeper)
	return ok && k.Rejoined()
}

// sessionOf returns c's session id; "" if it has none.
func sessionOf(c transport.Conn) string {
	if k, ok := c.(transport.SessionKeeper); ok {
		return k.SessionID()
	}
	return ""
}

// keepBoundSession keeps l's session open on the server when a task is
// still bound to it: the host ends the session, not the task.
func (s *slot) keepBoundSession(l *lease) {
	k, ok := l.conn.(transport.SessionKeeper)
	if !ok {
		return
	}
	if id := k.SessionID(); id != "" && s.m.tasks.boundTo(s.name, id) {
		k.KeepSession()
	}
}

// onStreamReopen runs when l's Conn reopened its notification stream in
// the session after a break: what the server sent meanwhile may be lost,
// so the lists are fetched again and the server's tasks polled at once.
// It runs on the transport's goroutine and does no I/O.
func (l *lease) onStreamReopen() {
	if l.ctx.Err() != nil {
		return
	}
	l.slot.st.reopens.Add(1)
	l.dirty.Or(dirtyTools | dirtyPrompts | dirtyResources)
	l.wantRefresh()
	l.slot.m.tasks.pollServerSoon(l.slot.name)
}

// sessionIdentity names where a server's sessions live, for a task's
// record: a digest of its HTTP endpoint (the URL may hold a secret), or ""
// for a server that has no sessions. A stored session id is sent only to
// the endpoint that gave it.
func sessionIdentity(spec ServerSpec) string {
	if spec.HTTP == nil || spec.HTTP.Kind == mcphttp.SSE {
		return ""
	}
	h := sha256.Sum256([]byte("session\x00" + spec.HTTP.URL))
	return hex.EncodeToString(h[:16])
}
