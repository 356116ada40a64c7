package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	fleets "github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/tsclient"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// whoServer is an MCP server over streamable HTTP whose tools say who
// called them: whoami returns the X-User and Authorization headers its
// request came with (the credentials the gateway sent for the person),
// delete_everything is a tool a policy closes.
func whoServer(t testing.TB) *httptest.Server {
	t.Helper()
	type hdrKey struct{}
	s := server.NewMCPServer("who", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Says who called.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h, _ := ctx.Value(hdrKey{}).(http.Header)
			return mcp.NewToolResultText("user=" + h.Get("X-User") + " auth=" + h.Get("Authorization")), nil
		})
	s.AddTool(mcp.NewTool("delete_everything", mcp.WithDescription("Deletes everything.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("deleted"), nil
		})
	h := server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, hdrKey{}, r.Header.Clone())
	}))
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

// team is a Team served on 127.0.0.1, with the test's authorization
// server.
type team struct {
	*gateway.Team
	as  *oauthtest.Server
	url string // the MCP endpoint, and the tokens' audience
	obs *recorder
}

// teamOptions configure startTeam.
type teamOptions struct {
	template   string // the config template, JSON
	policy     *gateway.Policy
	apiKeys    *gateway.APIKeys
	jwt        func(*gateway.JWTConfig)
	fleetOpts  []client.Option
	gatewayOps []gateway.Option
	// maxIdentities caps the identities up (and the pool's live fleets).
	maxIdentities int
	// quiet leaves the Observer out (benchmarks: the recorder keeps
	// every call).
	quiet bool
}

// groupsOf are the groups of the test's users, in their tokens.
var groupsOf = map[string][]string{"alice": {"eng"}, "bob": {"sales"}, "carol": {"eng", "admin"}}

// startTeam starts an authorization server that issues JWTs (the user is
// the X-Test-User header of the authorization request, or "user") and a
// Team that trusts it, serving o.template.
func startTeam(t testing.TB, o teamOptions) *team {
	t.Helper()
	as := oauthtest.Start(t, oauthtest.Options{JWT: true,
		User: func(r *http.Request) string {
			if u := r.Header.Get("X-Test-User"); u != "" {
				return u
			}
			return "user"
		},
		Claims: func(user string) map[string]any {
			return map[string]any{"groups": groupsOf[user]}
		}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	jcfg := gateway.JWTConfig{Issuers: []string{as.Issuer()}, Audience: url}
	if o.jwt != nil {
		o.jwt(&jcfg)
	}
	v, err := gateway.NewJWTValidator(jcfg)
	if err != nil {
		t.Fatal(err)
	}
	// {{TEAM}} in the template is the Team's origin (an upstream's OAuth
	// redirectUri names the Team's callback).
	tmpl, err := fleets.ParseTemplate([]byte(strings.ReplaceAll(o.template, "{{TEAM}}", strings.TrimSuffix(url, "/mcp"))))
	if err != nil {
		t.Fatal(err)
	}
	auths := []gateway.Authenticator{v}
	if o.apiKeys != nil {
		auths = append(auths, o.apiKeys)
	}
	rec := &recorder{}
	var obs gateway.Observer = rec
	if o.quiet {
		obs = gateway.NopObserver{}
	}
	tm, err := gateway.NewTeam(gateway.TeamConfig{
		Fleet:                fleets.Config{Template: tmpl, Options: o.fleetOpts, MaxLive: o.maxIdentities},
		MaxIdentities:        o.maxIdentities,
		Authenticators:       auths,
		Resource:             url,
		AuthorizationServers: []string{as.Issuer()},
		Policy:               o.policy,
		Options:              append([]gateway.Option{gateway.WithObserver(obs)}, o.gatewayOps...),
		Observer:             obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: tm, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tm.Shutdown(ctx)
		_ = srv.Shutdown(ctx)
		srv.Close()
		<-served
		tm.Close()
	})
	return &team{Team: tm, as: as, url: url, obs: rec}
}

// token returns a token of the authorization server's for user, for the
// team.
func (tm *team) token(t testing.TB, user string) string {
	return tm.as.Mint(t, map[string]any{"sub": user, "aud": tm.url, "groups": groupsOf[user]})
}

// dialAs connects an mcp-go client to the team with token, speaking
// version ("" for the newest).
func dialAs(t testing.TB, url, token, version string, opts ...mcpclient.ClientOption) *mcpclient.Client {
	t.Helper()
	c := connectAs(t, url, token, version, opts...)
	t.Cleanup(func() { c.Close() })
	return c
}

// connectAs is dialAs for a client the caller closes.
func connectAs(t testing.TB, url, token, version string, opts ...mcpclient.ClientOption) *mcpclient.Client {
	t.Helper()
	ctx := testCtx(t)
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithLogger(slog.New(slog.DiscardHandler))}
	if version != "" {
		topts = append(topts, transport.WithContinuousListening())
		opts = append(opts, mcpclient.WithProtocolVersion(version))
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "team-test", Version: "1"}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if version != "" {
		init.Params.ProtocolVersion = version
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return c
}

// recorder is a gateway.Observer that keeps what it is told.
type recorder struct {
	gateway.NopObserver
	mu        sync.Mutex
	calls     []gateway.CallInfo
	decisions []gateway.PolicyInfo
	refused   []string
	sessions  atomic.Int64
}

func (r *recorder) Call(c gateway.CallInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) PolicyDecision(p gateway.PolicyInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, p)
}

func (r *recorder) AuthRefused(a gateway.AuthInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, a.Reason)
}

func (r *recorder) SessionStarted(gateway.SessionInfo) { r.sessions.Add(1) }
func (r *recorder) SessionEnded(gateway.SessionInfo)   { r.sessions.Add(-1) }

func (r *recorder) denials() []gateway.PolicyInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []gateway.PolicyInfo
	for _, d := range r.decisions {
		if !d.Decision.Allowed {
			out = append(out, d)
		}
	}
	return out
}

// whoTemplate is a template of one server, the whoServer at url, to which
// each person's requests carry their own id.
func whoTemplate(url string) string {
	return fmt.Sprintf(`{"mcpServers": {"who": {"url": %q, "headers": {"X-User": "${user:id}"}}}}`, url)
}

// postAs sends body to url with the headers, and returns the response.
func postAs(t testing.TB, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestTeamUnauthenticated: a request without a token gets 401 with the
// challenge that names the protected resource metadata (RFC 9728), which
// names the authorization server and the gateway as the resource; the
// TypeScript SDK's client without a token cannot connect.
func TestTeamUnauthenticated(t *testing.T) {
	who := whoServer(t)
	tm := startTeam(t, teamOptions{template: whoTemplate(who.URL + "/mcp")})
	resp := postAs(t, tm.url, initializeBody, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d, want 401", resp.StatusCode)
	}
	origin := strings.TrimSuffix(tm.url, "/mcp")
	want := fmt.Sprintf(`Bearer resource_metadata=%q`, origin+"/.well-known/oauth-protected-resource/mcp")
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		r, err := http.Get(origin + path)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		err = json.NewDecoder(r.Body).Decode(&meta)
		r.Body.Close()
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d, %v", path, r.StatusCode, err)
		}
		if meta.Resource != tm.url || !slices.Equal(meta.AuthorizationServers, []string{tm.as.Issuer()}) ||
			!slices.Equal(meta.BearerMethods, []string{"header"}) {
			t.Fatalf("GET %s: %+v", path, meta)
		}
	}
	if _, err := tsclient.TryHTTPWithToken(t, tm.url, ""); err == nil || !strings.Contains(err.Error(), "a bearer token is required") {
		t.Fatalf("the TypeScript client without a token: %v, want the 401's error", err)
	}
	if got := tm.obs.refused; len(got) < 2 || got[0] != "missing" {
		t.Fatalf("refusals told the Observer: %v", got)
	}
}

// TestTeamRefusesTokens: a token for another audience, from an issuer not
// trusted, expired, signed by a key the issuer does not publish, without
// an expiry, or not a JWT at all is refused with 401 and invalid_token
// saying why, to an mcp-go client and to the TypeScript SDK's; a good one
// is taken.
func TestTeamRefusesTokens(t *testing.T) {
	who := whoServer(t)
	tm := startTeam(t, teamOptions{template: whoTemplate(who.URL + "/mcp")})
	now := time.Now()
	for _, tc := range []struct {
		name, reason, why string
		token             func() string
	}{
		{"wrong audience", "audience", "not for this gateway", func() string {
			return tm.as.Mint(t, map[string]any{"sub": "alice", "aud": "http://127.0.0.1:1/other"})
		}},
		{"no audience", "audience", "not for this gateway", func() string {
			return tm.as.Mint(t, map[string]any{"sub": "alice"})
		}},
		{"wrong issuer", "issuer", "is not trusted", func() string {
			return tm.as.Mint(t, map[string]any{"sub": "alice", "aud": tm.url, "iss": "https://evil.example.com"})
		}},
		{"expired", "expired", "it expired at", func() string {
			return tm.as.Mint(t, map[string]any{"sub": "alice", "aud": tm.url,
				"iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix()})
		}},
		{"unknown key", "unknown_key", "does not publish", func() string {
			return tm.as.MintUnknownKey(t, map[string]any{"sub": "alice", "aud": tm.url})
		}},
		{"no expiry", "invalid", "no expiry", func() string {
			return tm.as.Mint(t, map[string]any{"sub": "alice", "aud": tm.url, "exp": nil})
		}},
		{"not a JWT", "invalid", "not a JWT", func() string { return "opaque-token-of-someone" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token()
			resp := postAs(t, tm.url, initializeBody, map[string]string{"Authorization": "Bearer " + tok})
			body, _ := io.ReadAll(resp.Body)
			ch := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) ||
				!strings.Contains(ch, "resource_metadata=") || !strings.Contains(string(body), tc.why) {
				t.Fatalf("HTTP %d, WWW-Authenticate %q, body %s; want 401, invalid_token, %q", resp.StatusCode, ch, body, tc.why)
			}
			tm.obs.mu.Lock()
			last := tm.obs.refused[len(tm.obs.refused)-1]
			tm.obs.mu.Unlock()
			if last != tc.reason {
				t.Fatalf("the Observer was told %q, want %q", last, tc.reason)
			}
			// mcp-go's client gets the 401 too.
			tr, err := transport.NewStreamableHTTP(tm.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
			if err != nil {
				t.Fatal(err)
			}
			c := mcpclient.NewClient(tr)
			defer c.Close()
			if err := c.Start(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Initialize(testCtx(t), mcp.InitializeRequest{}); err == nil {
				t.Fatal("mcp-go's client initialized with the token")
			}
		})
	}
	// The TypeScript SDK's client, with a token of each kind refused, and
	// with a good one.
	if _, err := tsclient.TryHTTPWithToken(t, tm.url, tm.as.MintUnknownKey(t, map[string]any{"sub": "alice", "aud": tm.url})); err == nil {
		t.Fatal("the TypeScript client connected with a token signed by an unknown key")
	}
	if _, err := tsclient.TryHTTPWithToken(t, tm.url, tm.as.Mint(t, map[string]any{"sub": "alice", "aud": "http://127.0.0.1:1/other"})); err == nil {
		t.Fatal("the TypeScript client connected with a token for another audience")
	}
	ts := tsclient.StartHTTPWithToken(t, tm.url, tm.token(t, "alice"))
	res, err := ts.Call(testCtx(t), "who__whoami", nil)
	if err != nil || !strings.HasPrefix(res.Text(), "user=alice ") {
		t.Fatalf("alice's call with a good token: %+v %v", res, err)
	}
}

// TestTeamOAuthFlowTypeScriptClient: the TypeScript SDK's client does the
// OAuth flow itself against the test authorization server, from the
// gateway's 401 (protected resource metadata, authorization server
// metadata, registration, authorization code with PKCE, the resource
// indicator), and then calls as the person it authorized as.
func TestTeamOAuthFlowTypeScriptClient(t *testing.T) {
	who := whoServer(t)
	tm := startTeam(t, teamOptions{template: whoTemplate(who.URL + "/mcp")})
	ts := tsclient.StartHTTPOAuth(t, tm.url, "alice")
	res, err := ts.Call(testCtx(t), "who__whoami", nil)
	if err != nil || !strings.HasPrefix(res.Text(), "user=alice ") {
		t.Fatalf("call: %+v %v", res, err)
	}
	var resources []string
	for _, tr := range tm.as.TokenRequests() {
		if tr.Grant == "authorization_code" {
			resources = append(resources, tr.Form.Get("resource"))
		}
	}
	if !slices.Equal(resources, []string{tm.url}) {
		t.Fatalf("the client's token requests named the resources %q, want [%s]", resources, tm.url)
	}
	if n := tm.as.Registrations(); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}
	if ids := tm.Identities(); !slices.Equal(ids, []string{"alice"}) {
		t.Fatalf("identities up: %v", ids)
	}
}

// TestTeamIdentitiesApart: Alice and Bob on one gateway each get their own
// fleet: their own credentials reach the upstream, each sees only the
// tools the policy opens to them, and one's session id means nothing with
// the other's token.
func TestTeamIdentitiesApart(t *testing.T) {
	who := whoServer(t)
	policy := &gateway.Policy{Rules: []gateway.PolicyRule{
		{Name: "eng", Groups: []string{"eng"}},
		{Name: "sales", Groups: []string{"sales"}, Tools: client.ToolFilter{Deny: []string{"delete_*"}}},
	}}
	tm := startTeam(t, teamOptions{template: whoTemplate(who.URL + "/mcp"), policy: policy})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			alice := dialAs(t, tm.url, tm.token(t, "alice"), p.version)
			bob := dialAs(t, tm.url, tm.token(t, "bob"), p.version)
			if got := toolNames(t, alice); !slices.Equal(got, []string{"who__delete_everything", "who__whoami"}) {
				t.Fatalf("alice's tools: %v", got)
			}
			if got := toolNames(t, bob); !slices.Equal(got, []string{"who__whoami"}) {
				t.Fatalf("bob's tools: %v", got)
			}
			if got := mustCall(t, alice, "who__whoami", nil); !strings.HasPrefix(got, "user=alice ") {
				t.Fatalf("alice's call reached the upstream as %q", got)
			}
			if got := mustCall(t, bob, "who__whoami", nil); !strings.HasPrefix(got, "user=bob ") {
				t.Fatalf("bob's call reached the upstream as %q", got)
			}
			_, _, err := callText(testCtx(t), bob, "who__delete_everything", nil)
			if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), `rule "sales"`) ||
				!strings.Contains(err.Error(), `tools.deny "delete_*"`) {
				t.Fatalf("bob's call of a denied tool: %v, want an error saying it was denied, by which rule", err)
			}
		})
	}
	// Bob's session id with Alice's token is unknown.
	resp := postAs(t, tm.url, initializeBody, map[string]string{"Authorization": "Bearer " + tm.token(t, "bob")})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("bob's initialize: HTTP %d, session %q", resp.StatusCode, sid)
	}
	resp = postAs(t, tm.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{
		"Authorization": "Bearer " + tm.token(t, "alice"), "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob's session with alice's token: HTTP %d, want 404", resp.StatusCode)
	}
	if d := tm.obs.denials(); len(d) == 0 || d[0].Identity != "bob" || d[0].Decision.Rule != "sales" {
		t.Fatalf("denials told the Observer: %+v", d)
	}
}

// TestTeamPolicyEditOpenSessions: a policy replaced while sessions are open
// applies to them: their lists change (they are told list_changed) and a
// call of a tool the new policy closes is denied. How long it took is
// logged; the bound is generous (it waits on the notification).
func TestTeamPolicyEditOpenSessions(t *testing.T) {
	who := whoServer(t)
	open := &gateway.Policy{Rules: []gateway.PolicyRule{{Name: "everyone", Identities: []string{"*"}}}}
	tm := startTeam(t, teamOptions{template: whoTemplate(who.URL + "/mcp"), policy: open})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			if err := tm.SetPolicy(open); err != nil {
				t.Fatal(err)
			}
			c := dialAs(t, tm.url, tm.token(t, "alice"), p.version)
			n := collect(c)
			if p.version == "" {
				listen(t, c, n, mcp.SubscriptionFilter{ToolsListChanged: true})
			}
			after := n.count()
			mustCall(t, c, "who__delete_everything", nil)
			closed := &gateway.Policy{Rules: []gateway.PolicyRule{{Name: "no deleting", Identities: []string{"*"},
				Tools: client.ToolFilter{Deny: []string{"*/delete_*"}}}}}
			start, edited := time.Now(), n.count()
			if err := tm.SetPolicy(closed); err != nil {
				t.Fatal(err)
			}
			_, _, err := callText(testCtx(t), c, "who__delete_everything", nil)
			if err == nil || !strings.Contains(err.Error(), `denied`) || !strings.Contains(err.Error(), `rule "no deleting"`) {
				t.Fatalf("a call right after the edit: %v, want denied", err)
			}
			// A list_changed of the fleet connecting may come first: the
			// listing after some list_changed shows the edit.
			for !slices.Equal(toolNames(t, c), []string{"who__whoami"}) {
				after = n.wait(t, after, method(mcp.MethodNotificationToolsListChanged))
			}
			n.wait(t, edited, method(mcp.MethodNotificationToolsListChanged)) // the client was told
			took := time.Since(start)
			t.Logf("policy edit to the list changed in an open session: %v", took)
			if took > 10*time.Second {
				t.Fatalf("the edit took %v to reach the open session", took)
			}
		})
	}
}

// TestTeamAPIKeys: API keys from a 0600 file name identities, with groups
// and claims; an unknown key is refused, and so is a file others can read.
func TestTeamAPIKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	aliceKey := strings.Repeat("a1", 16)
	file := fmt.Sprintf(`{"keys": [
		{"identity": "alice", "groups": ["eng"], "key": %q, "claims": {"team": "core"}},
		{"identity": "bob", "sha256": "%x"}
	]}`, aliceKey, sha256sum("b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"))
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := gateway.LoadAPIKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	who := whoServer(t)
	tm := startTeam(t, teamOptions{template: whoTemplate(who.URL + "/mcp"), apiKeys: keys})
	alice := dialAs(t, tm.url, aliceKey, "")
	if got := mustCall(t, alice, "who__whoami", nil); !strings.HasPrefix(got, "user=alice ") {
		t.Fatalf("alice by API key: %q", got)
	}
	bob := dialAs(t, tm.url, "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2", "")
	if got := mustCall(t, bob, "who__whoami", nil); !strings.HasPrefix(got, "user=bob ") {
		t.Fatalf("bob by API key: %q", got)
	}
	resp := postAs(t, tm.url, initializeBody, map[string]string{"Authorization": "Bearer " + strings.Repeat("z", 32)})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unknown key: HTTP %d", resp.StatusCode)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.LoadAPIKeys(path); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a key file others can read: %v", err)
	}
	short := filepath.Join(dir, "short.json")
	if err := os.WriteFile(short, []byte(`{"keys": [{"identity": "x", "key": "short"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.LoadAPIKeys(short); err == nil || !strings.Contains(err.Error(), `identity "x"`) {
		t.Fatalf("a short key: %v", err)
	}
}

// TestTeamUpstreamDown: one upstream killed leaves the calls to the others
// at 0 errors; the killed one's tools stay listed, marked stale while it is
// down, and its calls fail with the error that says why.
func TestTeamUpstreamDown(t *testing.T) {
	inv := faultserver.Command(faultserver.ModeNormal)
	env, _ := json.Marshal(inv.Env)
	args, _ := json.Marshal(inv.Args)
	entry := fmt.Sprintf(`{"command": %q, "args": %s, "env": %s}`, inv.Path, args, env)
	who := whoServer(t)
	tmpl := fmt.Sprintf(`{"mcpServers": {"a": %s, "b": %s, "who": {"url": %q}}}`, entry, entry, who.URL+"/mcp")
	tm := startTeam(t, teamOptions{template: tmpl, fleetOpts: []client.Option{client.WithTimeouts(client.Timeouts{Ready: 200 * time.Millisecond})}})
	c := dialAs(t, tm.url, tm.token(t, "alice"), "2025-11-25")
	n := collect(c)
	mustCall(t, c, "a__echo", map[string]any{"text": "x"})
	mustCall(t, c, "b__echo", map[string]any{"text": "x"})

	// Calls to b in a loop while a is killed and the who server stops.
	ctx, cancel := context.WithCancel(testCtx(t))
	var calls, errs atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, isErr, err := callText(testCtx(t), c, "b__echo", map[string]any{"text": "y"})
				calls.Add(1)
				if err != nil || isErr {
					errs.Add(1)
				}
			}
		})
	}
	g := tm.Gateway("alice")
	evs, stop := g.Manager().Events(0)
	defer stop()
	pid := mustCall(t, c, "a__pid", nil)
	var p int
	fmt.Sscan(pid, &p)
	proc, err := os.FindProcess(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	who.CloseClientConnections()
	who.Close() // down for good: Reconnecting, then failed

	// The who server's tools stay listed, marked stale: the client is told
	// list_changed when they are marked.
	for after := 0; ; {
		res, err := c.ListTools(testCtx(t), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		stale := ""
		for _, tool := range res.Tools {
			if tool.Name == "who__whoami" && tool.Meta != nil {
				if m, ok := tool.Meta.AdditionalFields[gateway.MetaStale].(map[string]any); ok {
					stale, _ = m["state"].(string)
				}
			}
		}
		if stale != "" {
			t.Logf("who__whoami listed as stale (%s)", stale)
			break
		}
		after = n.wait(t, after, method(mcp.MethodNotificationToolsListChanged))
	}
	text, isErr, err := callText(testCtx(t), c, "who__whoami", nil)
	if err != nil || !isErr || !strings.Contains(text, "server who") {
		t.Fatalf("a call of the stale tool: %q %v %v, want an error result naming the server", text, isErr, err)
	}
	cancel()
	wg.Wait()
	// Not WaitFor(Connected): right after the kill the Manager may not
	// have seen the loss yet, and a is still Connected at generation 1.
	waitStatus(t, g.Manager(), evs, "a", func(st client.ServerStatus) bool {
		return st.State == lifecycle.Connected && st.Generation >= 2
	})
	mustCall(t, c, "a__echo", map[string]any{"text": "back"}) // restarted
	if calls.Load() == 0 || errs.Load() != 0 {
		t.Fatalf("calls to b while a was killed: %d, errors %d; want 0 errors", calls.Load(), errs.Load())
	}
	t.Logf("calls to b while a was killed and who stopped: %d, errors 0", calls.Load())
}

// waitStatus waits until the status of server name satisfies ok, checking
// it again at each event of m (evs, subscribed before what is awaited).
func waitStatus(t *testing.T, m *client.Manager, evs <-chan client.Event, name string, ok func(client.ServerStatus) bool) {
	t.Helper()
	ctx := testCtx(t)
	for {
		st, err := m.Status(name)
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return
		}
		select {
		case <-evs:
		case <-ctx.Done():
			t.Fatalf("server %s: still %s at generation %d: %v", name, st.State, st.Generation, ctx.Err())
		}
	}
}

func sha256sum(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// urlElicitations is an mcp-go client that takes URL-mode elicitations.
type urlElicitations struct{}

func (urlElicitations) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// TestTeamUpstreamAuthorizationPerPerson: an upstream that wants OAuth is
// authorized by each person for themselves. Alice, whose client takes
// URL-mode elicitations, is sent to the upstream's authorization server
// by one (-32042, as 2025-11-25 has it), comes back to the Team's callback,
// and her calls then work; Bob, who has not authorized, gets a tool error
// that gives his own authorization's link, never Alice's tokens.
func TestTeamUpstreamAuthorizationPerPerson(t *testing.T) {
	up := oauthtest.Start(t, oauthtest.Options{})
	tmpl := fmt.Sprintf(`{"mcpServers": {"up": {"url": %q, "oauth": {"redirectUri": "{{TEAM}}/oauth/callback"}}}}`, up.URL())
	tm := startTeam(t, teamOptions{template: tmpl, fleetOpts: []client.Option{client.WithTimeouts(client.Timeouts{Ready: time.Second})}})
	ctx := testCtx(t)

	alice := dialAs(t, tm.url, tm.token(t, "alice"), "2025-11-25", mcpclient.WithElicitationHandler(urlElicitations{}),
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: &struct{}{}}}))
	n := collect(alice)
	// No one has authorized the server: its tools are not known; one tool
	// says so.
	if got := toolNames(t, alice); !slices.Equal(got, []string{"up__authorize"}) {
		t.Fatalf("alice's tools before she authorized: %v", got)
	}
	_, _, err := callText(ctx, alice, "up__authorize", nil)
	var required mcp.URLElicitationRequiredError
	if !errors.As(err, &required) || len(required.Elicitations) != 1 || required.Elicitations[0].Mode != mcp.ElicitationModeURL {
		t.Fatalf("alice's call: %v, want a URL elicitation", err)
	}
	aliceURL := required.Elicitations[0].URL
	redirect, err := oauthtest.Approve(ctx, aliceURL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(redirect, strings.TrimSuffix(tm.url, "/mcp")+"/oauth/callback?") {
		t.Fatalf("the upstream sent alice back to %s", redirect)
	}
	resp, err := http.Get(redirect)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "You authorized up") {
		t.Fatalf("the callback: HTTP %d %s", resp.StatusCode, page)
	}
	for after := 0; !slices.Contains(toolNames(t, alice), "up__echo"); {
		after = n.wait(t, after, method(mcp.MethodNotificationToolsListChanged))
	}
	if got := mustCall(t, alice, "up__echo", map[string]any{"message": "hi"}); got != "hi" {
		t.Fatalf("alice's call after she authorized: %q", got)
	}

	// Bob does not see Alice's catalog (an entry with an oauth block keeps
	// its catalog per person): he has the one tool that says he must
	// authorize, and its error gives his own link.
	bob := dialAs(t, tm.url, tm.token(t, "bob"), "2025-11-25")
	if got := toolNames(t, bob); !slices.Equal(got, []string{"up__authorize"}) {
		t.Fatalf("bob's tools before he authorized: %v, want only up__authorize (alice's catalog is hers)", got)
	}
	text, isErr, err := callText(ctx, bob, "up__authorize", nil)
	if err != nil || !isErr || !strings.Contains(text, "needs you to authorize") {
		t.Fatalf("bob's call: %q %v %v, want an error result with his link", text, isErr, err)
	}
	i := strings.Index(text, up.Issuer()+"/authorize?")
	if i < 0 {
		t.Fatalf("bob's error gives no link: %q", text)
	}
	bobURL := strings.Fields(text[i:])[0]
	if state(t, bobURL) == state(t, aliceURL) || state(t, bobURL) == "" {
		t.Fatalf("bob was given alice's authorization: %s", bobURL)
	}
	// Alice's token is still hers alone: her calls work, Bob's do not.
	mustCall(t, alice, "up__echo", map[string]any{"message": "again"})
	if text, isErr, err := callText(ctx, bob, "up__authorize", nil); err != nil || !isErr {
		t.Fatalf("bob's second call: %q %v %v, want an error result", text, isErr, err)
	}
	// A callback of a state the gateway did not give is refused.
	resp, err = http.Get(strings.TrimSuffix(tm.url, "/mcp") + "/oauth/callback?code=x&state=made-up")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a callback of an unknown state: HTTP %d", resp.StatusCode)
	}
}

// state is the state parameter of an authorization URL.
func state(t testing.TB, u string) string {
	t.Helper()
	p, err := neturl.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("state")
}
