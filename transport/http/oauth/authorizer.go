package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/sync/singleflight"

	"github.com/mcpfleet/mcpfleet/internal/netguard"
	"github.com/mcpfleet/mcpfleet/internal/redact"
	"github.com/mcpfleet/mcpfleet/store"
)

const (
	// DefaultRefreshBefore is how long before its expiry a token is
	// refreshed: at most this, and at most half its lifetime.
	DefaultRefreshBefore = 30 * time.Second
	// DefaultRequestTimeout bounds one exchange with the authorization
	// server (discovery, registration, a token request).
	DefaultRequestTimeout = 30 * time.Second
	// MaxStepUps is how many times in a row the client re-authorizes for a
	// 403 insufficient_scope asking for scopes it was already granted;
	// then it stops with ErrStepUpLimit. A challenge for scopes it does
	// not have yet is always followed.
	MaxStepUps = 2
)

// Authorizer holds one server's authorization: its tokens, refreshed before
// they expire and when the server answers 401, and the authorization in
// progress, if any. It belongs to the server, not to one connection: every
// connection to the server (every runtime the Manager dials) uses the same
// Authorizer, so a reconnect reuses the token and the user is asked once.
//
// It satisfies transport/http's Authorizer: Authorize puts the token on
// each request, Answered handles a 401 or 403. Concurrent refreshes
// coalesce into one request to the authorization server. It is safe for
// concurrent use.
type Authorizer struct {
	// Set at creation, read-only.
	cfg      Config
	key      string
	resource string // the server URL
	origin   string // the server URL's: the only one its token goes to
	store    TokenStore
	hc       *http.Client // to authorization servers: guarded (see guard)
	guard    *guard
	log      *slog.Logger // redacts URLs
	now      func() time.Time
	signer   *signer // private_key_jwt; nil otherwise

	// WithLeases: the grant's lease across replicas; nil leases: none.
	leases    store.Leases
	leaseName string
	leaseTTL  time.Duration

	flight singleflight.Group // "refresh", "acquire"

	mu     sync.Mutex // guards the fields below
	loaded bool
	// unsaved: the store failed a write of entry; settle writes it again
	// from retryAt on. retryAt also paces the reads of a store that failed
	// to load.
	unsaved   bool
	retryAt   time.Time
	entry     *Entry    // never nil once loaded
	challenge challenge // the last 401 or 403's
	pending   *pending
	stepUps   map[string]int // per scope set asked for again though granted
	// unproven is the access token of the last refresh until the server
	// takes a request with it (Accepted): a refreshed token the server
	// refuses shows that the server does not take this grant's tokens,
	// which another refresh cannot fix.
	unproven string
}

// pending is an authorization code flow waiting for the user.
type pending struct {
	url      string
	state    string
	verifier string
	oc       *oauth2.Config
	client   *Client
	resource string
	issuer   string
	issParam bool // the server sends RFC 9207's iss
	scopes   []string
}

// Option configures New.
type Option func(*Authorizer)

// WithStore sets where tokens are kept. Defaults to a new MemoryStore.
func WithStore(s TokenStore) Option {
	return func(a *Authorizer) {
		if s != nil {
			a.store = s
		}
	}
}

// WithHTTPClient sets the client for requests to the authorization server
// (not to the MCP server). Its redirects are followed only within the
// origin of the request, whatever its own CheckRedirect says, and every URL
// discovery leads to is checked as for the default client; but its dialer
// is its own: the default client's also refuses connections that resolve
// to the host's own machine or network for a server that is not there (see
// ErrEndpointRefused). Defaults to one with DefaultRequestTimeout that keeps
// no idle connections.
func WithHTTPClient(c *http.Client) Option {
	return func(a *Authorizer) {
		if c != nil {
			a.hc = c
		}
	}
}

// WithLogger sets the logger. Defaults to discarding (the package writes
// nothing to the host's stdout or stderr by itself); nil discards.
func WithLogger(l *slog.Logger) Option {
	return func(a *Authorizer) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		a.log = l
	}
}

// WithClock sets the clock that decides when a token is due for refresh.
// Defaults to time.Now. Tests move it forward.
func WithClock(now func() time.Time) Option {
	return func(a *Authorizer) {
		if now != nil {
			a.now = now
		}
	}
}

// New returns the Authorizer of the MCP server at serverURL, whose tokens
// are kept in the store under key.
func New(serverURL, key string, cfg Config, opts ...Option) (*Authorizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oauth: server URL %q is not an absolute URL", redact.URL(serverURL))
	}
	a := &Authorizer{
		cfg:      cfg,
		key:      key,
		resource: serverURL,
		origin:   netguard.Origin(u),
		store:    NewMemoryStore(),
		log:      slog.New(slog.DiscardHandler),
		now:      time.Now,
		stepUps:  map[string]int{},
		guard:    newGuard(serverURL, cfg.Issuer, cfg.IdPTokenEndpoint),
	}
	for _, o := range opts {
		if o != nil {
			o(a)
		}
	}
	a.log = redact.Logger(a.log, serverURL)
	a.hc = a.guard.client(a.hc, serverURL)
	if cfg.PrivateKey != "" {
		s, err := parseSigner(cfg.PrivateKey, cfg.SigningAlgorithm)
		if err != nil {
			return nil, fmt.Errorf("oauth: privateKey: %w", err)
		}
		a.signer = s
	}
	return a, nil
}

// Config returns the Authorizer's configuration.
func (a *Authorizer) Config() Config { return a.cfg }

// Interactive reports whether the grant needs the user (AuthorizationCode).
func (a *Authorizer) Interactive() bool { return a.cfg.Grant == AuthorizationCode }

// loadLocked reads the stored entry once. An entry for another server URL
// is not used: its token is not for this server. A corrupt one is
// reported and ignored. A store that fails to answer is asked again at
// most once per reloadAfter, meanwhile the Authorizer goes on with what it
// holds (a token in memory is used until it expires).
func (a *Authorizer) loadLocked(ctx context.Context) {
	if a.loaded || (a.entry != nil && a.now().Before(a.retryAt)) {
		return
	}
	if a.entry == nil {
		a.entry = &Entry{Resource: a.resource}
	}
	e, err := a.store.Load(ctx, a.key)
	switch {
	case errors.Is(err, store.ErrCorrupt):
		a.loaded = true
		a.log.Warn("mcpfleet: oauth: token store: the stored entry is corrupt; ignoring it", "server", a.key, "err", err)
	case err != nil:
		a.retryAt = a.now().Add(reloadAfter)
		a.log.Warn("mcpfleet: oauth: token store: load failed; going on with what this process holds",
			"server", a.key, "err", err)
	case e != nil && e.Resource == a.resource:
		a.loaded = true
		if a.entry.Token == nil || e.Token != nil {
			a.entry = e
		}
	case e != nil:
		a.loaded = true
		a.log.Info("mcpfleet: oauth: stored token is for another URL; not using it", "server", a.key)
	default:
		a.loaded = true
	}
}

// Token returns the current token, or nil if there is none. It neither
// refreshes nor asks for one.
func (a *Authorizer) Token(ctx context.Context) *Token {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(ctx)
	if a.entry == nil || a.entry.Token == nil {
		return nil
	}
	return a.entry.clone().Token
}

// Pending returns the URL of the authorization waiting for the user, or ""
// if none is.
func (a *Authorizer) Pending() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		return ""
	}
	return a.pending.url
}

// Forget deletes the stored token, client registration and remembered
// issuer, and drops the authorization in progress. The next discovery
// remembers the authorization server it finds: like TrustIssuer, a
// consent to an issuer change, but to whichever the server names then.
func (a *Authorizer) Forget(ctx context.Context) error {
	a.mu.Lock()
	a.loaded, a.unsaved = true, false
	a.entry = &Entry{Resource: a.resource}
	a.pending = nil
	clear(a.stepUps)
	a.mu.Unlock()
	l, err := a.lease(ctx)
	if err != nil {
		return err
	}
	defer a.release(l)
	return a.store.Delete(ctx, a.key)
}

// Authorize puts the server's access token on req, refreshing it first if
// it is about to expire. With no token (or a refresh token the server
// refused) req goes without one, and the server's 401 comes to Answered.
// An error means the token could not be had for a reason the user cannot
// fix (the authorization server is unreachable): req must not be sent.
//
// The token is bound to the server's origin: a request to any other
// origin (another scheme, host or port) is left as it is.
func (a *Authorizer) Authorize(req *http.Request) error {
	if req.URL == nil || netguard.Origin(req.URL) != a.origin {
		return nil
	}
	t, err := a.current(req.Context())
	if err != nil {
		return err
	}
	if t != nil {
		req.Header.Set("Authorization", "Bearer "+t.AccessToken)
	}
	return nil
}

// current returns a usable token, or nil if there is none.
func (a *Authorizer) current(ctx context.Context) (*Token, error) {
	a.settle(ctx)
	a.mu.Lock()
	a.loadLocked(ctx)
	t := a.entry.Token
	a.mu.Unlock()
	if t == nil || t.AccessToken == "" || !a.due(t) {
		return t, nil
	}
	if t.RefreshToken != "" {
		nt, err := a.refresh(ctx, t)
		var te *tokenError
		switch {
		case errors.As(err, &te) && te.refused():
			return nil, nil // the 401 will ask the user
		case err != nil && ctx.Err() == nil && a.now().Before(t.Expiry):
			// The authorization server or the store did not answer: the
			// token is still good for a while.
			a.log.Warn("mcpfleet: oauth: refresh failed; using the token until it expires", "server", a.key, "err", err)
			return t, nil
		}
		return nt, err
	}
	if !a.Interactive() {
		return a.acquire(ctx, t, a.grantedScopes(t))
	}
	if a.now().After(t.Expiry) {
		return nil, nil
	}
	return t, nil
}

// due reports whether t should be refreshed now.
func (a *Authorizer) due(t *Token) bool {
	if t.Expiry.IsZero() {
		return false
	}
	before := DefaultRefreshBefore
	if !t.IssuedAt.IsZero() {
		if half := t.Expiry.Sub(t.IssuedAt) / 2; half < before {
			before = half
		}
	}
	return !a.now().Before(t.Expiry.Add(-before))
}

func (a *Authorizer) grantedScopes(t *Token) []string {
	if t == nil {
		return nil
	}
	return t.Scopes
}

// Answered handles the server's 401 or 403 answer to req, which Authorize
// prepared. It reports retry when req should be sent again with the new
// token it got (the server did not run it: it refused the credentials);
// otherwise err says why not, and wraps ErrNeedsAuthorization when only
// the user can help (see NeedsAuthorizationError). A 403 other than
// insufficient_scope is the server's answer: (false, nil).
//
// A 401 refreshes the token, or, for the grants that need no user, gets a
// new one; a refused refresh token is dropped and the user is asked. A 403
// insufficient_scope asks for the union of the scopes held and the scopes
// challenged (step-up), at most MaxStepUps times in a row for scopes
// already granted.
func (a *Authorizer) Answered(req *http.Request, resp *http.Response) (retry bool, err error) {
	ch := parseChallenge(resp.Header)
	if resp.StatusCode == http.StatusForbidden && ch.err != "insufficient_scope" {
		return false, nil
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return false, nil
	}
	ctx := req.Context()
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	a.loadLocked(ctx)
	a.challenge = ch
	cur := a.entry.Token
	a.mu.Unlock()

	if resp.StatusCode == http.StatusForbidden {
		return a.stepUp(ctx, cur, ch)
	}
	if cur != nil && cur.AccessToken != sent {
		return true, nil // refreshed meanwhile: try the new one
	}
	a.mu.Lock()
	unproven := cur != nil && cur.AccessToken == a.unproven
	a.mu.Unlock()
	if unproven {
		// One refresh, and the server refuses its token too: only the
		// user can help (a server that lost its record of tokens, a grant
		// it revoked), not a refresh per request.
		return a.needUser(ctx, ch.scopes, "the server refused the token just refreshed")
	}
	if cur != nil && cur.RefreshToken != "" {
		_, err := a.refresh(ctx, cur)
		var te *tokenError
		if err == nil {
			return true, nil
		}
		if !errors.As(err, &te) || !te.refused() {
			return false, err
		}
		return a.needUser(ctx, ch.scopes, "the refresh token was refused")
	}
	if cur != nil {
		a.dropToken(ctx, cur, store.Lease{}) // refused, and nothing to refresh it with
	}
	if !a.Interactive() {
		if _, err := a.acquire(ctx, nil, ch.scopes); err != nil {
			return false, err
		}
		return true, nil
	}
	reason := "no token"
	if cur != nil {
		reason = "the token was refused"
	}
	return a.needUser(ctx, ch.scopes, reason)
}

// Accepted is told the server answered req, sent with the Authorizer's
// credentials, with neither a refusal (401, 403) nor a server error: the
// token it carried is proven good.
func (a *Authorizer) Accepted(req *http.Request) {
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	if sent != "" && sent == a.unproven {
		a.unproven = ""
	}
	a.mu.Unlock()
}

// stepUp answers a 403 insufficient_scope.
func (a *Authorizer) stepUp(ctx context.Context, cur *Token, ch challenge) (bool, error) {
	granted := a.grantedScopes(cur)
	want := union(granted, ch.scopes)
	if len(ch.scopes) > 0 && subset(ch.scopes, granted) {
		key := strings.Join(sorted(want), " ")
		a.mu.Lock()
		a.stepUps[key]++
		n := a.stepUps[key]
		a.mu.Unlock()
		if n > MaxStepUps {
			return false, fmt.Errorf("%w: the server still refuses scope %q after %d authorizations that granted it",
				ErrStepUpLimit, strings.Join(ch.scopes, " "), MaxStepUps)
		}
	}
	if !a.Interactive() {
		if _, err := a.acquire(ctx, nil, want); err != nil {
			return false, err
		}
		return true, nil
	}
	return a.needUser(ctx, want, "the server asks for scope "+strings.Join(ch.scopes, " "))
}

// needUser prepares an authorization for scopes and returns the error that
// sends the user to it.
func (a *Authorizer) needUser(ctx context.Context, scopes []string, reason string) (bool, error) {
	u, err := a.prepare(ctx, scopes, true)
	if err != nil {
		return false, err
	}
	return false, &NeedsAuthorizationError{URL: u, Reason: reason}
}

// dropToken forgets t if it is still the current token; the client
// registration stays. held is the grant's lease if the caller holds it.
func (a *Authorizer) dropToken(ctx context.Context, t *Token, held store.Lease) {
	a.mu.Lock()
	if a.entry.Token != t {
		a.mu.Unlock()
		return
	}
	a.entry.Token = nil
	e := a.entry.clone()
	a.mu.Unlock()
	a.persist(ctx, e, held)
}

// saveToken makes t the current token, with the facts needed to refresh it:
// the authorization server, its token endpoint, the client, and the
// resource indicator the token was asked for.
func (a *Authorizer) saveToken(ctx context.Context, t *Token, issuer, tokenEndpoint, indicator string, c *Client, held store.Lease) {
	a.mu.Lock()
	a.entry.Token = t
	if issuer != "" {
		a.entry.Issuer = issuer
	}
	if tokenEndpoint != "" {
		a.entry.TokenEndpoint = tokenEndpoint
	}
	if indicator != "" {
		a.entry.Indicator = indicator
	}
	if c != nil {
		a.entry.Client = c
	}
	e := a.entry.clone()
	a.mu.Unlock()
	a.persist(ctx, e, held)
}

// detached gives an exchange with the authorization server a context of
// its own: many callers may wait for it, and one giving up must not end
// it for the others (a refresh token may be good for one use only).
func (a *Authorizer) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRequestTimeout)
	return context.WithValue(ctx, oauth2.HTTPClient, a.hc), cancel
}

// wait waits for a coalesced exchange, or for ctx.
func wait(ctx context.Context, ch <-chan singleflight.Result) (*Token, error) {
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Token), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// refresh trades old's refresh token for a new token. Concurrent callers
// share one request; a caller that comes after another refreshed gets that
// token. With leases (WithLeases) the refresh holds the grant's lease, and
// first reads the store again: a token another replica got meanwhile is
// taken as it is, and the refresh token is not redeemed twice. A refused
// refresh token (tokenError.refused) is dropped; a client registration the
// authorization server no longer knows (invalid_client) goes with it, so
// that the next authorization registers again.
func (a *Authorizer) refresh(ctx context.Context, old *Token) (*Token, error) {
	return wait(ctx, a.flight.DoChan("refresh", func() (any, error) {
		a.mu.Lock()
		cur := a.entry.Token
		a.mu.Unlock()
		if cur != nil && cur.AccessToken != old.AccessToken {
			return cur, nil
		}
		rctx, cancel := a.detached(ctx)
		defer cancel()
		l, err := a.lease(rctx)
		if err != nil {
			return nil, err
		}
		defer a.release(l)
		if a.leases != nil {
			if t := a.reload(rctx, cur); t != nil {
				a.log.Debug("mcpfleet: oauth: token refreshed by another replica", "server", a.key)
				a.mu.Lock()
				a.unproven = t.AccessToken
				a.mu.Unlock()
				return t, nil
			}
		}
		a.mu.Lock()
		cur = a.entry.Token
		e := a.entry.clone()
		a.mu.Unlock()
		if cur == nil || cur.RefreshToken == "" {
			return nil, &tokenError{what: "refresh", code: "invalid_grant", err: errors.New("no refresh token")}
		}
		if e.TokenEndpoint == "" || e.Client == nil {
			return nil, &tokenError{what: "refresh", code: "invalid_grant", err: errors.New("no token endpoint known")}
		}
		tok, err := a.refreshRequest(rctx, e, cur)
		if err != nil {
			te := asTokenError("refresh", err)
			if te.refused() {
				a.log.Info("mcpfleet: oauth: refresh token refused", "server", a.key, "err", te)
				a.dropGrant(rctx, cur, te, l)
			}
			return nil, te
		}
		nt := a.fromOAuth2(tok, cur.Scopes, cur)
		a.mu.Lock()
		a.unproven = nt.AccessToken
		a.mu.Unlock()
		a.saveToken(rctx, nt, "", "", "", nil, l)
		a.log.Debug("mcpfleet: oauth: token refreshed", "server", a.key, "token", nt)
		return nt, nil
	}))
}

// dropGrant forgets the refused token t and, when the authorization server
// said it no longer knows the client (invalid_client) and the client was
// registered dynamically, the registration too: a registration is
// dropped, never reused forever, once the authorization server forgot it
// (it restarted, say).
func (a *Authorizer) dropGrant(ctx context.Context, t *Token, te *tokenError, held store.Lease) {
	if te.code == "invalid_client" {
		a.mu.Lock()
		if c := a.entry.Client; c != nil && c.Registered {
			a.log.Info("mcpfleet: oauth: the authorization server no longer knows the client; it registers again",
				"server", a.key)
			a.entry.Client = nil
		}
		a.mu.Unlock()
	}
	a.dropToken(ctx, t, held)
}

// acquire gets a token with a grant that needs no user (client
// credentials, token exchange), for scopes. Concurrent callers share one.
func (a *Authorizer) acquire(ctx context.Context, old *Token, scopes []string) (*Token, error) {
	return wait(ctx, a.flight.DoChan("acquire", func() (any, error) {
		a.mu.Lock()
		cur := a.entry.Token
		ch := a.challenge
		a.mu.Unlock()
		if cur != nil && cur != old && !a.due(cur) && subset(scopes, cur.Scopes) {
			return cur, nil
		}
		rctx, cancel := a.detached(ctx)
		defer cancel()
		d, err := a.discover(rctx, ch)
		if err != nil {
			return nil, err
		}
		// The client's secret, key or ID token go to the pinned or
		// remembered authorization server only.
		if err := a.bindIssuer(rctx, d.asm.Issuer); err != nil {
			return nil, err
		}
		if len(scopes) == 0 {
			scopes = a.chooseScopes(d, ch.scopes)
		}
		var tok *oauth2.Token
		client := &Client{ID: a.cfg.ClientID, AuthMethod: a.authMethod(d.asm), Issuer: d.asm.Issuer}
		switch a.cfg.Grant {
		case ClientCredentials:
			tok, err = a.clientCredentials(rctx, d, client, scopes)
		case TokenExchange:
			tok, err = a.tokenExchange(rctx, d, client, scopes)
		}
		if err != nil {
			return nil, err
		}
		nt := a.fromOAuth2(tok, scopes, nil)
		a.saveToken(ctx, nt, d.asm.Issuer, d.asm.TokenEndpoint, d.resource, client, store.Lease{})
		return nt, nil
	}))
}

// clientCredentials runs the client credentials grant with
// x/oauth2/clientcredentials.
func (a *Authorizer) clientCredentials(ctx context.Context, d *discovery, c *Client, scopes []string) (*oauth2.Token, error) {
	cc := &clientcredentials.Config{
		ClientID:       c.ID,
		ClientSecret:   a.cfg.ClientSecret,
		TokenURL:       d.asm.TokenEndpoint,
		Scopes:         scopes,
		AuthStyle:      authStyle(c.AuthMethod),
		EndpointParams: map[string][]string{"resource": {d.resource}},
	}
	if c.AuthMethod == "private_key_jwt" {
		as, err := a.signer.assertion(c.ID, d.asm.Issuer, a.now())
		if err != nil {
			return nil, fmt.Errorf("oauth: client assertion: %w", err)
		}
		cc.ClientSecret = ""
		cc.EndpointParams["client_assertion_type"] = []string{clientAssertionType}
		cc.EndpointParams["client_assertion"] = []string{as}
	}
	tok, err := cc.Token(ctx)
	if err != nil {
		return nil, asTokenError("client credentials grant", err)
	}
	return tok, nil
}

// grantTypeJWTBearer is RFC 7523's grant type.
const grantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// tokenExchange runs enterprise-managed authorization (SEP-990): the ID
// token is exchanged at the identity provider for an identity assertion
// grant (the official Go SDK's oauthex.ExchangeToken, RFC 8693), which the
// server's authorization server takes in a JWT bearer grant (RFC 7523).
// The SDK's extauth.EnterpriseHandler does the same, but authenticates the
// second request in the body only; here it follows the authorization
// server's metadata, as every other token request does.
func (a *Authorizer) tokenExchange(ctx context.Context, d *discovery, c *Client, scopes []string) (*oauth2.Token, error) {
	idToken, err := a.cfg.idToken(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauth: ID token: %w", err)
	}
	idp := &oauthex.ClientCredentials{ClientID: a.cfg.IdPClientID}
	if a.cfg.IdPClientSecret != "" {
		idp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: a.cfg.IdPClientSecret}
	}
	jag, err := oauthex.ExchangeToken(ctx, a.cfg.IdPTokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           d.asm.Issuer,
		Resource:           d.resource,
		Scope:              scopes,
		SubjectToken:       idToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, idp, a.hc)
	if err != nil {
		return nil, asTokenError("token exchange at the identity provider", err)
	}
	oc := a.oauth2Config(c, "", d.asm.TokenEndpoint, scopes)
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("grant_type", grantTypeJWTBearer),
		oauth2.SetAuthURLParam("assertion", jag.AccessToken),
	}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	opts = append(opts, a.assertionParams(c, d.asm.Issuer)...)
	tok, err := oc.Exchange(ctx, "", opts...)
	if err != nil {
		return nil, asTokenError("JWT bearer grant", err)
	}
	return tok, nil
}

// chooseScopes is the MCP scope selection: the configured scopes, else the
// challenge's, else the protected resource's scopes_supported, else none.
func (a *Authorizer) chooseScopes(d *discovery, challenged []string) []string {
	switch {
	case len(a.cfg.Scopes) > 0:
		return slices.Clone(a.cfg.Scopes)
	case len(challenged) > 0:
		return slices.Clone(challenged)
	case d.prm != nil && len(d.prm.ScopesSupported) > 0:
		return slices.Clone(d.prm.ScopesSupported)
	}
	return nil
}

// authMethod chooses how the client authenticates at the token endpoint:
// as configured; private_key_jwt with a key; none without a secret; with a
// secret, client_secret_post or client_secret_basic as the authorization
// server lists them (post first, as the official Go SDK prefers), and
// client_secret_basic, RFC 6749's default, when it lists neither.
func (a *Authorizer) authMethod(asm *oauthex.AuthServerMeta) string {
	switch {
	case a.cfg.TokenEndpointAuthMethod != "":
		return a.cfg.TokenEndpointAuthMethod
	case a.signer != nil:
		return "private_key_jwt"
	case a.cfg.ClientSecret == "":
		return "none"
	case slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// authStyle maps a token endpoint auth method to x/oauth2's style. It is
// never AutoDetect, which would send a public client's id as Basic.
func authStyle(method string) oauth2.AuthStyle {
	if method == "client_secret_basic" {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// oauth2Config is the x/oauth2 configuration for client c.
func (a *Authorizer) oauth2Config(c *Client, authURL, tokenURL string, scopes []string) *oauth2.Config {
	secret := c.Secret
	if !c.Registered {
		secret = a.cfg.ClientSecret
	}
	if c.AuthMethod == "none" || c.AuthMethod == "private_key_jwt" {
		secret = ""
	}
	return &oauth2.Config{
		ClientID:     c.ID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: authStyle(c.AuthMethod)},
		RedirectURL:  a.cfg.Redirect(),
		Scopes:       scopes,
	}
}

// assertionParams are the private_key_jwt parameters of a token request by
// c, if c authenticates so.
func (a *Authorizer) assertionParams(c *Client, audience string) []oauth2.AuthCodeOption {
	if c.AuthMethod != "private_key_jwt" || a.signer == nil {
		return nil
	}
	as, err := a.signer.assertion(c.ID, audience, a.now())
	if err != nil {
		return nil // the token request fails with invalid_client
	}
	return []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("client_assertion_type", clientAssertionType),
		oauth2.SetAuthURLParam("client_assertion", as),
	}
}

// fromOAuth2 turns x/oauth2's token into ours. The expiry is counted from
// expires_in on the Authorizer's clock; a token response without a refresh
// token keeps the old one (RFC 6749 section 6), without scope the scopes
// asked for.
func (a *Authorizer) fromOAuth2(tok *oauth2.Token, asked []string, prev *Token) *Token {
	now := a.now()
	t := &Token{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, IssuedAt: now}
	switch {
	case tok.ExpiresIn > 0:
		t.Expiry = now.Add(time.Duration(tok.ExpiresIn) * time.Second)
	case !tok.Expiry.IsZero():
		t.Expiry = tok.Expiry
	}
	if t.RefreshToken == "" && prev != nil {
		t.RefreshToken = prev.RefreshToken
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		t.Scopes = strings.Fields(s)
	} else {
		t.Scopes = slices.Clone(asked)
	}
	return t
}

// asTokenError keeps the OAuth error code and status of a failed token
// request, and drops the response body x/oauth2 puts in its error.
func asTokenError(what string, err error) *tokenError {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := &tokenError{what: what, code: re.ErrorCode}
		if re.Response != nil {
			te.status = re.Response.StatusCode
		}
		return te
	}
	var te *tokenError
	if errors.As(err, &te) {
		return te
	}
	return &tokenError{what: what, err: redact.Error(err)}
}

// randomState returns a fresh state value.
func randomState() string { return rand.Text() }

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// subset reports whether every scope of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
