package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/llm"
)

// ErrClosed is the error of a request that reaches a Gateway after Close.
var ErrClosed = errors.New("mcpfleet: gateway closed")

// Gateway serves a Manager's fleet as one MCP server. Make one with New;
// serve it with ServeStdio, HTTPHandler, or any transport of mcp-go's over
// Server. It is safe for concurrent use. Close it before the Manager.
type Gateway struct {
	// Set at creation, read-only.
	m      *client.Manager
	srv    *server.MCPServer
	o      options
	log    *slog.Logger
	meta   *llm.MetaTools     // with WithToolSearch; nil otherwise
	search *client.ToolSearch // the index behind meta
	ctx    context.Context    // ends at Close; every call's context derives from it
	cancel context.CancelFunc
	obs    Observer
	// who is the identity the gateway serves, for the Observer and the
	// logs: a Team's member's ID, "" for a gateway served alone.
	who string
	// access, if set, is the policy that decides what the downstream
	// clients may list and call (a Team's, for one identity); nil lets
	// them use everything.
	access func(server, tool string) Decision
	// resync is signalled (capacity 1) when what access decides changed:
	// the follower registers the catalog again and closes the waiters
	// policyChanged gave out (syncWaiters, guarded by syncMu).
	resync      chan struct{}
	syncMu      sync.Mutex
	syncWaiters []chan struct{}
	syncEnded   bool // the follower ended: nothing waits for it

	// Have their own synchronization.
	sessions sessionTable
	calls    callTable
	subs     subscriptions
	routes   atomic.Pointer[routes] // which server a resource URI belongs to

	// mirror is the catalog registered with srv; only the follower
	// goroutine touches it.
	mirror mirror

	// started is closed once no server connects for the first time, or
	// the startup wait passed (WithStartupWait); list requests wait for it.
	started chan struct{}

	// bg counts the goroutines the gateway started (the follower, calls,
	// level changes); Close waits for them.
	bg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns a Gateway over m, serving m's current catalog at once and
// following every change of it. Transports are started separately
// (ServeStdio, HTTPHandler).
func New(m *client.Manager, opts ...Option) *Gateway {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{m: m, o: o, log: o.logger, ctx: ctx, cancel: cancel, obs: o.observer,
		who: o.member.id, access: o.member.access, resync: make(chan struct{}, 1)}
	if g.who != "" {
		g.log = g.log.With("identity", g.who)
	}
	g.sessions.init(o)
	g.sessions.obs, g.sessions.who = g.obs, g.who
	g.sessions.onEnd = g.endSession
	g.calls.init()
	g.subs.init(g)
	g.routes.Store(&routes{uris: map[string]string{}})

	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(g.sessionRegistered)
	hooks.AddOnUnregisterSession(g.sessionUnregistered)
	hooks.AddOnRequestInitialization(g.admit)
	hooks.AddAfterSetLevel(g.levelSet)
	hooks.AddBeforeSubscriptionsListen(g.listenStarted)
	hooks.AddAfterSubscriptionsListen(g.listenEnded)
	sopts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithLogging(),
		server.WithHooks(hooks),
		// The fleet's tasks (see tasks.go).
		server.WithTaskCapabilities(true, true, true),
	}
	if o.instructions != "" {
		sopts = append(sopts, server.WithInstructions(o.instructions))
	}
	g.srv = server.NewMCPServer(o.name, o.version, sopts...)
	if f := o.forwarder; f != nil {
		f.g.Store(g)
		g.srv.AddNotificationHandler(string(mcp.MethodNotificationRootsListChanged), g.rootsChanged)
		hooks.AddAfterInitialize(g.initialized)
	}
	if o.toolSearch {
		g.search = m.NewToolSearch()
		g.meta = llm.NewMetaTools(fleet{g}, g.search)
		var tools []server.ServerTool
		for _, t := range g.meta.Tools() {
			tools = append(tools, server.ServerTool{Tool: t, Handler: g.metaHandler(t.Name)})
		}
		g.srv.AddTools(tools...)
	}

	statuses, _, events, unsubscribe := m.Watch(0)
	g.syncAll() // after Watch: a change in between comes as an event too
	for _, st := range statuses {
		g.obs.UpstreamState(UpstreamInfo{Identity: g.who, Server: st.Name, State: st.State, Present: true})
	}
	g.started = make(chan struct{})
	var connecting map[string]bool
	if o.startupWait > 0 {
		connecting = map[string]bool{}
		for _, st := range statuses {
			if st.State == lifecycle.Connecting {
				connecting[st.Name] = true
			}
		}
	}
	if len(connecting) == 0 {
		close(g.started)
		connecting = nil
	}
	g.bg.Go(func() {
		defer unsubscribe()
		g.follow(events, connecting)
		for _, st := range g.m.Statuses() {
			g.obs.UpstreamState(UpstreamInfo{Identity: g.who, Server: st.Name, State: st.State, Present: false})
		}
	})
	return g
}

// listMethods are the requests that wait for the startup (see
// WithStartupWait).
var listMethods = map[mcp.MCPMethod]bool{
	mcp.MethodToolsList: true, mcp.MethodPromptsList: true,
	mcp.MethodResourcesList: true, mcp.MethodResourcesTemplatesList: true,
}

// awaitStarted waits for the startup before a list request is answered.
func (g *Gateway) awaitStarted(ctx context.Context) {
	select {
	case <-g.started:
	case <-ctx.Done():
	case <-g.ctx.Done():
	}
}

// Server returns the mcp-go server the gateway is, for a transport of
// mcp-go's own (the SSE server, an in-process client).
func (g *Gateway) Server() *server.MCPServer { return g.srv }

// Manager returns the Manager the gateway serves.
func (g *Gateway) Manager() *client.Manager { return g.m }

// Close stops following the Manager, ends every call in flight (their
// servers are sent notifications/cancelled) and waits for the gateway's
// goroutines. It leaves the Manager open. Transports serving the gateway
// should be stopped first.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.cancel()
		g.sessions.endAll()
		if g.search != nil {
			g.search.Close()
		}
		if f := g.o.forwarder; f != nil {
			f.g.CompareAndSwap(g, nil)
		}
		g.bg.Wait()
	})
	return nil
}

// follow keeps the served catalog in step with the Manager's and hands
// the servers' log messages and resource updates to the sessions, until
// Close or the Manager's Close. connecting are the servers connecting for
// the first time, which the lists wait for (see WithStartupWait); nil if
// they do not wait.
func (g *Gateway) follow(events <-chan client.Event, connecting map[string]bool) {
	defer g.endResyncs()
	var startup <-chan time.Time
	if connecting != nil {
		t := time.NewTimer(g.o.startupWait)
		defer t.Stop()
		startup = t.C
	}
	started := func() {
		g.syncAll() // a catalog event may trail the state event that ended the wait
		close(g.started)
		connecting, startup = nil, nil
	}
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-startup:
			g.log.Info("mcpfleet: gateway: answering lists before every server connected",
				"waited", g.o.startupWait, "connecting", len(connecting))
			started()
		case <-g.resync:
			g.resynced()
		case ev, ok := <-events:
			if !ok {
				return
			}
			if connecting != nil && ev.Kind == client.EventState {
				if ev.To == lifecycle.Connecting {
					connecting[ev.Server] = true
				} else {
					delete(connecting, ev.Server)
				}
			}
			if ev.Dropped > 0 {
				// Events were lost: what they said is in the View.
				g.syncAll()
			}
			switch ev.Kind {
			case client.EventState:
				g.obs.UpstreamState(UpstreamInfo{Identity: g.who, Server: ev.Server, State: ev.To, Present: ev.To != lifecycle.Closed})
				g.stateChanged(ev.Server, ev.From, ev.To)
			case client.EventCatalog:
				g.applyDiff(ev.Diff)
			case client.EventLog:
				g.forwardLog(ev.Server, ev.Log)
			case client.EventResourceUpdated:
				g.subs.updated(ev.Server, ev.URI)
			}
			if connecting != nil && len(connecting) == 0 {
				started()
			}
		}
	}
}

// forwardLog sends a server's log message to the sessions that asked for
// log messages (logging/setLevel), at the level each asked for; a session
// that never asked gets none, as the specification has it (a server's log
// may say what another client's call did). setLevel names no server, so a
// session that asked gets every server's. A 2026-07-28 client asks for log
// messages per request and gets those of its own calls only, so it gets
// none of these.
func (g *Gateway) forwardLog(srvName string, lm *client.LogMessage) {
	if lm == nil {
		return
	}
	logger := srvName
	if lm.Logger != "" {
		logger = srvName + "/" + lm.Logger
	}
	n := mcp.NewLoggingMessageNotification(lm.Level, logger, lm.Data)
	for _, s := range g.sessions.registered() {
		if s.logs.Load() {
			_ = g.srv.SendLogMessageToSpecificClient(s.id, n) // a full or gone session loses it
		}
	}
}

// levelSet records that the session asked for log messages, and passes
// its logging/setLevel on to every server, so that they send what the most
// recent request asked for (each session gets what its own level lets
// through).
func (g *Gateway) levelSet(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	if s, err := g.sessions.of(ctx); err == nil {
		s.logs.Store(true)
	}
	level := req.Params.Level
	g.bg.Go(func() {
		ctx, cancel := context.WithTimeout(g.ctx, client.DefaultReadyTimeout)
		defer cancel()
		for _, st := range g.m.Statuses() {
			if err := g.m.SetLevel(ctx, st.Name, level); err != nil {
				g.log.Debug("mcpfleet: gateway: set level", "server", st.Name, "level", level, "err", err)
			}
		}
	})
}

// initialized tells the servers the roots changed when the only
// downstream session has just said it has roots: servers that asked for
// them before it came (and were refused) ask again, and the Forwarder
// answers with that client's roots.
func (g *Gateway) initialized(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	if req.Params.Capabilities.Roots != nil && len(g.sessions.registered()) <= 1 {
		g.rootsChanged(ctx, mcp.JSONRPCNotification{})
	}
}

// rootsChanged tells every server that the roots changed when a
// downstream client says its roots did, so that each asks again (and the
// Forwarder answers with the roots of the client it attributes the
// request to).
func (g *Gateway) rootsChanged(context.Context, mcp.JSONRPCNotification) {
	g.bg.Go(func() {
		ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
		defer cancel()
		if err := g.m.SetRoots(ctx, g.m.Roots()); err != nil {
			g.log.Debug("mcpfleet: gateway: notify roots changed", "err", err)
		}
	})
}
