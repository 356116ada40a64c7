package client

import (
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// ServerStatus is a plain snapshot of one server, safe to keep and print.
type ServerStatus struct {
	Name       string
	State      lifecycle.State
	Generation uint64    // the current or last runtime generation; 0 if never connected
	Attempt    int       // failed attempts in the current reconnect budget
	NextRetry  time.Time // when the next dial is due; zero if none is scheduled
	LastError  error     // the last dial failure or loss; nil after a successful connect
	// CatalogError is the last failed catalog refresh of this generation;
	// the last good catalog stayed published.
	CatalogError error
	ConnectedAt  time.Time // when the current runtime connected; zero if none
	InFlight     int64     // calls in flight on the current runtime
	Tools        int       // tools in the published catalog
	// FilteredTools counts the tools the server offers that its ToolFilter
	// keeps out of the published catalog.
	FilteredTools int
	// Cached reports that the published catalog came from the catalog
	// cache: no runtime of this server has connected since it was added.
	Cached     bool
	ServerInfo mcp.Implementation
	// Protocol is the MCP protocol version the current runtime speaks.
	Protocol string
	// Stderr holds the last lines a stdio server wrote to stderr: of the
	// current runtime, or, when none is connected, of the last runtime or
	// failed dial.
	Stderr []string
	// Quarantined lists this server's tools left out of the View because
	// another server's tool holds the same qualified name.
	Quarantined []snapshot.Quarantine
	// DroppedNotifications counts the notifications the server sent over
	// its Limits.NotificationRate, dropped since it was added.
	DroppedNotifications uint64
	// RefusedServerRequests counts the requests the server made of the host
	// over its Limits.MaxServerRequests or ServerRequestRate, refused since
	// it was added.
	RefusedServerRequests uint64
	// AuthorizationURL is where the user authorizes the client while the
	// server is NeedsAuthorization.
	AuthorizationURL string
	// IdleTimeout is the server's ServerSpec.IdleTimeout: how long it may
	// go unused before its runtime is closed; zero means never.
	IdleTimeout time.Duration
	// IdleSince is when the server's runtime was closed for going unused
	// for IdleTimeout, while it stays Disconnected for that reason (the
	// next request starts it); zero otherwise.
	IdleSince time.Time
}

func (s *slot) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(nil)
}

// quarantinesByServer groups the View's quarantined tools by server, for
// the statuses of a whole fleet: one walk of them, not one per server.
func quarantinesByServer(v *catalog.View) map[string][]snapshot.Quarantine {
	qs := v.Quarantined()
	if len(qs) == 0 {
		return nil
	}
	out := make(map[string][]snapshot.Quarantine)
	for _, q := range qs {
		out[q.Server] = append(out[q.Server], q)
	}
	return out
}

// statusLocked returns the slot's status. quarantined, if not nil, is
// quarantinesByServer of the current View; nil means look them up.
func (s *slot) statusLocked(quarantined map[string][]snapshot.Quarantine) ServerStatus {
	st := ServerStatus{
		Name:         s.name,
		State:        s.state,
		Generation:   s.gen,
		Attempt:      s.budget.Attempts(),
		NextRetry:    s.nextRetry,
		LastError:    s.lastErr,
		CatalogError: s.catalogErr,
	}
	if r := s.rare.Load(); r != nil {
		st.DroppedNotifications = r.dropped.total.Load()
		for i := range r.refused {
			st.RefusedServerRequests += r.refused[i].total.Load()
		}
	}
	if s.state == lifecycle.NeedsAuthorization {
		st.AuthorizationURL = s.authURL()
	}
	st.IdleTimeout = s.config().spec.IdleTimeout
	st.IdleSince = s.idleSinceLocked()
	if l := s.lease; l != nil {
		st.ConnectedAt = l.connectedAt
		st.InFlight = l.inflight.Load()
		st.Protocol = l.protocol
		st.Stderr = stderrOf(l.conn)
	} else {
		st.Stderr = s.lastStderr
	}
	v := s.m.pub.View()
	if c, ok := v.Catalog(s.name); ok {
		st.Tools = len(c.Tools)
		st.FilteredTools = s.filteredCountLocked()
		st.Cached = s.cached
		st.ServerInfo = c.ServerInfo
	}
	if quarantined == nil {
		quarantined = quarantinesByServer(v)
	}
	st.Quarantined = slices.Clone(quarantined[s.name])
	return st
}
