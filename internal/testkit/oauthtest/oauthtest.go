// Package oauthtest runs, for tests, an MCP server on 127.0.0.1 that
// requires OAuth, with its authorization server on the same port. The
// authorization server is github.com/go-oauth2/oauth2/v4 (the authorization
// endpoint with PKCE, the token endpoint for the authorization code,
// refresh and client credentials grants, token validation). This package
// adds only what that library does not have: its metadata (RFC 8414),
// dynamic client registration (RFC 7591, into the library's client store),
// the protected resource metadata (RFC 9728) and the bearer check in front
// of an mcp-go MCP server, and a token store of the library's interface
// that tests can look into (to revoke or expire tokens).
//
// The MCP server can be restarted on the same port, forgetting its
// sessions; the authorization server's tokens and clients survive it, as
// a separate authorization server's would.
package oauthtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	oauth2 "github.com/go-oauth2/oauth2/v4"
	oautherrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// Scope is the scope the MCP server lists in its protected resource
// metadata.
const Scope = "mcp:tools"

// Options configures Start.
type Options struct {
	// AccessTokenExp is the lifetime of access tokens. Defaults to an hour.
	AccessTokenExp time.Duration
	// Clients are pre-registered confidential clients: id → secret. Their
	// redirect URI is oauth.Config's default.
	Clients map[string]string
	// Metadata, if set, edits the authorization server metadata before it
	// is served (to leave out code_challenge_methods_supported, say).
	Metadata func(meta map[string]any)
	// ServerErrorForBadTokens makes the MCP server answer a request whose
	// token it does not accept with HTTP 500 instead of 401, as the
	// TypeScript SDK's example server does (a request with no token still
	// gets the 401 and its challenge).
	ServerErrorForBadTokens bool
	// OriginResource makes the protected resource metadata name the
	// server's origin ("http://127.0.0.1:port/") as its resource, a parent
	// of the MCP endpoint, as RFC 9728 allows: the resource indicator a
	// client asks tokens for is then not the URL it connects to.
	OriginResource bool
	// Refreshing, if set, is called with each refresh request before it is
	// handled: a test holds the refresh there (to kill the client that
	// sent it, say). The request's context ends when the client goes.
	Refreshing func(r *http.Request)
	// JWT makes the access tokens JWTs (see jwt.go): signed with a key of
	// the server's, whose public half it publishes at its jwks_uri, for
	// the audience the client asked for (RFC 8707's resource).
	JWT bool
	// User, if set, names the user who approves an authorization request
	// (a test's client says who it plays, in a header, say). Defaults to
	// "user".
	User func(r *http.Request) string
	// Claims, if set, adds claims to a user's JWT access tokens (groups,
	// say).
	Claims func(user string) map[string]any
}

// TokenRequest is one request that reached the token endpoint, as it
// came: the form, and the client credentials of a Basic header.
type TokenRequest struct {
	Grant       string
	Form        url.Values
	BasicID     string
	BasicSecret string
}

// Server is the MCP server and its authorization server.
type Server struct {
	opts    Options
	addr    string
	manager *manage.Manager
	oauth   *server.Server
	clients *clientStore
	tokens  *tokenStore

	authorizations atomic.Int64
	grants         sync.Map // grant type → *atomic.Int64
	tokenErrors    sync.Map // OAuth error code → *atomic.Int64
	registrations  atomic.Int64
	asRequests     atomic.Int64 // every request to the authorization server's paths
	reuses         atomic.Int64 // refresh tokens redeemed a second time
	rejectTokens   atomic.Bool  // the MCP server takes no token (RejectTokens)

	// Refresh tokens rotate: lineage maps every refresh token issued to its
	// grant, spent the ones redeemed already; a spent one redeemed again
	// revokes its grant (RFC 6819 section 5.2.2.3, OAuth 2.1's rotation).
	grantMu   sync.Mutex
	lineage   map[string]int64
	spent     map[string]bool
	nextGrant int64

	jwt *jwtIssuer // with Options.JWT

	recMu         sync.Mutex // guards the fields below
	tokenRequests []TokenRequest
	authServers   []string // the protected resource metadata's; nil: the Issuer

	mu     sync.Mutex // guards the running incarnation
	srv    *http.Server
	mcp    *mcpserver.StreamableHTTPServer
	served chan struct{}
}

// Start starts the servers on a free port of 127.0.0.1 and stops them when
// the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Listen(opts)
	if err != nil {
		t.Fatalf("oauthtest: start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Listen starts the servers on a free port of 127.0.0.1; Stop stops them.
func Listen(opts Options) (*Server, error) {
	if opts.AccessTokenExp <= 0 {
		opts.AccessTokenExp = time.Hour
	}
	s := &Server{opts: opts, clients: newClientStore(), tokens: newTokenStore(),
		lineage: map[string]int64{}, spent: map[string]bool{}}
	s.manager = manage.NewDefaultManager()
	cfg := &manage.Config{AccessTokenExp: opts.AccessTokenExp, RefreshTokenExp: 24 * time.Hour, IsGenerateRefresh: true}
	s.manager.SetAuthorizeCodeTokenCfg(cfg)
	s.manager.SetClientTokenCfg(&manage.Config{AccessTokenExp: opts.AccessTokenExp})
	// Refresh tokens rotate: each is good for one refresh, as the MCP spec
	// asks of public clients; a second use is invalid_grant.
	s.manager.SetRefreshTokenCfg(&manage.RefreshingConfig{AccessTokenExp: opts.AccessTokenExp,
		IsGenerateRefresh: true, IsRemoveAccess: true, IsRemoveRefreshing: true})
	s.manager.MapTokenStorage(s.tokens)
	s.manager.MapClientStorage(s.clients)
	if opts.JWT {
		j, err := newJWTIssuer(s)
		if err != nil {
			return nil, err
		}
		s.jwt = j
		s.manager.MapAccessGenerate(j)
	}
	s.addClients()
	srvCfg := server.NewConfig()
	srvCfg.ForcePKCE = true
	srvCfg.AllowedCodeChallengeMethods = []oauth2.CodeChallengeMethod{oauth2.CodeChallengeS256}
	srvCfg.AllowedGrantTypes = []oauth2.GrantType{oauth2.AuthorizationCode, oauth2.Refreshing, oauth2.ClientCredentials}
	s.oauth = server.NewServer(srvCfg, s.manager)
	// Basic or in the body (client_secret_basic, client_secret_post,
	// and a public client's id alone).
	s.oauth.SetClientInfoHandler(func(r *http.Request) (string, string, error) {
		if id, secret, ok := r.BasicAuth(); ok {
			return id, secret, nil
		}
		return server.ClientFormHandler(r)
	})
	// The user approves at once.
	s.oauth.SetUserAuthorizationHandler(func(_ http.ResponseWriter, r *http.Request) (string, error) {
		if opts.User != nil {
			return opts.User(r), nil
		}
		return "user", nil
	})
	if err := s.start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

// addClients registers the pre-registered clients.
func (s *Server) addClients() {
	for id, secret := range s.opts.Clients {
		_ = s.clients.Set(id, &models.Client{ID: id, Secret: secret, Domain: oauth.Config{}.Redirect()})
	}
}

// TokenErrors counts the token requests refused with an OAuth error code
// ("invalid_grant", "invalid_client", ...).
func (s *Server) TokenErrors(code string) int64 {
	if v, ok := s.tokenErrors.Load(code); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// Reuses counts refresh tokens redeemed a second time (each revoked its
// grant).
func (s *Server) Reuses() int64 { return s.reuses.Load() }

// RestartForgetting restarts the servers on the same port having
// forgotten every token, code and dynamic client registration, as an
// authorization server that keeps them in memory does (the TypeScript
// SDK's example one). Pre-registered clients stay.
func (s *Server) RestartForgetting(t testing.TB) {
	t.Helper()
	s.Stop()
	s.tokens.forget()
	s.clients.forget()
	s.addClients()
	s.grantMu.Lock()
	clear(s.lineage)
	clear(s.spent)
	s.grantMu.Unlock()
	if err := s.start(s.addr); err != nil {
		t.Fatalf("oauthtest: restart on %s: %v", s.addr, err)
	}
}

// RejectTokens makes the MCP server refuse every token, as one whose own
// record of tokens was lost does, while the authorization server goes on
// issuing and refreshing them (on), or take them again (off).
func (s *Server) RejectTokens(on bool) { s.rejectTokens.Store(on) }

// URL is the MCP endpoint.
func (s *Server) URL() string { return "http://" + s.addr + "/mcp" }

// Issuer is the authorization server's issuer (and base URL).
func (s *Server) Issuer() string { return "http://" + s.addr }

// Authorizations counts the authorization requests that got a code.
func (s *Server) Authorizations() int64 { return s.authorizations.Load() }

// Grants counts the successful token requests of a grant type
// ("authorization_code", "refresh_token", "client_credentials").
func (s *Server) Grants(grant string) int64 {
	if v, ok := s.grants.Load(grant); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

// Registrations counts dynamic client registrations.
func (s *Server) Registrations() int64 { return s.registrations.Load() }

// AuthServerRequests counts every request to the authorization server's
// paths (metadata, registration, authorization, token).
func (s *Server) AuthServerRequests() int64 { return s.asRequests.Load() }

// TokenRequests returns every request the token endpoint got, in order.
func (s *Server) TokenRequests() []TokenRequest {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	return append([]TokenRequest(nil), s.tokenRequests...)
}

// SetAuthorizationServers makes the protected resource metadata name
// these authorization servers (none: the server's own again), as an MCP
// server that changed its authorization server, or a compromised one,
// would.
func (s *Server) SetAuthorizationServers(issuers ...string) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.authServers = append([]string(nil), issuers...)
}

// ExpireAccessTokens makes every access token issued so far invalid, as if
// they had expired, while the client still thinks them good.
func (s *Server) ExpireAccessTokens() {
	s.tokens.removeAll(func(ti oauth2.TokenInfo) bool { return ti.GetAccess() != "" }, true)
}

// RevokeRefreshTokens revokes every refresh token (and the access tokens
// with them): the user must authorize again.
func (s *Server) RevokeRefreshTokens() {
	s.tokens.removeAll(func(ti oauth2.TokenInfo) bool { return ti.GetRefresh() != "" }, false)
}

// Approve plays the user who approves at authURL: it returns the redirect
// URL the authorization server sends the browser to.
func Approve(ctx context.Context, authURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	c := &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableKeepAlives: true},
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("oauthtest: authorization answered HTTP %d without a redirect", resp.StatusCode)
	}
	return loc, nil
}

// Restart stops the MCP server (and the endpoints of the authorization
// server, which share its port) and starts it again on the same port, with
// no memory of its sessions. Tokens and clients survive.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(s.addr); err != nil {
		t.Fatalf("oauthtest: restart on %s: %v", s.addr, err)
	}
}

// Stop stops serving, closing every connection at once.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, m, served := s.srv, s.mcp, s.served
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	httpserver.Halt(srv, served, func(ctx context.Context) { _ = m.Shutdown(ctx) })
}

func (s *Server) start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.addr = ln.Addr().String()
	mcps := mcpserver.NewMCPServer("oauthtest", "1.0.0", mcpserver.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(mcps)
	streamable := mcpserver.NewStreamableHTTPServer(mcps)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.counted(s.asMetadata))
	mux.HandleFunc("GET /.well-known/openid-configuration", s.counted(http.NotFound))
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.prMetadata)
	mux.HandleFunc("POST /register", s.counted(s.register))
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		s.asRequests.Add(1)
		if err := s.oauth.HandleAuthorizeRequest(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.authorizations.Add(1)
	})
	mux.HandleFunc("POST /token", s.counted(s.token))
	if s.jwt != nil {
		mux.HandleFunc("GET /jwks", s.jwt.serveJWKS)
	}
	mux.Handle("/mcp", s.bearer(streamable))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	s.mu.Lock()
	s.srv, s.mcp, s.served = srv, streamable, served
	s.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// counted counts the requests to an authorization server path.
func (s *Server) counted(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.asRequests.Add(1)
		h(w, r)
	}
}

func (s *Server) asMetadata(w http.ResponseWriter, _ *http.Request) {
	meta := map[string]any{
		"issuer":                                s.Issuer(),
		"authorization_endpoint":                s.Issuer() + "/authorize",
		"token_endpoint":                        s.Issuer() + "/token",
		"registration_endpoint":                 s.Issuer() + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                      []string{Scope, "offline_access"},
	}
	if s.jwt != nil {
		meta["jwks_uri"] = s.Issuer() + "/jwks"
	}
	if s.opts.Metadata != nil {
		s.opts.Metadata(meta)
	}
	writeJSON(w, http.StatusOK, meta)
}

func (s *Server) prMetadata(w http.ResponseWriter, _ *http.Request) {
	s.recMu.Lock()
	servers := s.authServers
	s.recMu.Unlock()
	if len(servers) == 0 {
		servers = []string{s.Issuer()}
	}
	resource := s.URL()
	if s.opts.OriginResource {
		resource = s.Issuer() + "/"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":              resource,
		"authorization_servers": servers,
		"scopes_supported":      []string{Scope},
	})
}

// register is RFC 7591 dynamic registration of a public client.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := fmt.Sprintf("client-%d", s.registrations.Add(1))
	_ = s.clients.Set(id, &models.Client{ID: id, Domain: req.RedirectURIs[0], Public: true})
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": id, "client_name": req.ClientName, "redirect_uris": req.RedirectURIs,
		"token_endpoint_auth_method": "none",
	})
}

// token is the library's token endpoint, counting what it granted and
// what it refused, with refresh token rotation and reuse detection.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	grant := r.FormValue("grant_type")
	tr := TokenRequest{Grant: grant, Form: cloneValues(r.PostForm)}
	tr.BasicID, tr.BasicSecret, _ = r.BasicAuth()
	s.recMu.Lock()
	s.tokenRequests = append(s.tokenRequests, tr)
	s.recMu.Unlock()
	old := r.FormValue("refresh_token")
	if grant == "refresh_token" {
		if s.opts.Refreshing != nil {
			s.opts.Refreshing(r)
			if r.Context().Err() != nil {
				return // the client is gone: nothing was redeemed
			}
		}
		s.grantMu.Lock()
		reused := s.spent[old]
		g := s.lineage[old]
		s.grantMu.Unlock()
		if reused {
			s.reuses.Add(1)
			s.revokeGrant(g)
			s.countError("invalid_grant")
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token reused; grant revoked"})
			return
		}
	}
	_ = s.oauth.HandleTokenRequest(rec, r)
	if rec.code != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.body.Bytes(), &e)
		s.countError(e.Error)
		return
	}
	v, _ := s.grants.LoadOrStore(grant, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	var issued struct {
		RefreshToken string `json:"refresh_token"`
	}
	if json.Unmarshal(rec.body.Bytes(), &issued) != nil || issued.RefreshToken == "" {
		return
	}
	s.grantMu.Lock()
	defer s.grantMu.Unlock()
	if grant == "refresh_token" {
		s.spent[old] = true
		s.lineage[issued.RefreshToken] = s.lineage[old]
	} else {
		s.nextGrant++
		s.lineage[issued.RefreshToken] = s.nextGrant
	}
}

func (s *Server) countError(code string) {
	if code == "" {
		code = "(none)"
	}
	v, _ := s.tokenErrors.LoadOrStore(code, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// revokeGrant removes every token of grant g.
func (s *Server) revokeGrant(g int64) {
	s.grantMu.Lock()
	var rts []string
	for rt, gg := range s.lineage {
		if gg == g {
			rts = append(rts, rt)
		}
	}
	s.grantMu.Unlock()
	for _, rt := range rts {
		_ = s.tokens.RemoveByRefresh(context.Background(), rt)
	}
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

type statusRecorder struct {
	http.ResponseWriter
	code int
	body bytes.Buffer // what was written, up to 64 KiB
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.body.Len() < 1<<16 {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// bearer lets through only requests with a valid access token, and
// answers the others 401 with the RFC 9728 challenge.
func (s *Server) bearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			if _, err := s.manager.LoadAccessToken(r.Context(), tok); err == nil && !s.rejectTokens.Load() {
				next.ServeHTTP(w, r)
				return
			}
			if s.opts.ServerErrorForBadTokens {
				writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error"})
				return
			}
		}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`,
			s.Issuer()+"/.well-known/oauth-protected-resource/mcp", Scope))
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
	})
}

// tokenStore is the library's oauth2.TokenStore in a map, so that tests
// can revoke and expire tokens (the library's own memory store keeps a
// database with a goroutine that cannot be stopped).
type tokenStore struct {
	mu   sync.Mutex
	all  []oauth2.TokenInfo
	gone map[oauth2.TokenInfo]bool
}

func newTokenStore() *tokenStore { return &tokenStore{gone: map[oauth2.TokenInfo]bool{}} }

// forget drops every token and code.
func (ts *tokenStore) forget() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.all = nil
	clear(ts.gone)
}

func (ts *tokenStore) Create(_ context.Context, info oauth2.TokenInfo) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.all = append(ts.all, info)
	return nil
}

func (ts *tokenStore) find(match func(oauth2.TokenInfo) bool) (oauth2.TokenInfo, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ti := range ts.all {
		if !ts.gone[ti] && match(ti) {
			// A copy: the library sets a refreshed token's fields on the
			// info it got, while other requests read the stored one.
			if t, ok := ti.(*models.Token); ok {
				c := *t
				return &c, nil
			}
			return ti, nil
		}
	}
	return nil, nil // the library's stores say "none" so, and it then answers invalid_grant
}

func (ts *tokenStore) remove(match func(oauth2.TokenInfo) bool) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ti := range ts.all {
		if match(ti) {
			ts.gone[ti] = true
		}
	}
	return nil
}

// removeAll removes the tokens match selects: only their access token if
// accessOnly, else the whole grant.
func (ts *tokenStore) removeAll(match func(oauth2.TokenInfo) bool, accessOnly bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ti := range ts.all {
		if ts.gone[ti] || !match(ti) {
			continue
		}
		if accessOnly && ti.GetRefresh() != "" {
			// Keep the refresh token usable: clone the info without the
			// access token.
			c := ti.New()
			c.SetClientID(ti.GetClientID())
			c.SetUserID(ti.GetUserID())
			c.SetScope(ti.GetScope())
			c.SetRefresh(ti.GetRefresh())
			c.SetRefreshCreateAt(ti.GetRefreshCreateAt())
			c.SetRefreshExpiresIn(ti.GetRefreshExpiresIn())
			ts.all = append(ts.all, c)
		}
		ts.gone[ti] = true
	}
}

func (ts *tokenStore) RemoveByCode(_ context.Context, code string) error {
	return ts.remove(func(ti oauth2.TokenInfo) bool { return ti.GetCode() == code })
}

func (ts *tokenStore) RemoveByAccess(_ context.Context, access string) error {
	return ts.remove(func(ti oauth2.TokenInfo) bool { return ti.GetAccess() == access })
}

func (ts *tokenStore) RemoveByRefresh(_ context.Context, refresh string) error {
	return ts.remove(func(ti oauth2.TokenInfo) bool { return ti.GetRefresh() == refresh })
}

func (ts *tokenStore) GetByCode(_ context.Context, code string) (oauth2.TokenInfo, error) {
	return ts.find(func(ti oauth2.TokenInfo) bool { return code != "" && ti.GetCode() == code })
}

func (ts *tokenStore) GetByAccess(_ context.Context, access string) (oauth2.TokenInfo, error) {
	return ts.find(func(ti oauth2.TokenInfo) bool { return access != "" && ti.GetAccess() == access })
}

func (ts *tokenStore) GetByRefresh(_ context.Context, refresh string) (oauth2.TokenInfo, error) {
	return ts.find(func(ti oauth2.TokenInfo) bool { return refresh != "" && ti.GetRefresh() == refresh })
}

// clientStore is the library's client store in a map, answering an
// unknown client with invalid_client as an authorization server does (the
// library's own store answers "not found", which it reports as
// server_error).
type clientStore struct {
	mu   sync.Mutex
	data map[string]oauth2.ClientInfo
}

func newClientStore() *clientStore { return &clientStore{data: map[string]oauth2.ClientInfo{}} }

func (cs *clientStore) GetByID(_ context.Context, id string) (oauth2.ClientInfo, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.data[id]; ok {
		return c, nil
	}
	return nil, oautherrors.ErrInvalidClient
}

func (cs *clientStore) Set(id string, c oauth2.ClientInfo) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.data[id] = c
	return nil
}

func (cs *clientStore) forget() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	clear(cs.data)
}
