//go:build linux

package soak

import (
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
)

// The session rule (issue 36). A Streamable HTTP server (up to protocol
// 2025-11-25) keeps what the host asked of it in a session, which lasts
// until the server answers 404 to its id or the client sends DELETE. The
// Manager must keep it across anything short of that: a cut of every
// connection (the stream is reopened in the session), a hang (the runtime
// lost to timeouts rejoins it), a partition (likewise). So every session
// a server creates after its first must replace one that ended: the server
// forgot it (a restart, or a 404 for it), or the host ended it (a DELETE,
// a toggle, a Reconnect). One that follows a cut, a partition or a hang
// alone, while the server still held the one before, breaks the rule. (A
// server's first session may follow a fault: mcp-go falls back to the
// older handshake when server/discover fails, which a server of 2026-07-28
// then answers with a session.) The proxy in front of each server counts the sessions it
// created (an answer carrying an Mcp-Session-Id to a request that carried
// none). A legacy SSE session is its event stream, so a cut ends it by
// nature: those are counted and never break the rule.

// sessionRow is one server's account of its sessions.
type sessionRow struct {
	s                       *member
	cuts, restarts, host    int // faults: cuts and partitions, restarts, toggles and Reconnects
	created                 int // sessions the server created, the first included
	afterRestart, afterHost int // of those after the first: replacing one the server forgot, one the host ended
	afterCut                int // replacing one the server still held (SSE: ended by a cut, by nature)
	reopened, rejoined      uint64
}

// sessionRows accounts for the sessions of every server behind an HTTP
// proxy, and reports each one that broke the rule.
func (r *run) sessionRows(report bool) []sessionRow {
	var rows []sessionRow
	for _, s := range r.fleet {
		if s.proxy == nil {
			continue
		}
		row := sessionRow{s: s,
			cuts:     r.log.countOf(s.name, faultCut) + r.log.countOf(s.name, faultPartition),
			restarts: r.log.countOf(s.name, faultRestart),
			host:     r.log.countOf(s.name, faultToggle) + r.log.countOf(s.name, faultReconnect),
		}
		for _, st := range r.stats.Servers {
			if st.Name == s.name {
				row.reopened, row.rejoined = st.Reopened, st.Rejoined
			}
		}
		created := s.proxy.Created()
		gone := s.proxy.GoneAt()
		deleted := s.proxy.Deleted()
		row.created = len(created)
		for i, sess := range created {
			if i == 0 {
				continue // replaces nothing
			}
			prev := created[i-1]
			f := r.log.latestBefore(s.name, sess.At)
			switch {
			case goneBetween(gone, prev.At, sess.At) || r.faultBetween(s.name, faultRestart, prev.At, sess.At):
				row.afterRestart++
			case deletedBefore(deleted, prev.ID, sess.At) ||
				f != nil && (f.kind == faultToggle || f.kind == faultReconnect):
				row.afterHost++
			default:
				row.afterCut++
				if report && !sess.SSE {
					r.led.fail(failure{rule: ruleSession, server: s, fault: f, faultNote: "before", at: sess.At,
						detail: fmt.Sprintf("session %d of %d (%s) created at %s; %s\n      its last events:\n%s",
							i+1, len(created), sess.ID, r.clock.rel(sess.At), r.statusLine(s.name), r.tr.history(s.name)),
						errText: "new session"})
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// checkSessions reports every session that broke the rule.
func (r *run) checkSessions() { r.sessionRows(true) }

// faultBetween reports whether a fault of kind on server started in
// (from, to].
func (r *run) faultBetween(server string, kind faultKind, from, to time.Time) bool {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	for _, f := range r.log.byServer[server] {
		if f.kind == kind && f.start.After(from) && !f.start.After(to) {
			return true
		}
	}
	return false
}

// deletedBefore reports whether a DELETE of session id went out by t.
func deletedBefore(deleted []faultinject.Session, id string, t time.Time) bool {
	for _, d := range deleted {
		if d.ID == id && !d.At.After(t) {
			return true
		}
	}
	return false
}

// goneBetween reports whether the server answered 404 to a session id in
// (from, to].
func goneBetween(gone []time.Time, from, to time.Time) bool {
	for _, g := range gone {
		if g.After(from) && !g.After(to) {
			return true
		}
	}
	return false
}

// sessionSummary writes the sessions table.
func (r *run) sessionSummary(p func(string, ...any)) {
	rows := r.sessionRows(false)
	if len(rows) == 0 {
		return
	}
	p("Sessions (Streamable HTTP up to 2025-11-25 keeps the host's state in them): what each server behind a fault proxy created, " +
		"and what ended the session each one after the first replaced: the server forgot it (a restart, a 404) or the host ended it (a DELETE, a toggle, a Reconnect); " +
		"none may replace a session the server still held after a cut, a partition or a hang alone. A legacy SSE session is its event stream: a cut ends it by nature. " +
		"Servers on 2026-07-28 have no sessions. `reopened`: the notification stream reopened in its session (`Stats.Reopened`); " +
		"`rejoined`: a runtime that went on in the session of the one before it (`Stats.Rejoined`).")
	p("")
	p("| server | cuts + partitions | restarts | toggles + reconnects | sessions created | replaced one forgotten (restart, 404) | replaced one the host ended | replaced one still held (after a cut, partition or hang) | reopened | rejoined |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var t sessionRow
	for _, row := range rows {
		bare := fmt.Sprint(row.afterCut)
		if row.s.kind == kindMCPGoSSE {
			bare += " (SSE)"
		} else if row.afterCut > 0 {
			bare = "**" + bare + "**"
		}
		p("| %s | %d | %d | %d | %d | %d | %d | %s | %d | %d |", row.s.name, row.cuts, row.restarts, row.host,
			row.created, row.afterRestart, row.afterHost, bare, row.reopened, row.rejoined)
		t.cuts += row.cuts
		t.restarts += row.restarts
		t.host += row.host
		t.created += row.created
		t.afterRestart += row.afterRestart
		t.afterHost += row.afterHost
		if row.s.kind != kindMCPGoSSE {
			t.afterCut += row.afterCut
		}
		t.reopened += row.reopened
		t.rejoined += row.rejoined
	}
	p("| **all** | %d | %d | %d | %d | %d | %d | %d (not SSE) | %d | %d |", t.cuts, t.restarts, t.host, t.created,
		t.afterRestart, t.afterHost, t.afterCut, t.reopened, t.rejoined)
	p("")
}
