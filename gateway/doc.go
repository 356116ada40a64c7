// Package gateway serves a client.Manager's fleet of MCP servers as one MCP
// server, so that any MCP host (Claude Desktop, VS Code, Cursor, an agent in
// another language) gets what the Manager keeps: servers that restart
// without the host noticing, last-good catalogs, classified errors, one
// place for OAuth, filters and limits, and tool search for hosts that cap
// their tools.
//
// The API of this package may still change before v1: a gateway over a
// Manager (New, ServeStdio, HTTPHandler, Close) and the names it serves
// tools, prompts and resources under are meant to stay; the options
// (limits, session caps, the bind checks) may still be regrouped or
// renamed. Every such change is in CHANGELOG.md.
//
// The gateway is mcp-go's server (package server) in front of the Manager:
//
//   - tools are served under their qualified names ("files__read_file"),
//     prompts under qualified names too, resources under their own URIs
//     with their server named; the catalog follows the Manager's View, and
//     every change reaches every downstream session as list_changed. A
//     read goes to the server that lists the URI, else to the one whose
//     template matches it: a template that overlaps another server's is
//     quarantined (QuarantinedTemplates), so no read is left to chance;
//   - calls go through the Manager, so a call to a server that is
//     reconnecting waits for it, a read-only call lost in a crash is
//     replayed, and an error becomes an isError result in words a model
//     can act on (llm.Explain), or a JSON-RPC error where the method has
//     no result to carry it (prompts/get, resources/read);
//   - progress and cancellation go both ways between a downstream request
//     and the upstream call it made; log messages of the servers reach the
//     sessions, and a session's logging/setLevel reaches the servers;
//   - with a Forwarder, a server's sampling, elicitation and roots requests
//     go to the downstream client whose call caused them (see Forwarder for
//     how a request is attributed, and when it is refused);
//   - each downstream session has its own resource subscriptions (a
//     server is subscribed once, updates go only to the sessions that
//     asked) and log messages (only if it asked), and its calls end with
//     it; the limits (requests in flight, requests a second, sessions held
//     and opened) hold per client, so a new session gains a client
//     nothing (see WithClientLimits, WithSessionCaps).
//
// ServeStdio serves one client on a pair of streams; HTTPHandler serves
// streamable HTTP (both protocol generations) behind the checks the MCP
// specification asks of a local server (Origin, Host) and a bearer token
// (CheckBind says where one is needed, and TLS with it). Both refuse a
// message over the size limit with a JSON-RPC error and go on.
//
// A Team serves a team from one endpoint: an OAuth 2.1 protected resource
// (RFC 9728 metadata, 401 with the challenge, JWT access tokens validated
// by a JWTValidator against their issuer's keys, or API keys), where each
// identity gets its own Gateway over its own fleet from a fleet.Pool, under
// the Policy its ID and groups select. A server that is down keeps its
// tools listed from the last good catalog, marked stale (MetaStale), unless
// WithDropStaleTools. An Observer is told what the served side does
// (github.com/mcpfleet/mcpfleet/otel records it as metrics).
//
// The command line that runs all of this is cmd/mcpfleet: following the
// config file, and the admin endpoint its other commands use, are its own
// (internal), since a host that embeds a gateway has its Manager at hand.
package gateway
