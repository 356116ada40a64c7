package oauth_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// unauthorized is the server's 401 to req, with no challenge: the
// Authorizer discovers from the well-known locations.
func unauthorized() *http.Response {
	return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
}

// request returns a request to u whose context is the test's.
func request(t *testing.T, u string) *http.Request {
	return httptest.NewRequest(http.MethodPost, u, nil).WithContext(ctx(t))
}

// counter is a server that counts the requests reaching it: the target a
// malicious server would steer the client at.
type counter struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newCounter(t *testing.T, tlsToo bool) *counter {
	c := &counter{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"stolen","token_type":"Bearer"}`)
	})
	if tlsToo {
		c.srv = httptest.NewTLSServer(h)
	} else {
		c.srv = httptest.NewServer(h)
	}
	t.Cleanup(c.srv.Close)
	return c
}

// The token goes only to the server's origin: not to another host, port or
// scheme, whatever path.
func TestAuthorizeOnlyForTheServersOrigin(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": "svc-secret"}})
	a, err := oauth.New(srv.URL(), "s", oauth.Config{Grant: oauth.ClientCredentials, ClientID: "svc", ClientSecret: "svc-secret"})
	if err != nil {
		t.Fatal(err)
	}
	if retry, err := a.Answered(request(t, srv.URL()), unauthorized()); !retry || err != nil {
		t.Fatalf("Answered = %v, %v; want a token", retry, err)
	}
	port := strings.TrimPrefix(srv.Issuer(), "http://127.0.0.1:")
	for _, tc := range []struct {
		url   string
		token bool
	}{
		{srv.URL(), true},
		{srv.Issuer() + "/other/path?x=1", true},
		{"http://localhost:" + port + "/mcp", false},
		{"https://127.0.0.1:" + port + "/mcp", false},
		{"http://127.0.0.1:1/mcp", false},
		{"http://evil.example/mcp", false},
	} {
		req := request(t, tc.url)
		if err := a.Authorize(req); err != nil {
			t.Fatalf("Authorize(%s): %v", tc.url, err)
		}
		if got := req.Header.Get("Authorization") != ""; got != tc.token {
			t.Errorf("Authorize(%s): token set = %v, want %v", tc.url, got, tc.token)
		}
	}
}

// A refresh carries the resource indicator (RFC 8707), which x/oauth2's
// refresh did not send, and the authorization server takes it.
func TestRefreshCarriesResource(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	a, err := oauth.New(srv.URL(), "s", oauth.Config{}, oauth.WithClock(func() time.Time { return time.Unix(0, clock.Load()) }))
	if err != nil {
		t.Fatal(err)
	}
	u, err := a.Start(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	redirect, err := oauthtest.Approve(ctx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Complete(ctx(t), redirect); err != nil {
		t.Fatal(err)
	}
	first := a.Token(ctx(t))
	clock.Store(now.Add(2 * time.Hour).UnixNano()) // the hour-long token is due
	req := request(t, srv.URL())
	if err := a.Authorize(req); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Authorization"); got == "" || got == "Bearer "+first.AccessToken {
		t.Fatalf("Authorize did not refresh: %q", got)
	}
	var refreshes []oauthtest.TokenRequest
	for _, tr := range srv.TokenRequests() {
		if tr.Grant == "refresh_token" {
			refreshes = append(refreshes, tr)
		}
	}
	if len(refreshes) != 1 || srv.Grants("refresh_token") != 1 {
		t.Fatalf("%d refresh requests, %d granted; want 1 of each", len(refreshes), srv.Grants("refresh_token"))
	}
	if got := refreshes[0].Form["resource"]; len(got) != 1 || got[0] != srv.URL() {
		t.Errorf("the refresh's resource = %q, want [%q]", got, srv.URL())
	}
	if got := refreshes[0].Form.Get("client_id"); got == "" {
		t.Error("the refresh of a public client does not name it")
	}
}

// Discovery follows no redirect to another origin, neither for the
// protected resource metadata nor for the authorization server's: nothing
// reaches the target it was steered at.
func TestDiscoveryRedirectsStayInOrigin(t *testing.T) {
	for _, what := range []string{"protected resource metadata", "authorization server metadata"} {
		t.Run(what, func(t *testing.T) {
			steered := newCounter(t, false)
			target := strings.Replace(steered.srv.URL, "127.0.0.1", "localhost", 1)
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			defer srv.Close()
			mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
				if what == "protected resource metadata" {
					http.Redirect(w, r, target+"/prm", http.StatusFound)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
			})
			mux.HandleFunc("/.well-known/", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
			})
			a, err := oauth.New(srv.URL+"/mcp", "s", oauth.Config{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Start(ctx(t))
			if err == nil {
				t.Fatal("Start succeeded through a redirect to another origin")
			}
			if n := steered.hits.Load(); n != 0 {
				t.Fatalf("%d requests reached the other origin", n)
			}
			t.Logf("Start: %v", err)
		})
	}
}

// remote is an MCP server that looks like one on the internet,
// https://mcp.example.test, served on 127.0.0.1 through a client whose
// dialer sends that name there; its protected resource metadata (nil:
// none) and its authorization server metadata are the test's to write.
type remote struct {
	srv    *httptest.Server
	client *http.Client
	prm    func() any
	asm    func() any
}

const remoteURL = "https://mcp.example.test/mcp"

func newRemote(t *testing.T) *remote {
	r := &remote{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/", func(w http.ResponseWriter, _ *http.Request) {
		if r.prm == nil {
			http.NotFound(w, nil) // the 2025-03-26 way: no protected resource metadata
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.prm())
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		if r.asm == nil {
			http.NotFound(w, nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(r.asm())
	})
	r.srv = httptest.NewTLSServer(mux)
	t.Cleanup(r.srv.Close)
	tr := r.srv.Client().Transport.(*http.Transport).Clone()
	// httptest's certificate names example.com: verify every host as it.
	tr.TLSClientConfig = &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, ServerName: "example.com"}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "mcp.example.test:") {
			addr = r.srv.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	r.client = &http.Client{Transport: tr}
	return r
}

// authorizer returns an Authorizer of the remote server for cfg, whose
// configured hosts resolve to no address (no DNS in tests).
func (r *remote) authorizer(t *testing.T, cfg oauth.Config) *oauth.Authorizer {
	a, err := oauth.New(remoteURL, "remote", cfg, oauth.WithHTTPClient(r.client))
	if err != nil {
		t.Fatal(err)
	}
	oauth.SetResolver(a, func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no DNS here") })
	return a
}

// A server on the internet cannot steer discovery at the host's own
// machine or network: an authorization server, or an endpoint in its
// metadata, on a loopback or private address (localhost included, over
// https too) is refused, and no request reaches it.
func TestDiscoveryRefusesInternalTargetsForRemoteServer(t *testing.T) {
	plain := newCounter(t, false)
	secure := newCounter(t, true)
	securePort := secure.srv.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		name   string
		issuer string // the authorization server the metadata names
		token  string // the token endpoint its metadata names; "": its own
		legacy bool   // no protected resource metadata: the server's origin is the authorization server (2025-03-26)
	}{
		{"http loopback issuer", plain.srv.URL, "", false},
		{"https loopback issuer", secure.srv.URL, "", false},
		{"https localhost issuer", fmt.Sprintf("https://localhost:%d", securePort), "", false},
		{"private issuer", "https://10.1.2.3", "", false},
		{"metadata-server issuer", "https://169.254.169.254", "", false},
		{"loopback token endpoint", "https://mcp.example.test", secure.srv.URL + "/token", false},
		{"loopback token endpoint, 2025-03-26", "https://mcp.example.test", secure.srv.URL + "/token", true},
		// Not loopback: a name that merely starts with "127.".
		{"plain http on 127.attacker.example, 2025-03-26", "https://mcp.example.test", "http://127.attacker.example/token", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRemote(t)
			if !tc.legacy {
				r.prm = func() any {
					return map[string]any{"resource": remoteURL, "authorization_servers": []string{tc.issuer}}
				}
			}
			r.asm = func() any {
				token := tc.token
				if token == "" {
					token = tc.issuer + "/token"
				}
				return map[string]any{"issuer": tc.issuer, "authorization_endpoint": tc.issuer + "/authorize",
					"token_endpoint": token, "response_types_supported": []string{"code"},
					"code_challenge_methods_supported": []string{"S256"}}
			}
			before := plain.hits.Load() + secure.hits.Load()
			for _, cfg := range []oauth.Config{
				{Grant: oauth.ClientCredentials, ClientID: "svc", ClientSecret: "CLIENT-SECRET"},
				{ClientID: "app"},
			} {
				a := r.authorizer(t, cfg)
				var err error
				if a.Interactive() {
					_, err = a.Start(ctx(t))
				} else {
					_, err = a.Answered(request(t, remoteURL), unauthorized())
				}
				if !errors.Is(err, oauth.ErrEndpointRefused) {
					t.Errorf("%v: err = %v, want ErrEndpointRefused", cfg.Grant, err)
				}
				t.Logf("%v: %v", cfg.Grant, err)
			}
			if n := plain.hits.Load() + secure.hits.Load() - before; n != 0 {
				t.Fatalf("%d requests reached the steered target", n)
			}
		})
	}
}

// The default client's dial check judges the address a name resolved to:
// for a server on the internet no loopback or private address, for a
// server on a private network no loopback, for one on localhost anything.
func TestDialCheck(t *testing.T) {
	resolveTo := func(ip string) func(context.Context, string) ([]netip.Addr, error) {
		return func(context.Context, string) ([]netip.Addr, error) {
			if ip == "" {
				return nil, errors.New("no DNS here")
			}
			return []netip.Addr{netip.MustParseAddr(ip)}, nil
		}
	}
	for _, tc := range []struct {
		server, resolves string
		allowed, refused []string
	}{
		{"https://mcp.example.test/mcp", "", []string{"93.184.216.34:443"},
			[]string{"127.0.0.1:443", "[::1]:443", "10.0.0.1:443", "192.168.1.1:80", "169.254.169.254:80", "100.64.0.1:443", "[fd00::1]:443"}},
		{"https://mcp.corp.test/mcp", "10.0.0.5", []string{"93.184.216.34:443", "10.0.0.6:443"}, []string{"127.0.0.1:443"}},
		{"http://127.0.0.1:1/mcp", "", []string{"127.0.0.1:443", "10.0.0.1:443", "93.184.216.34:443"}, nil},
	} {
		a, err := oauth.New(tc.server, "s", oauth.Config{})
		if err != nil {
			t.Fatal(err)
		}
		oauth.SetResolver(a, resolveTo(tc.resolves))
		for _, addr := range tc.allowed {
			if err := oauth.DialCheck(ctx(t), a, addr); err != nil {
				t.Errorf("server %s: dial %s refused: %v", tc.server, addr, err)
			}
		}
		for _, addr := range tc.refused {
			if err := oauth.DialCheck(ctx(t), a, addr); !errors.Is(err, oauth.ErrEndpointRefused) {
				t.Errorf("server %s: dial %s = %v, want ErrEndpointRefused", tc.server, addr, err)
			}
		}
	}
}

// secretsAt returns how many token requests at srv carried the client
// secret, in the body or a Basic header.
func secretsAt(srv *oauthtest.Server, secret string) int {
	n := 0
	for _, tr := range srv.TokenRequests() {
		if tr.BasicSecret == secret || tr.Form.Get("client_secret") == secret {
			n++
		}
	}
	return n
}

const clientSecret = "CLIENT-SECRET-c9"

// The client secret goes to the authorization server seen first for the
// server, which is remembered in the token store; when the server names
// another, the client refuses with an error naming both, and that one gets
// nothing, not even a metadata request, until the host consents.
func TestIssuerRemembered(t *testing.T) {
	t.Run("file store", func(t *testing.T) { testIssuerRemembered(t, oauth.NewFileStore(t.TempDir()+"/tokens.json")) })
	t.Run("memory store", func(t *testing.T) { testIssuerRemembered(t, oauth.NewMemoryStore()) })
}

func testIssuerRemembered(t *testing.T, store oauth.TokenStore) {
	legit := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": clientSecret}})
	evil := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": clientSecret}})
	cfg := oauth.Config{Grant: oauth.ClientCredentials, ClientID: "svc", ClientSecret: clientSecret}
	a, err := oauth.New(legit.URL(), "s", cfg, oauth.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if retry, err := a.Answered(request(t, legit.URL()), unauthorized()); !retry || err != nil {
		t.Fatalf("first token: %v, %v", retry, err)
	}
	if e, _ := store.Load(ctx(t), "s"); e == nil || e.Issuer != legit.Issuer() {
		t.Fatalf("stored entry %v does not remember %s", e, legit.Issuer())
	}

	// The server now names another authorization server. A new
	// Authorizer on the same store (a new Manager, or, with the file
	// store, a restarted host) refuses it too.
	legit.SetAuthorizationServers(evil.Issuer())
	for i, a := range []*oauth.Authorizer{a, mustNew(t, legit.URL(), cfg, oauth.WithStore(store))} {
		req := request(t, legit.URL())
		if err := a.Authorize(req); err != nil {
			t.Fatal(err)
		}
		_, err := a.Answered(req, unauthorized())
		var ic *oauth.IssuerChangedError
		if !errors.Is(err, oauth.ErrIssuerChanged) || !errors.As(err, &ic) || ic.Known != legit.Issuer() || ic.Seen != evil.Issuer() {
			t.Fatalf("Authorizer %d: err = %v, want an IssuerChangedError from %s to %s", i, err, legit.Issuer(), evil.Issuer())
		}
		if !strings.Contains(err.Error(), legit.Issuer()) || !strings.Contains(err.Error(), evil.Issuer()) {
			t.Errorf("the error does not name both issuers: %v", err)
		}
	}
	if n := evil.AuthServerRequests(); n != 0 {
		t.Fatalf("%d requests reached the new authorization server before consent", n)
	}

	// The host consents.
	if err := a.TrustIssuer(ctx(t), evil.Issuer()); err != nil {
		t.Fatal(err)
	}
	if retry, err := a.Answered(request(t, legit.URL()), unauthorized()); !retry || err != nil {
		t.Fatalf("after TrustIssuer: %v, %v", retry, err)
	}
	if secretsAt(evil, clientSecret) != 1 {
		t.Errorf("the trusted issuer got the secret %d times, want 1", secretsAt(evil, clientSecret))
	}
}

func mustNew(t *testing.T, serverURL string, cfg oauth.Config, opts ...oauth.Option) *oauth.Authorizer {
	a, err := oauth.New(serverURL, "s", cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A pinned issuer is the only one the client talks to: a server naming
// another fails with ErrIssuerChanged and the other gets nothing; among
// several named, the pinned one is chosen.
func TestIssuerPinned(t *testing.T) {
	legit := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": clientSecret}})
	evil := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": clientSecret}})
	cfg := oauth.Config{Grant: oauth.ClientCredentials, ClientID: "svc", ClientSecret: clientSecret, Issuer: legit.Issuer()}

	legit.SetAuthorizationServers(evil.Issuer())
	_, err := mustNew(t, legit.URL(), cfg).Answered(request(t, legit.URL()), unauthorized())
	var ic *oauth.IssuerChangedError
	if !errors.As(err, &ic) || !ic.Pinned || ic.Known != legit.Issuer() || ic.Seen != evil.Issuer() {
		t.Fatalf("err = %v, want a pinned IssuerChangedError", err)
	}

	legit.SetAuthorizationServers(evil.Issuer(), legit.Issuer())
	if retry, err := mustNew(t, legit.URL(), cfg).Answered(request(t, legit.URL()), unauthorized()); !retry || err != nil {
		t.Fatalf("with the pinned issuer listed second: %v, %v", retry, err)
	}
	if n := evil.AuthServerRequests(); n != 0 {
		t.Errorf("%d requests reached the issuer that is not pinned", n)
	}
	if secretsAt(legit, clientSecret) != 1 {
		t.Errorf("the pinned issuer got the secret %d times, want 1", secretsAt(legit, clientSecret))
	}
	if err := (oauth.Config{Issuer: "http://auth.example.com"}).Validate(); err == nil {
		t.Error("a plain-http issuer off localhost was accepted")
	}
}

// No authorization starts with an authorization server that does not list
// S256, or publishes no metadata while the server publishes protected
// resource metadata: the user is never sent there, nothing is registered.
func TestPKCERequired(t *testing.T) {
	for _, tc := range []struct {
		name string
		prm  bool // the server publishes protected resource metadata
		asm  any  // the authorization server's metadata; nil: 404
	}{
		{"plain only", true, map[string]any{"code_challenge_methods_supported": []string{"plain"}}},
		{"no metadata", true, nil},
		{"empty 2025-03-26 metadata", false, map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var flows atomic.Int64
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			defer srv.Close()
			if tc.prm {
				mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
				})
			}
			mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
				m, ok := tc.asm.(map[string]any)
				if !ok {
					http.NotFound(w, r)
					return
				}
				if tc.prm {
					m["issuer"], m["authorization_endpoint"], m["token_endpoint"] = srv.URL, srv.URL+"/authorize", srv.URL+"/token"
					m["registration_endpoint"] = srv.URL + "/register"
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(m)
			})
			for _, p := range []string{"/authorize", "/token", "/register"} {
				mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { flows.Add(1); http.NotFound(w, r) })
			}
			a := mustNew(t, srv.URL+"/mcp", oauth.Config{})
			if _, err := a.Start(ctx(t)); !errors.Is(err, oauth.ErrPKCEUnsupported) {
				t.Fatalf("Start = %v, want ErrPKCEUnsupported", err)
			}
			if n := flows.Load(); n != 0 {
				t.Errorf("%d requests to the authorization, token or registration endpoint", n)
			}
		})
	}
}

// A forged redirect to the loopback listener (any web page can send the
// browser there) with an error and a state that is not the flow's leaves
// the listener waiting and the authorization open; the real redirect then
// completes it, and nothing of the forgery's text reaches an error.
func TestForgedErrorRedirectLeavesListenerWaiting(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	const redirectURI = "http://127.0.0.1:0/callback"
	a := mustNew(t, srv.URL(), oauth.Config{RedirectURI: redirectURI})
	l, err := oauth.ListenLoopback(redirectURI)
	if err != nil {
		t.Fatal(err)
	}
	authURL, err := a.Start(ctx(t))
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx(t), a.Complete) }()
	base := "http://" + l.Addr().String() + "/callback"
	browser := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, forged := range []string{
		"?error=access_denied&error_description=ATTACKER-TEXT&state=WRONG",
		"?error=access_denied&error_description=ATTACKER-TEXT",
		"?code=forged-code&state=WRONG",
	} {
		resp, err := browser.Get(base + forged)
		if err != nil {
			t.Fatalf("forged %s: %v", forged, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("forged %s: HTTP %d, want 400", forged, resp.StatusCode)
		}
		if a.Pending() == "" {
			t.Fatalf("forged %s ended the authorization", forged)
		}
	}
	real, err := oauthtest.Approve(ctx(t), authURL)
	if err != nil {
		t.Fatal(err)
	}
	_, query, _ := strings.Cut(real, "?")
	resp, err := browser.Get(base + "?" + query)
	if err != nil {
		t.Fatalf("the real redirect: %v (the listener stopped?)", err)
	}
	resp.Body.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v, want nil after the real redirect", err)
	}
	if a.Token(ctx(t)) == nil {
		t.Error("no token after the real redirect")
	}
}

// Errors that quote the server's URL mask its query values.
func TestDiscoveryErrorsRedactServerURL(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": "https://other.example/mcp?k=PRMSECRET", "authorization_servers": []string{srv.URL}})
	})
	a := mustNew(t, srv.URL+"/mcp?api_key=URLSECRET", oauth.Config{})
	_, err := a.Start(ctx(t))
	if !errors.Is(err, oauth.ErrResourceMismatch) {
		t.Fatalf("Start = %v, want ErrResourceMismatch", err)
	}
	if strings.Contains(err.Error(), "URLSECRET") || strings.Contains(err.Error(), "PRMSECRET") {
		t.Errorf("a URL secret in %v", err)
	}
}
