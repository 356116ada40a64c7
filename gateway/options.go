package gateway

import (
	"log/slog"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
)

// Defaults of the gateway's options.
const (
	// DefaultClientMaxInFlight is how many requests that go to a server
	// (tools/call, prompts/get, resources/read) one downstream client may
	// have in flight at once, all its sessions together; more are refused
	// with a JSON-RPC error. A client is who the limits hold to: the token
	// or client certificate it showed over HTTP, else its address; over
	// stdio, the one client there is.
	DefaultClientMaxInFlight = 64
	// DefaultClientRequestRate is how many requests a second one
	// downstream client may send, all its sessions together, in bursts of
	// twice as many; more are refused (over HTTP with 429 and Retry-After).
	DefaultClientRequestRate = 200
	// DefaultSessionMaxInFlight is DefaultClientMaxInFlight.
	//
	// Deprecated: the limit holds per client; use DefaultClientMaxInFlight.
	DefaultSessionMaxInFlight = DefaultClientMaxInFlight
	// DefaultSessionRequestRate is DefaultClientRequestRate.
	//
	// Deprecated: the limit holds per client; use DefaultClientRequestRate.
	DefaultSessionRequestRate = DefaultClientRequestRate
	// DefaultMaxSessions is how many sessions the gateway holds at once,
	// all clients together: MCP sessions over HTTP, and the 2026-07-28
	// clients it tells apart (see WithSessionCaps).
	DefaultMaxSessions = 1024
	// DefaultMaxClientSessions is how many sessions one client may hold at
	// once (see WithSessionCaps).
	DefaultMaxClientSessions = 64
	// DefaultSessionOpenRate is how many MCP sessions a second one client
	// may open over HTTP, in bursts of ten times as many (see
	// WithSessionCaps).
	DefaultSessionOpenRate = 2
	// DefaultSessionReclaimAfter is how long an MCP session must have been
	// idle (no request, no stream open, nothing in flight) before the
	// gateway may end it to make room for a new one at a cap.
	DefaultSessionReclaimAfter = time.Minute
	// DefaultInputTimeout is how long a call whose server asked the
	// downstream client something (sampling, elicitation, roots) on the
	// 2026-07-28 protocol waits for the client to send the answer back
	// before the call is cancelled: a person may be answering it.
	DefaultInputTimeout = 10 * time.Minute
	// DefaultName is the name the gateway gives clients in its server
	// info.
	DefaultName = "mcpfleet"
)

// Option configures a Gateway.
type Option func(*options)

type options struct {
	name, version     string
	logger            *slog.Logger
	toolSearch        bool
	maxInFlight       int
	requestRate       float64
	maxSessions       int
	maxClientSessions int
	sessionOpenRate   float64
	maxMessage        int64
	inputTimeout      time.Duration
	forwarder         *Forwarder
	instructions      string
	startupWait       time.Duration
	bareNames         bool
	dropStale         bool
	observer          Observer
	member            memberOptions // a Team's, for one identity's gateway
}

// memberOptions make a Gateway one identity's of a Team.
type memberOptions struct {
	id     string
	access func(server, tool string) Decision
	// authorize, if set, is told of each authorization URL the gateway
	// sent a person to (see needsAuthorization).
	authorize func(server, authURL string)
	// restricted reports whether a policy is in force (access then
	// decides); nil: whenever access is set.
	restricted func() bool
}

func defaultOptions() options {
	return options{
		name:              DefaultName,
		version:           "dev",
		logger:            slog.New(slog.DiscardHandler),
		maxInFlight:       DefaultClientMaxInFlight,
		requestRate:       DefaultClientRequestRate,
		maxSessions:       DefaultMaxSessions,
		maxClientSessions: DefaultMaxClientSessions,
		sessionOpenRate:   DefaultSessionOpenRate,
		maxMessage:        client.DefaultMaxMessageBytes,
		inputTimeout:      DefaultInputTimeout,
		observer:          NopObserver{},
	}
}

// WithLogger sets the logger. Defaults to discarding everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithServerInfo sets the name and version the gateway gives clients.
// Defaults to DefaultName and "dev".
func WithServerInfo(name, version string) Option {
	return func(o *options) {
		if name != "" {
			o.name = name
		}
		if version != "" {
			o.version = version
		}
	}
}

// WithInstructions sets the instructions the gateway gives clients at
// initialization. Defaults to none.
func WithInstructions(s string) Option {
	return func(o *options) { o.instructions = s }
}

// WithToolSearch serves two meta-tools, search_tools and call_tool (see
// llm.MetaTools), instead of the fleet's whole catalog: for hosts that cap
// how many tools they take, or whose model chooses worse among hundreds.
// Prompts and resources are served as without it. Defaults to off.
func WithToolSearch() Option {
	return func(o *options) { o.toolSearch = true }
}

// WithClientLimits bounds what one downstream client may cost the fleet,
// all its sessions together: maxInFlight requests that go to a server at
// once, and rate requests a second (bursts of twice as many). Over either,
// the request is refused (a JSON-RPC error naming the limit; over HTTP, a
// request over the rate gets 429 with Retry-After) and the client goes on.
// Zero keeps a default (DefaultClientMaxInFlight, DefaultClientRequestRate),
// a negative value turns the limit off.
func WithClientLimits(maxInFlight int, rate float64) Option {
	return func(o *options) {
		if maxInFlight != 0 {
			o.maxInFlight = maxInFlight
		}
		if rate != 0 {
			o.requestRate = rate
		}
	}
}

// WithSessionLimits is WithClientLimits.
//
// Deprecated: the limits hold per client, a client's sessions together;
// use WithClientLimits.
func WithSessionLimits(maxInFlight int, rate float64) Option {
	return WithClientLimits(maxInFlight, rate)
}

// WithSessionCaps bounds the sessions the gateway holds: max of them at
// once, perClient of one client's, and openRate new MCP sessions a second
// of one client's over HTTP (bursts of ten times as many). At a cap, a
// session idle for DefaultSessionReclaimAfter (a 2026-07-28 client's: with
// nothing in flight) is ended to make room, least recently used first; its
// client is told the session is unknown and opens another. Without one, a
// new session is refused with 429 and Retry-After. Zero keeps a default
// (DefaultMaxSessions, DefaultMaxClientSessions, DefaultSessionOpenRate),
// a negative value turns the cap off.
func WithSessionCaps(max, perClient int, openRate float64) Option {
	return func(o *options) {
		if max != 0 {
			o.maxSessions = max
		}
		if perClient != 0 {
			o.maxClientSessions = perClient
		}
		if openRate != 0 {
			o.sessionOpenRate = openRate
		}
	}
}

// WithMaxMessageBytes bounds one message a downstream client sends, as
// client.Limits.MaxMessageBytes bounds one a server sends: a longer one is
// discarded while it is read and answered with a JSON-RPC error, and the
// session goes on. Zero keeps the default, client.DefaultMaxMessageBytes;
// a negative value turns the limit off.
func WithMaxMessageBytes(n int64) Option {
	return func(o *options) {
		if n != 0 {
			o.maxMessage = n
		}
	}
}

// WithInputTimeout sets how long a call waits for a 2026-07-28 client to
// come back with the answers its server asked for (see
// DefaultInputTimeout). Zero keeps the default.
func WithInputTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.inputTimeout = d
		}
	}
}

// WithForwarder forwards the sampling, elicitation and roots requests of
// the fleet's servers to the downstream clients whose calls caused them,
// through f, whose ClientOptions the Manager was made with. Without it the
// Manager answers them itself, or, without handlers of its own, servers
// are told the host has none of those capabilities.
func WithForwarder(f *Forwarder) Option {
	return func(o *options) { o.forwarder = f }
}

// WithStartupWait makes the gateway's first answers to tools/list,
// prompts/list and resources/list (and to a tools/call of a tool it does
// not serve yet) wait, for at most d, until no server is connecting for
// the first time: many hosts list a server's tools once, when they start
// it, and would otherwise see an empty fleet. Servers that
// are lazy or disabled are not waited for, and neither is one that keeps
// failing (it is no longer connecting for the first time once it failed:
// Reconnecting or PermanentlyFailed). Defaults to 0, no wait.
func WithStartupWait(d time.Duration) Option {
	return func(o *options) { o.startupWait = d }
}

// WithBareToolNames serves tools under their own names ("read_file") when
// the fleet has one server, which then needs no prefix; with more, under
// their qualified names as ever ("files__read_file"). The separator of
// qualified names is the Manager's (client.WithSeparator; see
// CheckSeparator). Defaults to qualified names always.
func WithBareToolNames() Option {
	return func(o *options) { o.bareNames = true }
}

// WithDropStaleTools leaves out the tools of a server that is down
// (Reconnecting, NeedsAuthorization, PermanentlyFailed) until it is back.
// Without it they stay listed from the last good catalog, each marked in
// its _meta under MetaStale with the server's state, and a call of one
// fails with the error that says why (the server is reconnecting, needs
// the user to authorize, has failed): a client keeps a stable list while
// one upstream is down.
func WithDropStaleTools() Option {
	return func(o *options) { o.dropStale = true }
}

// WithObserver tells o what the served side does: sessions, calls and
// their outcomes, policy decisions, the servers' connection states (see
// Observer). Defaults to none.
func WithObserver(obs Observer) Option {
	return func(o *options) {
		if obs != nil {
			o.observer = obs
		}
	}
}
