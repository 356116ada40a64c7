package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	fleets "github.com/mcpfleet/mcpfleet/fleet"
)

// Defaults of TeamConfig.
const (
	// DefaultIdentityIdleTimeout is how long an identity's gateway stays up
	// with no request of the identity's (no stream open either); then its
	// sessions end and its fleet is given back to the pool (which closes
	// it after fleets.Config.IdleTimeout).
	DefaultIdentityIdleTimeout = 15 * time.Minute
	// DefaultCallbackPath is where the authorization servers of the
	// upstreams send a person back after they authorized: a template's
	// OAuth servers name it in their redirectUri
	// ("https://mcp.example.com/oauth/callback").
	DefaultCallbackPath = "/oauth/callback"
	// authorizationTTL bounds how long an authorization the gateway
	// started waits for its callback.
	authorizationTTL = 15 * time.Minute
	// DefaultTeamStartupWait is how long an identity's first lists wait
	// for the servers of its fleet, which is built at its first request.
	DefaultTeamStartupWait = 10 * time.Second
	// maxPendingAuthorizations bounds the authorizations waiting for
	// their callback, all identities together.
	maxPendingAuthorizations = 10000
)

// TeamConfig configures a Team.
type TeamConfig struct {
	// Fleet configures the pool of the identities' fleets: Template is
	// required. Values defaults to the identity's claims (the string
	// claims of its token, or its API key's claims), so that a template's
	// ${user:NAME} is the claim NAME. The Team adds its own options to
	// each Manager (a Forwarder, so that a server's requests reach the
	// identity's own client), after UserOptions'.
	Fleet fleets.Config
	// Authenticators tell who a bearer token names: a JWTValidator, an
	// APIKeys, or both (the first that takes the token decides). At least
	// one.
	Authenticators []Authenticator
	// Resource is the gateway's canonical URL ("https://mcp.example.com/mcp"),
	// the audience of the tokens (see JWTConfig.Audience). With
	// AuthorizationServers, the Team serves RFC 9728 protected resource
	// metadata for it, at /.well-known/oauth-protected-resource and with
	// the endpoint's path appended, and names it in every 401, so that a
	// client finds where to get a token. Required.
	Resource string
	// AuthorizationServers are the issuers named in the metadata.
	AuthorizationServers []string
	// Scopes are the scopes named in the metadata, if any.
	Scopes []string
	// Policy decides what each identity may list and call; nil lets every
	// identity use its whole fleet. SetPolicy replaces it.
	Policy *Policy
	// Options are the options of every identity's Gateway (WithLogger,
	// limits, WithObserver ...); the limits and caps hold per identity.
	Options []Option
	// HTTP is the options of every identity's HTTP handler: Path defaults
	// to Resource's path (else "/mcp"); Token is not used (the
	// Authenticators decide).
	HTTP HTTPOptions
	// StartupWait is how long an identity's first lists wait for its
	// fleet's servers to connect (see WithStartupWait); negative: not at
	// all. Defaults to DefaultTeamStartupWait.
	StartupWait time.Duration
	// IdleTimeout is how long an identity's gateway stays up unused.
	// Defaults to DefaultIdentityIdleTimeout.
	IdleTimeout time.Duration
	// MaxIdentities caps the identities whose gateways are up: past it,
	// the gateway of the identity used least recently that has no request
	// in flight (no stream open either) is closed, its sessions ended.
	// When every one is in use the Team goes over the cap until one is
	// free. Defaults to Fleet.MaxLive (fleet.DefaultMaxLive if unset).
	MaxIdentities int
	// Logger gets the Team's lines. Defaults to discarding them.
	Logger *slog.Logger
	// Observer is told of refused requests (AuthRefused); give it to the
	// identities' gateways in Options (WithObserver) too. Defaults to none.
	Observer Observer
}

// Team serves one fleet per identity behind one endpoint, for a team: an
// OAuth 2.1 protected resource as the MCP authorization specification
// describes (a request without a valid token gets 401 with
// WWW-Authenticate naming the resource metadata; tokens are validated,
// never passed on), where each identity (the token's subject, or an API
// key's identity) gets its own fleet from a fleet.Pool built from one
// template (its ${user:…} answered by the identity's claims, its OAuth
// upstreams authorized by that person and no other) and its own Gateway,
// under the Policy its ID and groups select. One identity's sessions,
// limits, upstream credentials and failures are its own: a session id of
// one identity's is unknown to any other.
//
// A person who must authorize an upstream is sent to the upstream's
// authorization server by their client (a URL-mode elicitation, or a tool
// error that gives the URL), and comes back to the Team's callback
// (DefaultCallbackPath), which completes that person's authorization
// only.
//
// A Team is an http.Handler. Shutdown it, then Close it.
type Team struct {
	// Set at creation, read-only.
	cfg       TeamConfig
	pool      *fleets.Pool
	auth      authenticators
	log       *slog.Logger
	obs       Observer
	path      string   // the MCP endpoint
	prmPaths  []string // where the metadata is served
	prm       http.Handler
	challenge string // the WWW-Authenticate parameters every 401 carries
	origin    string // of Resource: the callback's redirect URLs are built on it
	stop      chan struct{}
	wg        sync.WaitGroup

	policy atomic.Pointer[Policy]

	mu      sync.Mutex // guards the fields below; a leaf (nothing is built, closed or called under it)
	closed  bool
	members map[string]*member
	fws     map[string]*Forwarder // by user: the Forwarder its Manager was made with
	pending map[string]pendingAuth
}

// member is one identity's gateway, from its build to its close.
type member struct {
	// Set at creation, read-only.
	user  string
	ready chan struct{} // closed when the build ended

	// Set by the build before ready is closed, read-only after.
	f   *fleets.Fleet
	g   *Gateway
	h   *HTTPServer
	err error

	id   atomic.Pointer[Identity]  // the identity of its latest request
	rule atomic.Pointer[ruleCache] // which rule of which policy governs it

	// Guarded by Team.mu.
	active   int // requests being served (streams among them)
	lastUsed time.Time
	built    bool // the build succeeded: f, g and h are set
}

// ruleCache is the rule of a policy that governs an identity with some
// groups.
type ruleCache struct {
	p      *Policy
	groups []string
	i      int
}

// pendingAuth is an authorization the gateway started for a person, by its
// state.
type pendingAuth struct {
	m       *member
	server  string
	expires time.Time
}

// NewTeam returns the Team of cfg, with its pool of fleets. It starts
// nothing but a janitor: fleets are built at each identity's first
// request.
func NewTeam(cfg TeamConfig) (*Team, error) {
	if len(cfg.Authenticators) == 0 {
		return nil, errors.New("mcpfleet: gateway: a Team needs an Authenticator (a JWTValidator, APIKeys)")
	}
	if err := checkAudience(cfg.Resource); err != nil {
		return nil, err
	}
	if cfg.Policy != nil {
		if err := cfg.Policy.Validate(); err != nil {
			return nil, err
		}
		var o options
		for _, opt := range cfg.Options {
			opt(&o)
		}
		if o.toolSearch {
			return nil, errors.New("mcpfleet: gateway: tool search with a policy is not supported: search results would name tools the policy closes")
		}
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdentityIdleTimeout
	}
	if cfg.StartupWait == 0 {
		cfg.StartupWait = DefaultTeamStartupWait
	}
	if cfg.MaxIdentities <= 0 {
		cfg.MaxIdentities = cfg.Fleet.MaxLive
		if cfg.MaxIdentities <= 0 {
			cfg.MaxIdentities = fleets.DefaultMaxLive
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	res, _ := url.Parse(cfg.Resource)
	t := &Team{cfg: cfg, auth: authenticators(cfg.Authenticators), log: cfg.Logger, obs: cfg.Observer,
		stop: make(chan struct{}), members: map[string]*member{}, fws: map[string]*Forwarder{},
		pending: map[string]pendingAuth{}, origin: res.Scheme + "://" + res.Host}
	t.path = cfg.HTTP.Path
	if t.path == "" {
		t.path = strings.TrimRight(res.Path, "/")
		if t.path == "" {
			t.path = "/mcp"
		}
	}
	t.cfg.HTTP.Path = t.path
	t.cfg.HTTP.Token = ""
	t.policy.Store(cfg.Policy)

	if len(cfg.AuthorizationServers) > 0 {
		meta := server.ProtectedResourceMetadataConfig{Resource: cfg.Resource,
			AuthorizationServers: slices.Clone(cfg.AuthorizationServers), ScopesSupported: slices.Clone(cfg.Scopes),
			BearerMethodsSupported: []string{"header"}, ResourceName: "mcpfleet"}
		t.prm = server.NewProtectedResourceMetadataHandler(meta)
		p := server.ProtectedResourceMetadataPath(cfg.Resource)
		t.prmPaths = []string{server.WellKnownProtectedResourcePath}
		if p != server.WellKnownProtectedResourcePath {
			t.prmPaths = append(t.prmPaths, p)
		}
		t.challenge = fmt.Sprintf(`resource_metadata=%q`, t.origin+p)
		if len(cfg.Scopes) > 0 {
			t.challenge += fmt.Sprintf(`, scope=%q`, strings.Join(cfg.Scopes, " "))
		}
	} else {
		t.challenge = `realm="mcpfleet"`
	}

	fc := cfg.Fleet
	if fc.Values == nil {
		fc.Values = func(ctx context.Context, user string) (map[string]string, error) {
			id := IdentityFrom(ctx)
			if id == nil || id.ID != user {
				return nil, fmt.Errorf("mcpfleet: gateway: no claims of %q to fill the template with", user)
			}
			return maps.Clone(id.Claims), nil
		}
	}
	hostOptions, hostOnClose := fc.UserOptions, fc.OnClose
	fc.UserOptions = func(user string) []client.Option {
		var opts []client.Option
		if hostOptions != nil {
			opts = hostOptions(user)
		}
		fw := NewForwarder()
		t.mu.Lock()
		t.fws[user] = fw
		t.mu.Unlock()
		return append(opts, fw.ClientOptions()...)
	}
	fc.OnClose = func(user string, why fleets.Reason) {
		t.mu.Lock()
		delete(t.fws, user)
		t.mu.Unlock()
		if hostOnClose != nil {
			hostOnClose(user, why)
		}
	}
	pool, err := fleets.New(fc)
	if err != nil {
		return nil, err
	}
	t.pool = pool
	t.wg.Go(t.janitor)
	return t, nil
}

// Pool returns the pool of the identities' fleets.
func (t *Team) Pool() *fleets.Pool { return t.pool }

// Policy returns the policy in force.
func (t *Team) Policy() *Policy { return t.policy.Load() }

// SetPolicy replaces the policy (nil: every identity may use everything).
// It applies at once to every request from then on, in the sessions
// already open too: each identity's gateway registers its catalog again as
// the new policy decides, and its clients are told list_changed. It
// returns once every identity's gateway that is up has done so: a tool the
// new policy opens can be called as soon as it returns.
func (t *Team) SetPolicy(p *Policy) error {
	if p != nil {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	t.policy.Store(p)
	t.mu.Lock()
	ms := slices.Collect(maps.Values(t.members))
	t.mu.Unlock()
	var resynced []<-chan struct{}
	for _, m := range ms {
		select {
		case <-m.ready:
			if m.err == nil {
				resynced = append(resynced, m.g.policyChanged())
			}
		default: // being built: it reads the policy when its build ends
		}
	}
	// What the policy opens is registered, and so callable, when SetPolicy
	// returns, as what it closes is refused. (A closed gateway's follower
	// has ended, which closes these too.)
	for _, done := range resynced {
		<-done
	}
	t.log.Info("mcpfleet: gateway: policy replaced", "rules", ruleCount(p), "identities_up", len(ms))
	return nil
}

func ruleCount(p *Policy) int {
	if p == nil {
		return 0
	}
	return len(p.Rules)
}

// Identities returns the IDs of the identities whose gateways are up,
// sorted.
func (t *Team) Identities() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Collect(maps.Keys(t.members))
	slices.Sort(out)
	return out
}

// Gateway returns the gateway of the identity id, if it is up.
func (t *Team) Gateway(id string) *Gateway {
	t.mu.Lock()
	m := t.members[id]
	t.mu.Unlock()
	if m == nil {
		return nil
	}
	select {
	case <-m.ready:
		return m.g
	default:
		return nil
	}
}

// ServeHTTP serves the protected resource metadata, the upstreams' OAuth
// callback, and the MCP endpoint: a request with a valid bearer token goes
// to its identity's gateway (built at its first request), any other gets
// 401.
func (t *Team) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case slices.Contains(t.prmPaths, r.URL.Path):
		t.prm.ServeHTTP(w, r)
		return
	case r.URL.Path == DefaultCallbackPath:
		t.callback(w, r)
		return
	case r.URL.Path != t.path:
		http.NotFound(w, r)
		return
	}
	tok, ok := bearerToken(r)
	if !ok {
		t.unauthorized(w, "missing", nil)
		return
	}
	id, err := t.auth.Authenticate(r.Context(), tok)
	if err != nil {
		t.unauthorized(w, reasonOf(err), err)
		return
	}
	ctx := withIdentity(r.Context(), id)
	m, err := t.acquire(ctx, id)
	if err != nil {
		t.log.Warn("mcpfleet: gateway: an identity's fleet could not be built", "identity", id.ID, "err", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": codeOverLimit, "message": "mcpfleet: your fleet could not be started: " + err.Error()}})
		return
	}
	defer t.release(m)
	m.h.ServeHTTP(w, r.WithContext(ctx))
}

// unauthorized answers 401 with the challenge (RFC 6750, RFC 9728): the
// resource metadata's URL, and, for a token refused, invalid_token and why.
func (t *Team) unauthorized(w http.ResponseWriter, reason string, err error) {
	t.obs.AuthRefused(AuthInfo{Reason: reason})
	challenge := "Bearer " + t.challenge
	body := map[string]string{"error": "invalid_request", "error_description": "a bearer token is required"}
	if err != nil {
		desc := strings.TrimPrefix(err.Error(), ErrInvalidToken.Error()+": ")
		challenge += fmt.Sprintf(`, error="invalid_token", error_description=%q`, strings.ReplaceAll(desc, `"`, `'`))
		body = map[string]string{"error": "invalid_token", "error_description": desc}
		t.log.Info("mcpfleet: gateway: refused a token", "reason", reason, "why", desc)
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(body)
}

// acquire returns id's member, building it at its first request, counted
// as serving one request until release.
func (t *Team) acquire(ctx context.Context, id *Identity) (*member, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		m := t.members[id.ID]
		if m == nil {
			m = &member{user: id.ID, ready: make(chan struct{})}
			m.id.Store(id)
			m.active, m.lastUsed = 1, time.Now()
			t.members[id.ID] = m
			victims := t.overCapLocked()
			t.mu.Unlock()
			for _, v := range victims {
				t.closeMember(v, "over the cap of identities")
			}
			if err := t.build(ctx, m); err != nil {
				return nil, err
			}
			return m, nil
		}
		m.active++
		m.lastUsed = time.Now()
		t.mu.Unlock()
		select {
		case <-m.ready:
		case <-ctx.Done():
			t.release(m)
			return nil, ctx.Err()
		}
		if m.err != nil {
			t.release(m)
			if isContext(m.err) && ctx.Err() == nil {
				continue // its builder's request ended; this one builds
			}
			return nil, m.err
		}
		m.setIdentity(id)
		return m, nil
	}
}

func isContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// build gets the identity's fleet from the pool and makes its gateway;
// on failure the member leaves the table.
func (t *Team) build(ctx context.Context, m *member) error {
	defer close(m.ready)
	f, err := t.pool.Get(ctx, m.user)
	if err != nil {
		m.err = err
		t.mu.Lock()
		delete(t.members, m.user)
		t.mu.Unlock()
		return err
	}
	t.mu.Lock()
	fw := t.fws[m.user]
	t.mu.Unlock()
	opts := []Option{WithStartupWait(max(0, t.cfg.StartupWait))}
	opts = append(opts, t.cfg.Options...)
	if fw != nil {
		opts = append(opts, WithForwarder(fw))
	}
	opts = append(opts, func(o *options) {
		o.member = memberOptions{id: m.user, access: m.access(t), authorize: t.authorizing(m),
			restricted: func() bool { return t.policy.Load() != nil }}
	})
	p0 := t.policy.Load()
	m.f = f
	m.g = New(f.Manager(), opts...)
	m.h = m.g.HTTPHandler(t.cfg.HTTP)
	if t.policy.Load() != p0 {
		m.g.policyChanged() // SetPolicy did not see this member yet
	}
	t.mu.Lock()
	m.built = true
	t.mu.Unlock()
	t.log.Info("mcpfleet: gateway: serving an identity", "identity", m.user, "rule", m.ruleName(t.policy.Load()))
	return nil
}

// overCapLocked takes out of the table, while more than MaxIdentities are
// in it, the members used least recently that serve no request, and
// returns them, to be closed once t.mu is released.
func (t *Team) overCapLocked() []*member {
	over := len(t.members) - t.cfg.MaxIdentities
	if over <= 0 {
		return nil
	}
	var idle []*member
	for _, m := range t.members {
		if m.active == 0 && m.built {
			idle = append(idle, m)
		}
	}
	slices.SortFunc(idle, func(a, b *member) int { return a.lastUsed.Compare(b.lastUsed) })
	idle = idle[:min(over, len(idle))]
	for _, m := range idle {
		delete(t.members, m.user)
	}
	return idle
}

// release ends one request's hold on m.
func (t *Team) release(m *member) {
	t.mu.Lock()
	m.active--
	m.lastUsed = time.Now()
	t.mu.Unlock()
}

// setIdentity records the identity of m's latest request; if its groups
// changed, the policy may govern it by another rule now.
func (m *member) setIdentity(id *Identity) {
	old := m.id.Swap(id)
	if old != nil && !slices.Equal(old.Groups, id.Groups) && m.g != nil {
		m.g.policyChanged()
	}
}

// access returns the decision function of m's gateway: the Team's policy
// of the moment, under the rule that governs m's identity.
func (m *member) access(t *Team) func(server, tool string) Decision {
	return func(server, tool string) Decision {
		p := t.policy.Load()
		if p == nil {
			return Decision{Allowed: true, Rule: "none"}
		}
		return p.decide(m.ruleIndex(p), server, tool)
	}
}

// ruleIndex returns the index of the rule of p that governs m's identity.
func (m *member) ruleIndex(p *Policy) int {
	id := m.id.Load()
	if rc := m.rule.Load(); rc != nil && rc.p == p && slices.Equal(rc.groups, id.Groups) {
		return rc.i
	}
	i := p.RuleFor(id)
	m.rule.Store(&ruleCache{p: p, groups: id.Groups, i: i})
	return i
}

// ruleName names the rule of p that governs m.
func (m *member) ruleName(p *Policy) string {
	if p == nil {
		return "none (no policy)"
	}
	if i := m.ruleIndex(p); i >= 0 {
		return p.Rules[i].name(i)
	}
	return "default (" + cmpOr(p.Default, "deny") + ")"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// janitor closes the gateways of identities idle for IdleTimeout, and
// forgets authorizations whose callback never came, until Shutdown.
func (t *Team) janitor() {
	tick := time.NewTicker(max(time.Second, min(t.cfg.IdleTimeout/4, time.Minute)))
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		t.mu.Lock()
		var idle []*member
		for id, m := range t.members {
			if m.active == 0 && m.built && now.Sub(m.lastUsed) >= t.cfg.IdleTimeout {
				delete(t.members, id)
				idle = append(idle, m)
			}
		}
		for state, p := range t.pending {
			if now.After(p.expires) {
				delete(t.pending, state)
			}
		}
		t.mu.Unlock()
		for _, m := range idle {
			t.closeMember(m, "idle")
		}
	}
}

// closeMember ends m's sessions, closes its gateway and gives its fleet
// back to the pool. m is out of the table and serves no request.
func (t *Team) closeMember(m *member, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.h.Shutdown(ctx)
	_ = m.g.Close()
	m.f.Release()
	t.mu.Lock()
	for state, p := range t.pending {
		if p.m == m {
			delete(t.pending, state)
		}
	}
	t.mu.Unlock()
	t.log.Info("mcpfleet: gateway: an identity's gateway closed", "identity", m.user, "why", why)
}

// Shutdown closes every identity's gateway (their sessions end, their
// calls are cancelled) and stops the janitor. Requests that come after get
// 503.
func (t *Team) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	ms := slices.Collect(maps.Values(t.members))
	clear(t.members)
	t.mu.Unlock()
	close(t.stop)
	t.wg.Wait()
	for _, m := range ms {
		select {
		case <-m.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		if m.err == nil {
			t.closeMember(m, "shutdown")
		}
	}
	return nil
}

// Close shuts the Team down (if Shutdown was not called) and closes the
// pool, and with it every identity's fleet.
func (t *Team) Close() error {
	_ = t.Shutdown(context.Background())
	return t.pool.Close()
}

// authorizing returns the hook by which m's gateway tells the Team of an
// authorization it sent the person to: the callback then knows whose it
// is by its state.
func (t *Team) authorizing(m *member) func(server, authURL string) {
	return func(srvName, authURL string) {
		u, err := url.Parse(authURL)
		if err != nil {
			return
		}
		state := u.Query().Get("state")
		if state == "" {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if len(t.pending) >= maxPendingAuthorizations {
			now := time.Now()
			for s, p := range t.pending {
				if now.After(p.expires) {
					delete(t.pending, s)
				}
			}
			if len(t.pending) >= maxPendingAuthorizations {
				return // the callback will say it knows nothing of it
			}
		}
		t.pending[state] = pendingAuth{m: m, server: srvName, expires: time.Now().Add(authorizationTTL)}
	}
}

// callback completes an upstream's authorization for the person the
// gateway sent there, found by the redirect's state: the code goes to that
// person's fleet alone.
func (t *Team) callback(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	t.mu.Lock()
	p, ok := t.pending[state]
	if ok {
		delete(t.pending, state)
	}
	t.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok || time.Now().After(p.expires) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, page("This authorization is unknown or has expired. Call the tool again for a new link."))
		return
	}
	redirect := t.origin + r.URL.RequestURI()
	if err := p.m.g.m.CompleteAuthorization(r.Context(), p.server, redirect); err != nil {
		t.log.Warn("mcpfleet: gateway: completing an upstream's authorization", "identity", p.m.user, "server", p.server, "err", err)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, page("The authorization of "+p.server+" failed: "+err.Error()))
		return
	}
	t.log.Info("mcpfleet: gateway: an upstream authorized", "identity", p.m.user, "server", p.server)
	fmt.Fprint(w, page("You authorized "+p.server+". You can close this page and go back to your client."))
}

// page is a minimal HTML page saying msg.
func page(msg string) string {
	return "<!doctype html><meta charset=utf-8><title>mcpfleet</title><p>" + html.EscapeString(msg) + "</p>\n"
}
