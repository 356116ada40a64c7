package client

import (
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// Defaults of the Manager's options.
const (
	// DefaultReadyTimeout is how long a call waits for a connecting or
	// reconnecting server before it fails with *UnavailableError.
	DefaultReadyTimeout = 10 * time.Second
	// DefaultDialTimeout bounds one connection attempt: spawn or connect,
	// handshake and catalog fetch.
	DefaultDialTimeout = 30 * time.Second
	// DefaultDrainTimeout is how long Disable and Remove let in-flight
	// calls finish before they close the runtime under them.
	DefaultDrainTimeout = 5 * time.Second
	// DefaultCloseTimeout bounds the close of one runtime.
	DefaultCloseTimeout = 10 * time.Second
	// DefaultMaxConcurrentDials is how many dials (spawns, connects) the
	// whole manager runs at once.
	DefaultMaxConcurrentDials = 8
	// DefaultIdleProbe is how long a connected server may stay quiet before
	// the Manager asks it something to learn whether it is still there.
	DefaultIdleProbe = 15 * time.Second
	// DefaultMaxInFlight is how many calls one server has in flight at once;
	// more wait for a turn, bounded by their context.
	DefaultMaxInFlight = 64
)

// Option configures a Manager.
//
// One rule for every numeric option: a value of 0 (or, where a negative
// value has no documented meaning, anything not positive) keeps the
// default, so that no option value can silently break every dial or call.
type Option func(*options)

// setPositive sets *field to v if v is positive; otherwise the default
// stays.
func setPositive[T time.Duration | int](field *T, v T) {
	if v > 0 {
		*field = v
	}
}

type options struct {
	logger           *slog.Logger
	policy           lifecycle.Policy
	clock            lifecycle.Clock
	readyTimeout     time.Duration
	dialTimeout      time.Duration
	drainTimeout     time.Duration
	closeTimeout     time.Duration
	maxDials         int
	maxInFlight      int
	timeoutThreshold int
	idleProbe        time.Duration // < 0: off
	limits           Limits        // every field set: defaults, or WithLimits
	observer         Observer      // nil: none
	cachePath        string        // WithCatalogCache; empty: no cache
	naming           catalog.Naming
	clientInfo       mcp.Implementation
	stdioOptions     []stdio.Option
	httpOptions      []mcphttp.Option
	tokens           oauth.TokenStore // WithTokenStore
	oauthOptions     []oauth.Option
	// Shared state (shared.go): WithUser, WithSharedState,
	// WithCatalogIdentity (a refresh's lease TTL is an OAuth option:
	// oauth.WithLeaseTTL through WithOAuthOptions).
	user            string
	shared          store.Shared
	catalogIdentity func(server string) string
	stateFile       string // WithStateFile; "" is off
	// The client role (handlers.go): what the host answers servers with.
	sampling     SamplingHandler
	elicitation  ElicitationHandler
	elicitModes  []ElicitationMode
	rootsEnabled bool
	roots        []mcp.Root // the initial roots; SetRoots replaces them
	// dialOverride, set by tests only, replaces the dialer of a spec when
	// it returns non-nil.
	dialOverride func(ServerSpec) Dialer

	// WithInterceptor and WithServerRequestInterceptor (intercept.go):
	// nil, or chains of at least one.
	interceptors       []Interceptor
	serverInterceptors []ServerRequestInterceptor

	// MCP tasks (task.go, taskpoll.go).
	taskStore           store.TaskStore // nil: the default file store
	sharedTasks         bool            // TaskOptions.SharedScope: the shared state's, under taskScope
	taskScope           string
	taskPollInterval    time.Duration
	taskPollConcurrency int
	// taskPolled, set by tests only, is told of every poll of a task as it
	// ends, with no lock held.
	taskPolled func(*Task)
}

func defaultOptions() options {
	return options{
		logger:       slog.New(slog.DiscardHandler),
		clock:        lifecycle.SystemClock{},
		readyTimeout: DefaultReadyTimeout,
		dialTimeout:  DefaultDialTimeout,
		drainTimeout: DefaultDrainTimeout,
		closeTimeout: DefaultCloseTimeout,
		maxDials:     DefaultMaxConcurrentDials,
		maxInFlight:  DefaultMaxInFlight,
		idleProbe:    DefaultIdleProbe,
		limits:       defaultLimits,
		clientInfo:   mcp.Implementation{Name: "mcpfleet", Version: "0.1.0"},

		taskPollInterval:    DefaultTaskPollInterval,
		taskPollConcurrency: DefaultTaskPollConcurrency,
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

// WithPolicy sets the reconnect policy of servers whose spec has none.
// Defaults to the zero lifecycle.Policy, which is lifecycle's defaults.
func WithPolicy(p lifecycle.Policy) Option { return func(o *options) { o.policy = p } }

// WithClock sets the clock of every budget and wait. Tests use it to run
// backoff schedules without waiting. Defaults to the system clock.
func WithClock(c lifecycle.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// Timeouts are the Manager's bounds on its waits. A zero field keeps its
// default (or the value an earlier WithTimeouts set).
type Timeouts struct {
	// Ready is how long a call waits for a server that is not Connected
	// yet. Defaults to DefaultReadyTimeout.
	Ready time.Duration
	// Dial bounds one connection attempt: spawn or connect, handshake and
	// catalog fetch. Defaults to DefaultDialTimeout.
	Dial time.Duration
	// Drain is how long Disable and Remove let in-flight calls finish.
	// Defaults to DefaultDrainTimeout.
	Drain time.Duration
	// Close bounds the close of one runtime. Defaults to
	// DefaultCloseTimeout.
	Close time.Duration
	// IdleProbe is how long a connected server may stay quiet (no call
	// answered, none in flight) before the Manager sends it a request of
	// its own. A server that fails it is treated as lost, one that does
	// not answer in time counts a timeout: so a server that died or hung
	// with no call in flight is Reconnecting before the host's next call,
	// even over HTTP with no notification stream to lose. The probe may
	// take as long as the quiet period (at least a second), or the
	// server's call Timeout if it has one. It is a ping on the older
	// protocol, and server/discover on 2026-07-28 (where mcp-go's Ping
	// sends nothing). Negative turns it off. Defaults to DefaultIdleProbe.
	IdleProbe time.Duration
}

// WithTimeouts sets the Manager's timeouts; see Timeouts.
func WithTimeouts(t Timeouts) Option {
	return func(o *options) {
		setPositive(&o.readyTimeout, t.Ready)
		setPositive(&o.dialTimeout, t.Dial)
		setPositive(&o.drainTimeout, t.Drain)
		setPositive(&o.closeTimeout, t.Close)
		if t.IdleProbe != 0 {
			o.idleProbe = t.IdleProbe
		}
	}
}

// WithMaxConcurrentDials limits concurrent dials across all servers.
// Defaults to DefaultMaxConcurrentDials.
func WithMaxConcurrentDials(n int) Option { return func(o *options) { setPositive(&o.maxDials, n) } }

// WithMaxInFlight sets the default per-server limit on in-flight calls; a
// negative value means no limit, 0 keeps the default. Defaults to
// DefaultMaxInFlight.
func WithMaxInFlight(n int) Option {
	return func(o *options) {
		if n != 0 {
			o.maxInFlight = n
		}
	}
}

// WithTimeoutThreshold sets how many consecutive call timeouts make a
// connection count as dead. Defaults to lifecycle.DefaultTimeoutThreshold.
func WithTimeoutThreshold(n int) Option {
	return func(o *options) { setPositive(&o.timeoutThreshold, n) }
}

// WithSeparator sets the separator of qualified tool names (server + sep +
// tool). Defaults to "__".
func WithSeparator(sep string) Option { return func(o *options) { o.naming.Separator = sep } }

// WithClientInfo sets the name and version the manager gives servers in the
// handshake. Defaults to "mcpfleet".
func WithClientInfo(info mcp.Implementation) Option { return func(o *options) { o.clientInfo = info } }

// WithStdioOptions sets options for every stdio server's child process,
// such as close timeouts or mirroring stderr to a logger. What Limits
// decides (stdio.WithMaxMessageBytes, stdio.WithStderrLogRate) is applied
// after them and wins: set it through WithLimits or the spec's Limits.
func WithStdioOptions(opts ...stdio.Option) Option {
	return func(o *options) { o.stdioOptions = append(o.stdioOptions, opts...) }
}

// WithHTTPOptions sets options for every HTTP server's connection. What
// Limits and the spec decide (mcphttp.WithMaxMessageBytes, the legacy
// protocol after a server refused the newer one, the OAuth authorizer) is
// applied after them and wins.
func WithHTTPOptions(opts ...mcphttp.Option) Option {
	return func(o *options) { o.httpOptions = append(o.httpOptions, opts...) }
}

// WithTokenStore sets where the OAuth tokens of servers with an OAuth spec
// are kept, under each server's name: oauth.NewFileStore(path) keeps them
// across host restarts. Defaults to an oauth.MemoryStore of the Manager's
// own, which keeps them across reconnects and Apply, not restarts.
func WithTokenStore(s oauth.TokenStore) Option {
	return func(o *options) {
		if s != nil {
			o.tokens = s
		}
	}
}

// WithOAuthOptions sets options for every server's oauth.Authorizer, such
// as the HTTP client for the authorization server.
func WithOAuthOptions(opts ...oauth.Option) Option {
	return func(o *options) { o.oauthOptions = append(o.oauthOptions, opts...) }
}

// TaskOptions say where the Manager keeps the tasks it starts (StartTask)
// and how it polls them. A zero field keeps its default (or the value an
// earlier WithTasks set).
type TaskOptions struct {
	// Store keeps the open task handles so that they outlive the
	// Manager: a new Manager on the same store lists them (Tasks) and
	// collects their outcomes once their servers are added. A store holds
	// one Manager's tasks at a time. Defaults to a store.FileTaskStore in
	// the user's cache directory (os.UserCacheDir()/mcpfleet/tasks/<the
	// client name of WithClientInfo>), created at the first task;
	// store.NewMemoryTaskStore() keeps them in memory only.
	Store store.TaskStore
	// SharedScope keeps them in the shared state (WithSharedState) under
	// this scope instead of Store: they outlive the Manager and its
	// process, and a Manager made later with the same scope, on any
	// replica, collects them. A scope holds one Manager's tasks at a time
	// (see store.TaskStores): fleet.Pool gives each user's fleet its
	// user's; a host whose replicas serve one user at once gives each
	// replica a scope of its own. Without WithSharedState it does nothing.
	SharedScope string
	// PollInterval is how often a task is polled when its server does not
	// say (a server's pollInterval wins, within MinTaskPollInterval and
	// MaxTaskPollInterval). Defaults to DefaultTaskPollInterval.
	PollInterval time.Duration
	// PollConcurrency is how many polls of one server's tasks run at once;
	// the others wait their turn. Defaults to DefaultTaskPollConcurrency.
	PollConcurrency int
}

// WithTasks sets where the Manager keeps its tasks and how it polls them;
// see TaskOptions.
func WithTasks(t TaskOptions) Option {
	return func(o *options) {
		if t.Store != nil {
			o.taskStore = t.Store
		}
		if t.SharedScope != "" {
			o.sharedTasks, o.taskScope = true, t.SharedScope
		}
		setPositive(&o.taskPollInterval, t.PollInterval)
		setPositive(&o.taskPollConcurrency, t.PollConcurrency)
	}
}
