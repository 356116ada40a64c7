package client

import (
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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
