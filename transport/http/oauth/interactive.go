package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpfleet/mcpfleet/store"
)

// Start returns the URL where the user authorizes the client: the one of
// the authorization waiting already, or a new one (discovery, the client's
// registration, PKCE). It fails with ErrNotInteractive for a grant that
// needs no user.
func (a *Authorizer) Start(ctx context.Context) (string, error) {
	if !a.Interactive() {
		return "", fmt.Errorf("%w: %s", ErrNotInteractive, a.cfg.Grant)
	}
	a.mu.Lock()
	a.loadLocked(ctx)
	if p := a.pending; p != nil {
		a.mu.Unlock()
		return p.url, nil
	}
	scopes := a.challenge.scopes
	a.mu.Unlock()
	return a.prepare(ctx, scopes, false)
}

// prepare makes the authorization the user is to complete, for the scopes
// challenged (nil: chosen by the MCP rules), unless one for the same scopes
// is waiting. With stepUp, the scopes granted so far are kept in the
// request (SEP-2350: step-up must not lose what was granted).
func (a *Authorizer) prepare(ctx context.Context, challenged []string, stepUp bool) (string, error) {
	a.mu.Lock()
	ch := a.challenge
	granted := a.grantedScopes(a.entry.Token)
	if p := a.pending; p != nil && (len(challenged) == 0 || subset(challenged, p.scopes)) {
		a.mu.Unlock()
		return p.url, nil
	}
	a.mu.Unlock()

	dctx, cancel := a.detached(ctx)
	defer cancel()
	d, err := a.discover(dctx, ch)
	if err != nil {
		return "", err
	}
	if err := requirePKCE(d); err != nil {
		return "", err
	}
	// No registration, no client id, no user goes to an authorization
	// server the client does not hold credentials for.
	if err := a.bindIssuer(dctx, d.asm.Issuer); err != nil {
		return "", err
	}
	c, err := a.clientFor(dctx, d)
	if err != nil {
		return "", err
	}
	scopes := a.chooseScopes(d, challenged)
	if stepUp {
		scopes = union(granted, scopes)
	}
	// SEP-2207: a client that keeps refresh tokens asks for offline_access
	// where the authorization server offers it.
	if slices.Contains(d.asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	p := &pending{
		state:    randomState(),
		verifier: oauth2.GenerateVerifier(),
		oc:       a.oauth2Config(c, d.asm.AuthorizationEndpoint, d.asm.TokenEndpoint, scopes),
		client:   c,
		resource: d.resource,
		issuer:   d.asm.Issuer,
		issParam: d.asm.AuthorizationResponseIssParameterSupported,
		scopes:   scopes,
	}
	p.url = p.oc.AuthCodeURL(p.state,
		oauth2.S256ChallengeOption(p.verifier),
		oauth2.SetAuthURLParam("resource", d.resource))
	a.mu.Lock()
	a.pending = p
	a.mu.Unlock()
	return p.url, nil
}

// clientFor returns the client's identity with the authorization server,
// in the MCP spec's order: a pre-registered client; a Client ID Metadata
// Document where the server supports them; a client registered earlier
// (kept in the store) for the same server and redirect URI; a dynamic
// registration (RFC 7591, the official Go SDK's oauthex.RegisterClient).
func (a *Authorizer) clientFor(ctx context.Context, d *discovery) (*Client, error) {
	method := a.authMethod(d.asm)
	switch {
	case a.cfg.ClientID != "":
		return &Client{ID: a.cfg.ClientID, AuthMethod: method, Issuer: d.asm.Issuer}, nil
	case a.cfg.ClientMetadataURL != "" && d.asm.ClientIDMetadataDocumentSupported:
		return &Client{ID: a.cfg.ClientMetadataURL, AuthMethod: method, Issuer: d.asm.Issuer}, nil
	}
	a.mu.Lock()
	if c := a.entry.Client; c != nil && c.Registered && c.Issuer == d.asm.Issuer && c.RedirectURI == a.cfg.Redirect() {
		c := *c
		proven := a.entry.Token != nil
		a.mu.Unlock()
		// A registration is kept by issuer; with no token held, it may be
		// one the authorization server forgot since.
		if proven || a.knowsClient(ctx, d.asm.TokenEndpoint, &c) {
			return &c, nil
		}
		a.forgetRegistration(ctx, &c)
	} else {
		a.mu.Unlock()
	}
	if d.asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("oauth: %w", errNoClient)
	}
	meta := &oauthex.ClientRegistrationMetadata{
		RedirectURIs:  []string{a.cfg.Redirect()},
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
		ClientName:    a.cfg.ClientName,
	}
	if meta.ClientName == "" {
		meta.ClientName = "mcpfleet"
	}
	if s := d.asm.TokenEndpointAuthMethodsSupported; len(s) == 0 || slices.Contains(s, "none") {
		meta.TokenEndpointAuthMethod = "none" // a public client: nothing to keep secret
	}
	reg, err := oauthex.RegisterClient(ctx, d.asm.RegistrationEndpoint, meta, a.hc)
	if err != nil {
		return nil, registrationError(err)
	}
	c := &Client{ID: reg.ClientID, Secret: reg.ClientSecret, AuthMethod: reg.TokenEndpointAuthMethod,
		Issuer: d.asm.Issuer, RedirectURI: a.cfg.Redirect(), Registered: true}
	if c.AuthMethod == "" {
		// RFC 7591 section 2: the default is client_secret_basic, which
		// needs a secret; without one the client is public.
		c.AuthMethod = "client_secret_basic"
		if c.Secret == "" {
			c.AuthMethod = "none"
		}
	}
	a.mu.Lock()
	a.entry.Client = c
	e := a.entry.clone()
	a.mu.Unlock()
	a.persist(ctx, e, store.Lease{})
	return c, nil
}

// Complete finishes the authorization waiting for the user with what the
// authorization server sent back: the whole redirect URL (or its query),
// or, pasted by hand, the code alone. A redirect must carry the state the
// authorization was started with, checked before anything else in it
// (ErrStateMismatch otherwise, and the authorization stays open, an error
// the redirect carries included), and the issuer when the server says it
// sends one (RFC 9207); the code is exchanged with the PKCE verifier and
// the resource indicator. The code and the verifier appear in no error.
func (a *Authorizer) Complete(ctx context.Context, redirect string) error {
	if !a.Interactive() {
		return fmt.Errorf("%w: %s", ErrNotInteractive, a.cfg.Grant)
	}
	a.mu.Lock()
	p := a.pending
	a.mu.Unlock()
	if p == nil {
		return ErrNoPendingAuthorization
	}
	r, err := ParseRedirect(redirect)
	if err != nil {
		return err
	}
	// The state first: a redirect that is not this authorization's (any
	// web page can send the browser to the loopback listener) ends
	// nothing, and nothing of it, its error_description least of all,
	// reaches an error.
	if r.FromURL && r.State != p.state {
		return ErrStateMismatch
	}
	if r.Error != "" {
		a.mu.Lock()
		if a.pending == p {
			a.pending = nil
		}
		a.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrAuthorizationDenied, r.Error)
	}
	if r.Iss != "" || p.issParam {
		if r.Iss != p.issuer && !(r.Iss == "" && !p.issParam) {
			return fmt.Errorf("oauth: the redirect's issuer %q is not the authorization server %q (RFC 9207)", r.Iss, p.issuer)
		}
	}
	ectx, cancel := a.detached(ctx)
	defer cancel()
	opts := []oauth2.AuthCodeOption{
		oauth2.VerifierOption(p.verifier),
		oauth2.SetAuthURLParam("resource", p.resource),
	}
	opts = append(opts, a.assertionParams(p.client, p.issuer)...)
	tok, err := p.oc.Exchange(ectx, r.Code, opts...)
	if err != nil {
		te := asTokenError("authorization code exchange", err)
		if te.code == "invalid_client" {
			a.forgetRegistration(ctx, p.client)
		}
		if te.refused() {
			// The code is spent or wrong: this authorization is over.
			a.mu.Lock()
			if a.pending == p {
				a.pending = nil
			}
			a.mu.Unlock()
		}
		return te
	}
	a.mu.Lock()
	if a.pending == p {
		a.pending = nil
	}
	a.mu.Unlock()
	nt := a.fromOAuth2(tok, p.scopes, nil)
	a.saveToken(ctx, nt, p.issuer, p.oc.Endpoint.TokenURL, p.resource, p.client, store.Lease{})
	a.log.Info("mcpfleet: oauth: authorized", "server", a.key, "scopes", strings.Join(nt.Scopes, " "))
	return nil
}

// Redirect is what an authorization server sent back to the redirect URI.
// Code is a secret: Redirect's String leaves it out.
type Redirect struct {
	Code  string
	State string
	Iss   string
	// Error is the error the server sent instead of a code, with its
	// description.
	Error string
	// FromURL is false when the input was a bare code.
	FromURL bool
}

func (r Redirect) String() string {
	if r.Error != "" {
		return "redirect(error=" + r.Error + ")"
	}
	return "redirect(code=<redacted> state=<redacted>)"
}

// Format prints the redacted form for every verb.
func (r Redirect) Format(f fmt.State, _ rune) { fmt.Fprint(f, r.String()) }

// ParseRedirect reads what a user pasted, or what a loopback listener
// received: a redirect URL, its query string (with or without the "?"), or
// a bare authorization code.
func ParseRedirect(s string) (Redirect, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Redirect{}, errors.New("oauth: empty redirect")
	}
	query := ""
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil {
			return Redirect{}, errors.New("oauth: the redirect is not a URL")
		}
		query = u.RawQuery
	case strings.HasPrefix(s, "?"):
		query = s[1:]
	case strings.Contains(s, "code=") || strings.Contains(s, "error="):
		query = s
	default:
		return Redirect{Code: s}, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Redirect{}, errors.New("oauth: the redirect's query does not parse")
	}
	r := Redirect{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss"), FromURL: true}
	if e := q.Get("error"); e != "" {
		r.Error = e
		if d := q.Get("error_description"); d != "" {
			r.Error += ": " + d
		}
		return r, nil
	}
	if r.Code == "" {
		return Redirect{}, errors.New("oauth: the redirect carries no code")
	}
	return r, nil
}
