package client

import (
	"sync/atomic"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Stats is a snapshot of what the Manager has done, per server and in
// total, in the manner of database/sql's DBStats: counters since the
// server was added, and gauges as of the snapshot.
type Stats struct {
	Servers []ServerStats // sorted by name
	Total   ServerStats   // the sums; its Name is empty and its state gauges zero
}

// ServerStats are one server's counters and gauges.
type ServerStats struct {
	Name string

	// Calls counts the requests that ended, by Outcome (index a Calls
	// with an Outcome: s.Calls[client.OutcomeOK]).
	Calls    [numOutcomes]uint64
	InFlight int64 // requests on the current runtime now

	Dials        uint64 // connection attempts that ended
	DialFailures uint64 // of those, the failed ones
	Reconnects   uint64 // runtimes lost and replaced (or being replaced)
	// Retries counts requests sent again transparently: resent after
	// provably not reaching a runtime, or replayed after a loss.
	Retries uint64
	// Resumed counts answer streams that broke off and were resumed, so
	// that their requests ended with their answers (Streamable HTTP up to
	// protocol 2025-11-25, with a server that keeps an event store).
	Resumed uint64
	// Reopened counts the times the HTTP notification stream broke off and
	// was reopened in its session, the runtime going on (a network fault,
	// a proxy's idle timeout), and the times it opened only after the
	// runtime had listed without it (mcphttp.WithStreamOpenTimeout): both
	// refetch the lists. Rejoined counts the runtimes that went on
	// in the session of the runtime before them, which the server still
	// held after it could not be reached for a while: nothing the host
	// asked of the session was sent again.
	Reopened, Rejoined uint64

	State   lifecycle.State
	InState time.Duration // how long it has been in State
	// LastRecovery and WorstRecovery: from losing a runtime to the next
	// one connecting.
	LastRecovery, WorstRecovery time.Duration
}

// Requests returns how many requests ended, whatever their outcome.
func (s ServerStats) Requests() uint64 {
	var n uint64
	for _, c := range s.Calls {
		n += c
	}
	return n
}

// slotStats are a slot's counters, written with atomics on the call path
// so that counting costs no lock and no allocation.
type slotStats struct {
	calls               [numOutcomes]atomic.Uint64
	dials, dialFailures atomic.Uint64
	reconnects, retries atomic.Uint64
	resumptions         atomic.Uint64
	reopens, rejoins    atomic.Uint64
	lastRecovery, worst atomic.Int64 // nanoseconds
	lostAt              atomic.Int64 // unix nanoseconds when the last runtime was lost; 0 if connected
}

// recovered records the end of a recovery begun at lostAt.
func (st *slotStats) recovered(now time.Time) {
	lost := st.lostAt.Swap(0)
	if lost == 0 {
		return
	}
	d := now.UnixNano() - lost
	st.lastRecovery.Store(d)
	for {
		w := st.worst.Load()
		if d <= w || st.worst.CompareAndSwap(w, d) {
			return
		}
	}
}

// resumed counts one answer stream resumed (transport.Resumer).
func (st *slotStats) resumed() { st.resumptions.Add(1) }

// Stats returns a snapshot of every server's counters and gauges.
func (m *Manager) Stats() Stats {
	slots, _ := m.slotList()

	now := m.opts.clock.Now()
	out := Stats{Servers: make([]ServerStats, 0, len(slots))}
	t := &out.Total
	for _, s := range slots {
		ss := s.stats(now)
		for i, c := range ss.Calls {
			t.Calls[i] += c
		}
		t.InFlight += ss.InFlight
		t.Dials += ss.Dials
		t.DialFailures += ss.DialFailures
		t.Reconnects += ss.Reconnects
		t.Retries += ss.Retries
		t.Resumed += ss.Resumed
		t.Reopened += ss.Reopened
		t.Rejoined += ss.Rejoined
		t.LastRecovery = max(t.LastRecovery, ss.LastRecovery)
		t.WorstRecovery = max(t.WorstRecovery, ss.WorstRecovery)
		out.Servers = append(out.Servers, ss)
	}
	return out
}

// stats returns the slot's counters and gauges as of now.
func (s *slot) stats(now time.Time) ServerStats {
	ss := ServerStats{
		Name:          s.name,
		Dials:         s.st.dials.Load(),
		DialFailures:  s.st.dialFailures.Load(),
		Reconnects:    s.st.reconnects.Load(),
		Retries:       s.st.retries.Load(),
		Resumed:       s.st.resumptions.Load(),
		Reopened:      s.st.reopens.Load(),
		Rejoined:      s.st.rejoins.Load(),
		LastRecovery:  time.Duration(s.st.lastRecovery.Load()),
		WorstRecovery: time.Duration(s.st.worst.Load()),
	}
	for i := range ss.Calls {
		ss.Calls[i] = s.st.calls[i].Load()
	}
	s.mu.Lock()
	ss.State, ss.InState = s.state, now.Sub(s.stateSince)
	if s.lease != nil {
		ss.InFlight = s.lease.inflight.Load()
	}
	s.mu.Unlock()
	return ss
}
