package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// A Conn whose server needs the user fails its handshake with
// ErrNeedsAuthorization, not a transport failure; once authorized, every
// request of a new Conn carries the token.
func TestDialNeedsAuthorization(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	a, err := oauth.New(srv.URL(), "s", oauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var conn *mcphttp.Conn
	handshake := func() error {
		c, err := mcphttp.Dial(ctx(t), mcphttp.Spec{URL: srv.URL()}, mcphttp.WithAuthorizer(a))
		if err != nil {
			return err
		}
		conn = c
		defer c.Close(context.Background())
		cl := mcpclient.NewClient(c.Transport())
		if err := cl.Start(ctx(t)); err != nil {
			return err
		}
		_, err = cl.Initialize(ctx(t), mcp.InitializeRequest{})
		return err
	}
	err = handshake()
	var na *oauth.NeedsAuthorizationError
	if !errors.As(err, &na) || na.URL == "" || !errors.Is(err, oauth.ErrNeedsAuthorization) {
		t.Fatalf("handshake without a token: %v, want *NeedsAuthorizationError", err)
	}
	if conn.Fatal(err) && !conn.NotSent(err) {
		t.Errorf("a request refused for its credentials is a transport failure: %v", err)
	}
	if a.Pending() != na.URL {
		t.Errorf("Pending = %q, want the error's URL", a.Pending())
	}
	redirect, err := oauthtest.Approve(ctx(t), na.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Complete(ctx(t), redirect); err != nil {
		t.Fatal(err)
	}
	if a.Pending() != "" {
		t.Error("the authorization is still pending after Complete")
	}
	if err := handshake(); err != nil {
		t.Fatalf("handshake with the token: %v", err)
	}
}

// Protected resource metadata naming another resource is refused, and no
// authorization is attempted.
func TestResourceMismatchRefused(t *testing.T) {
	var hits []string
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": "https://evil.example.com/mcp", "authorization_servers": []string{ts.URL}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.URL.Path)
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+ts.URL+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	a, err := oauth.New(ts.URL+"/mcp", "s", oauth.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Start(ctx(t))
	if !errors.Is(err, oauth.ErrResourceMismatch) || !strings.Contains(err.Error(), "evil.example.com") {
		t.Fatalf("Start = %v, want ErrResourceMismatch naming the resource", err)
	}
	for _, h := range hits {
		if strings.Contains(h, "authorization-server") || strings.Contains(h, "register") {
			t.Errorf("went on to %s after the mismatch", h)
		}
	}
}

// Client credentials with private_key_jwt: the assertion is signed ES256
// and the token is had without a user. The test authorization server does
// not verify assertions, so this checks the request's shape.
func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	var form map[string][]string
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": ts.URL, "token_endpoint": ts.URL + "/token",
			"authorization_endpoint": ts.URL + "/authorize", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		form = r.PostForm
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"cc-token","token_type":"Bearer","expires_in":3600}`)
	})
	a, err := oauth.New(ts.URL+"/mcp", "s", oauth.Config{Grant: oauth.ClientCredentials, ClientID: "svc", PrivateKey: pemKey})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, ts.URL+"/mcp", nil).WithContext(ctx(t))
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
	if retry, err := a.Answered(req, resp); !retry || err != nil {
		t.Fatalf("Answered = %v, %v; want a retry with a new token", retry, err)
	}
	if got := form["grant_type"]; len(got) != 1 || got[0] != "client_credentials" {
		t.Errorf("grant_type = %v", got)
	}
	if got := form["client_assertion_type"]; len(got) != 1 || got[0] != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		t.Errorf("client_assertion_type = %v", got)
	}
	parts := strings.Split(strings.Join(form["client_assertion"], ""), ".")
	if len(parts) != 3 {
		t.Fatalf("client_assertion is not a JWS: %v", form["client_assertion"])
	}
	if _, ok := form["client_secret"]; ok {
		t.Error("a client secret was sent with private_key_jwt")
	}
	r2 := httptest.NewRequest(http.MethodPost, ts.URL+"/mcp", nil)
	if err := a.Authorize(r2); err != nil || r2.Header.Get("Authorization") != "Bearer cc-token" {
		t.Errorf("Authorize: %v, header %q", err, r2.Header.Get("Authorization"))
	}
}

func TestParseRedirect(t *testing.T) {
	for _, tc := range []struct {
		in              string
		code, state     string
		fromURL, hasErr bool
		denied          string
	}{
		{in: "http://127.0.0.1:8/callback?code=abc&state=xyz", code: "abc", state: "xyz", fromURL: true},
		{in: "?code=abc&state=xyz", code: "abc", state: "xyz", fromURL: true},
		{in: "code=abc&state=xyz", code: "abc", state: "xyz", fromURL: true},
		{in: "  abc  ", code: "abc"},
		{in: "http://127.0.0.1:8/callback?error=access_denied&error_description=no", denied: "access_denied: no", fromURL: true},
		{in: "http://127.0.0.1:8/callback?state=xyz", hasErr: true},
		{in: "", hasErr: true},
	} {
		r, err := oauth.ParseRedirect(tc.in)
		if (err != nil) != tc.hasErr || r.Code != tc.code || r.State != tc.state || r.FromURL != tc.fromURL || r.Error != tc.denied {
			t.Errorf("ParseRedirect(%q) = %+v, %v", tc.in, r, err)
		}
		if strings.Contains(fmt.Sprintf("%v %+v %#v %s", r, r, r, r), "abc") {
			t.Errorf("the code shows in %v", r)
		}
	}
}

// The file store keeps entries across stores on the same path, with mode
// 0600, replacing the file whole.
func TestFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "tokens.json")
	e := &oauth.Entry{Resource: "https://x/mcp", Token: &oauth.Token{AccessToken: "at-secret", RefreshToken: "rt-secret"},
		Client: &oauth.Client{ID: "c", Secret: "cs-secret", Registered: true}}
	if err := oauth.NewFileStore(path).Save(ctx(t), "a", e); err != nil {
		t.Fatal(err)
	}
	if err := oauth.NewFileStore(path).Save(ctx(t), "b", e); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v, mode %v", err, fi.Mode())
	}
	got, err := oauth.NewFileStore(path).Load(ctx(t), "a")
	if err != nil || got == nil || got.Token.RefreshToken != "rt-secret" || got.Client.Secret != "cs-secret" {
		t.Fatalf("Load = %v, %v", got, err)
	}
	if err := oauth.NewFileStore(path).Delete(ctx(t), "a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := oauth.NewFileStore(path).Load(ctx(t), "a"); got != nil {
		t.Error("deleted entry still there")
	}
	if got, _ := oauth.NewFileStore(path).Load(ctx(t), "b"); got == nil {
		t.Error("the other entry went with the deleted one")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// Config, Token, Client, Entry print without their secrets, whatever the
// verb, and so do their logs.
func TestSecretsRedacted(t *testing.T) {
	cfg := oauth.Config{ClientID: "id", ClientSecret: "cs-secret", IdPClientSecret: "idp-secret"}
	e := &oauth.Entry{Resource: "https://x/mcp", Token: &oauth.Token{AccessToken: "at-secret", RefreshToken: "rt-secret"},
		Client: &oauth.Client{ID: "c", Secret: "cs-secret"}}
	var logs strings.Builder
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "cfg", cfg, "entry", e, "token", e.Token, "client", e.Client)
	out := fmt.Sprintf("%v %+v %#v %s %q | %v %+v %#v | %v %+v | %v %+v | %s", cfg, cfg, cfg, cfg, cfg, e, e, e, e.Token, *e.Token, e.Client, *e.Client, logs.String())
	for _, s := range []string{"cs-secret", "idp-secret", "at-secret", "rt-secret"} {
		if strings.Contains(out, s) {
			t.Errorf("%s shown: %s", s, out)
		}
	}
}

// A redirect shows neither its code nor its state.
func ExampleParseRedirect() {
	r, err := oauth.ParseRedirect("http://127.0.0.1:33418/callback?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj")
	fmt.Println(r, err, r.FromURL)
	r, _ = oauth.ParseRedirect("SplxlOBeZQQYbYS6WxSbIA") // pasted by a user on a headless host
	fmt.Println(r, r.FromURL)
	// Output:
	// redirect(code=<redacted> state=<redacted>) <nil> true
	// redirect(code=<redacted> state=<redacted>) false
}
