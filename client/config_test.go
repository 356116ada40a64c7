package client

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport/stdio"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

func env(vars map[string]string) ConfigOption {
	return WithLookupEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
}

func TestParseConfigForms(t *testing.T) {
	vars := map[string]string{"TOKEN": "s3cr3t-token", "HOME_DIR": "/home/me", "EMPTY": ""}
	claude := `{"mcpServers": {
		"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME_DIR}"],
		          "env": {"API_KEY": "${TOKEN}"}, "cwd": "${WORK:-/tmp}"},
		"search": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},
		           "timeout": "45s", "toolPrefix": "s", "required": true,
		           "reconnect": {"initialInterval": "1s", "maxAttempts": -1, "probeInterval": "off"}},
		"legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "disabled": true, "timeout": 2.5},
		"blank": {"command": "x", "env": {"V": "${EMPTY:-fallback}"}}
	}}`
	vscode := `{"inputs": [], "servers": {"files": {"type": "stdio", "command": "npx", "args": ["${HOME_DIR}"]},
		"remote": {"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"}}}`

	cfg, err := ParseConfig([]byte(claude), env(vars), WithSource("claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := cfg.Servers["files"]
	if files.Type != "stdio" || files.Stdio.Args[2] != "/home/me" || files.Stdio.Env["API_KEY"] != "s3cr3t-token" || files.Stdio.Dir != "/tmp" {
		t.Fatalf("files: %#v", files.key())
	}
	search := cfg.Servers["search"]
	if search.HTTP.Headers["Authorization"] != "Bearer s3cr3t-token" || search.Timeout != 45*time.Second ||
		!search.Required || search.Reconnect.MaxAttempts != -1 || search.Reconnect.ProbeInterval != -1 ||
		search.Reconnect.InitialInterval != time.Second {
		t.Fatalf("search: %s %+v", search.key(), search.Reconnect)
	}
	if l := cfg.Servers["legacy"]; !l.Disabled || l.Timeout != 2500*time.Millisecond {
		t.Fatalf("legacy: %s", l.key())
	}
	if cfg.Servers["blank"].Stdio.Env["V"] != "fallback" {
		t.Fatal("${EMPTY:-fallback} did not use the default for an empty variable")
	}
	spec, err := cfg.Servers["legacy"].Spec()
	if err != nil || spec.HTTP == nil || spec.HTTP.Kind != mcphttp.SSE || !spec.Disabled {
		t.Fatalf("legacy spec: %+v %v", spec, err)
	}

	cfg, err = ParseConfig([]byte(vscode), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers["files"].Stdio.Args[0] != "/home/me" || cfg.Servers["remote"].Type != "streamable-http" {
		t.Fatalf("vscode form: %v", cfg.Servers)
	}
}

func TestParseConfigLimits(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"a": {"command": "x", "limits": {
		"maxMessageBytes": "${SIZE}", "maxCatalogItems": 500, "maxCatalogPages": "off",
		"notificationRate": 50.5, "maxServerRequests": 2, "serverRequestRate": "off"}},
		"b": {"command": "x"}}}`), env(map[string]string{"SIZE": "1.5MiB"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{MaxMessageBytes: 3 << 19, MaxCatalogItems: 500, MaxCatalogPages: -1,
		NotificationRate: 50.5, MaxServerRequests: 2, ServerRequestRate: -1}
	if got := cfg.Servers["a"].Limits; got != want {
		t.Fatalf("limits %+v, want %+v", got, want)
	}
	spec, err := cfg.Servers["a"].Spec()
	if err != nil || spec.Limits != want {
		t.Fatalf("spec limits %+v, %v", spec.Limits, err)
	}
	// A server without limits takes the manager's, and those the defaults.
	m := New(WithLimits(Limits{MaxCatalogItems: 7, NotificationRate: -1}))
	defer m.Close()
	got := Limits{}.over(m.opts.limits)
	if got.MaxCatalogItems != 7 || got.NotificationRate != -1 || got.MaxMessageBytes != DefaultMaxMessageBytes {
		t.Fatalf("manager limits %+v", got)
	}
	if got := want.over(m.opts.limits); got != want {
		t.Fatalf("a spec's own limits were overridden: %+v", got)
	}
	// A change of limits is a change of the entry: Apply restarts it.
	if cfg.Servers["a"].key() == (ServerConfig{Type: "stdio", ServerSpec: ServerSpec{Stdio: &stdio.Spec{Command: "x"}}}).key() {
		t.Fatal("limits are not part of the config key")
	}
}

func TestParseConfigErrorsNameFileServerAndField(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"not json", `{`, []string{"bad.json", "line 1, column 2", "invalid JSON", "unexpected end"}},
		{"not an object", `[]`, []string{"bad.json", "not a JSON object"}},
		{"no servers", `{}`, []string{"mcpServers", "missing"}},
		{"unknown top key", `{"mcpServers": {}, "extra": 1}`, []string{`field "extra"`, "unknown key"}},
		{"unknown server key", `{"mcpServers": {"a": {"command": "x", "comand": "y"}}}`,
			[]string{`server "a"`, `field "comand"`, "unknown key"}},
		{"wrong type", `{"mcpServers": {"a": {"command": 3}}}`, []string{`server "a"`, `field "command"`, "must be a string"}},
		{"bad args", `{"mcpServers": {"a": {"command": "x", "args": "y"}}}`, []string{`field "args"`}},
		{"bad timeout", `{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, []string{`field "timeout"`, `"soon"`}},
		{"unknown transport", `{"mcpServers": {"a": {"type": "carrier-pigeon", "url": "x"}}}`, []string{`field "type"`, "carrier-pigeon"}},
		{"neither", `{"mcpServers": {"a": {}}}`, []string{`server "a"`, "command", "missing"}},
		{"unset variable", `{"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}}`,
			[]string{`field "env.K"`, "NOPE is not set"}},
		{"bad policy", `{"mcpServers": {"a": {"command": "x", "reconnect": {"multiplier": 0.5, "retries": 3}}}}`,
			[]string{`field "reconnect.retries"`, "multiplier"}},
		{"http with command", `{"mcpServers": {"a": {"type": "http", "url": "http://x", "command": "y"}}}`,
			[]string{"do not apply"}},
		{"bad limit", `{"mcpServers": {"a": {"command": "x", "limits": {"maxMessageBytes": "lots", "maxTools": 3}}}}`,
			[]string{`field "limits.maxMessageBytes"`, `"lots"`, `field "limits.maxTools"`, "unknown key"}},
		{"zero limit", `{"mcpServers": {"a": {"command": "x", "limits": {"notificationRate": 0}}}}`,
			[]string{`field "limits.notificationRate"`, `"off"`}},
		{"url without a scheme", `{"mcpServers": {"a": {"url": "localhost:8080/mcp"}, "b": {"url": "127.0.0.1:8080/mcp"}}}`,
			[]string{`server "a": field "url"`, `server "b": field "url"`, "begin it with http:// or https://"}},
		{"url of another scheme", `{"mcpServers": {"a": {"url": "ftp://x/mcp"}}}`,
			[]string{`server "a": field "url"`, `scheme "ftp" is not http or https`}},
		{"two servers, two errors", `{"mcpServers": {"a": {"command": 1}, "b": {"url": 2}}}`,
			[]string{`server "a"`, `server "b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json), env(nil), WithSource("bad.json"))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "bad.json") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestConfigNeverShowsSecrets(t *testing.T) {
	const secret = "hunter2-very-secret"
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"s": {"command": "srv", "env": {"API_KEY": "`+secret+`"}},
		"h": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer `+secret+`"}},
		"o": {"url": "http://127.0.0.1:1/mcp", "oauth": {"clientId": "id", "clientSecret": "${SECRET}", "scopes": ["a", "b"], "callbackPort": 8123}}}}`),
		env(map[string]string{"SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var out []string
	for name, sc := range cfg.Servers {
		spec, err := sc.Spec()
		if err != nil {
			t.Fatal(err)
		}
		logger.Info("server", "name", name, "config", sc, "spec", spec)
		out = append(out, fmt.Sprintf("%v %+v %#v %s %q", sc, sc, sc, sc, sc), fmt.Sprintf("%v %+v", spec, spec))
		if spec.Stdio != nil {
			out = append(out, fmt.Sprintf("%v %+v", *spec.Stdio, *spec.Stdio))
		}
		if spec.HTTP != nil {
			out = append(out, fmt.Sprintf("%v %+v", *spec.HTTP, *spec.HTTP))
		}
		if spec.OAuth != nil {
			out = append(out, fmt.Sprintf("%v %+v %#v %s", *spec.OAuth, *spec.OAuth, spec.OAuth, spec.OAuth))
			if spec.OAuth.ClientSecret != secret {
				t.Errorf("oauth clientSecret = %q, want ${SECRET} expanded", spec.OAuth.ClientSecret)
			}
		}
	}
	// A bad private key is refused without being shown.
	if _, err := ParseConfig([]byte(`{"mcpServers": {"p": {"url": "http://127.0.0.1:1/mcp",
		"oauth": {"grant": "client_credentials", "clientId": "id", "privateKey": "`+secret+`"}}}}`), env(nil)); err == nil {
		t.Error("a bad private key was accepted")
	} else {
		out = append(out, err.Error())
	}
	out = append(out, fmt.Sprintf("%v %+v", cfg, *cfg), logs.String())

	// A manager that fails to reach them must not leak them either.
	m := newTestManager(t, WithLogger(logger), WithTimeouts(Timeouts{Ready: 50 * time.Millisecond}),
		WithPolicy(lifecycle.Policy{MaxAttempts: 1, InitialInterval: time.Millisecond, ProbeInterval: -1}))
	rec := record(m)
	if _, err := m.Apply(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s", "h", "o"} {
		mustWait(t, m, name, lifecycle.PermanentlyFailed)
		_, err := m.CallTool(testCtx(t), name, "x", nil)
		st, _ := m.Status(name)
		out = append(out, fmt.Sprint(err), fmt.Sprintf("%+v", st))
	}
	m.Close()
	<-rec.done
	for _, e := range rec.snapshot() {
		out = append(out, fmt.Sprintf("%+v", e))
	}
	out = append(out, logs.String())
	for _, s := range out {
		if strings.Contains(s, secret) {
			t.Fatalf("secret leaked in: %s", s)
		}
	}
	if !strings.Contains(strings.Join(out, "\n"), "API_KEY") {
		t.Fatal("the env name should still be shown, redacted of its value")
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x", "bogus": 1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("err = %v, want the path and the field", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("missing file accepted")
	}
}

// configFor builds a config of in-process servers by giving each entry a
// command that the test's dialer hook maps to a test server.
func TestApplyChangesOnlyWhatChanged(t *testing.T) {
	servers := map[string]*testServer{"a": newTestServer(), "b": newTestServer(), "c": newTestServer()}
	m := newTestManager(t)
	// Config entries are stdio; the test swaps their dial for in-process
	// servers keyed by command, so nothing is spawned.
	m.opts.dialOverride = func(spec ServerSpec) Dialer {
		if spec.Stdio == nil {
			return nil
		}
		return servers[spec.Stdio.Command].dialer()
	}
	rec := record(m)
	apply := func(js, want string) {
		t.Helper()
		cfg, err := ParseConfig([]byte(js), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.Apply(testCtx(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.String(); got != want {
			t.Fatalf("Apply did %q, want %q", got, want)
		}
	}
	apply(`{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}`, "added a, b")
	mustWait(t, m, "a", lifecycle.Connected)
	mustWait(t, m, "b", lifecycle.Connected)

	// Add c, change b's args, keep a: a must not blip.
	apply(`{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "args": ["v2"]}, "c": {"command": "c", "required": true}}}`,
		"added c; restarted b")
	mustWait(t, m, "b", lifecycle.Connected)
	// Disable a, remove b.
	apply(`{"mcpServers": {"a": {"command": "a", "disabled": true}, "c": {"command": "c"}}}`, "removed b; disabled a")
	if st, _ := m.Status("a"); st.State != lifecycle.Disabled {
		t.Fatalf("a: %v", st.State)
	}
	if _, err := m.Status("b"); err == nil {
		t.Fatal("b was not removed")
	}
	// Enable a again, change nothing else: c must not blip.
	apply(`{"mcpServers": {"a": {"command": "a"}, "c": {"command": "c"}}}`, "enabled a")
	mustWait(t, m, "a", lifecycle.Connected)

	rec.waitStates(t, "c", "Connecting", "Connected")
	rec.waitStates(t, "a", "Connecting", "Connected", "Disabling", "Disabled", "Connecting", "Connected")
	// b's changed entry is reconfigured in its slot, as after a crash.
	rec.waitStates(t, "b", "Connecting", "Connected", "Reconnecting", "Connected", "Closed")
	if st, _ := m.Status("c"); st.Generation != 1 || st.State != lifecycle.Connected {
		t.Fatalf("c blipped: %+v", st)
	}
	if n := servers["c"].Dials(); n != 1 {
		t.Fatalf("c dialled %d times across Applies that did not change it", n)
	}

	// A server added with Add is not Apply's to manage.
	mustAdd(t, m, "manual", ServerSpec{Dialer: newTestServer().dialer()})
	cfg, _ := ParseConfig([]byte(`{"mcpServers": {"manual": {"command": "a"}}}`), env(nil))
	if res, err := m.Apply(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "manual") ||
		!slices.Equal(res.Failed, []string{"manual"}) {
		t.Fatalf("Apply over an Add-ed server: %v, %v", res, err)
	}
	if st, _ := m.Status("manual"); st.State == lifecycle.Closed {
		t.Fatal("Apply touched a server it does not manage")
	}
}

func TestApplyRequiredServerThatCannotConnect(t *testing.T) {
	m := newTestManager(t, WithPolicy(lifecycle.Policy{MaxAttempts: 1, InitialInterval: time.Millisecond, ProbeInterval: -1}))
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"gone": {"command": "/nonexistent/mcp-server", "required": true},
		"fine": {"command": "/nonexistent/other"}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = m.Apply(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), `server "gone"`) || !strings.Contains(err.Error(), "required server: server permanently failed") || strings.Contains(err.Error(), `"fine"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestParseConfigOAuth(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"a": {"type": "http", "url": "https://mcp.example.com/mcp",
		      "oauth": {"clientId": "${ID}", "clientSecret": "${SECRET}", "scopes": "read write", "callbackPort": "${PORT:-8123}"}},
		"b": {"url": "https://mcp.example.com/mcp", "oauth": {"grant": "client_credentials", "clientId": "svc", "clientSecret": "x",
		      "scopes": ["read"], "tokenEndpointAuthMethod": "client_secret_post"}},
		"c": {"type": "sse", "url": "https://mcp.example.com/sse", "oauth": {"redirectUri": "https://app.example.com/cb",
		      "clientMetadataUrl": "https://app.example.com/client.json", "clientName": "app"}}}}`),
		env(map[string]string{"ID": "my-id", "SECRET": "my-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cfg.Servers["a"].Spec()
	if o := a.OAuth; o == nil || o.ClientID != "my-id" || o.ClientSecret != "my-secret" ||
		strings.Join(o.Scopes, ",") != "read,write" || o.CallbackPort != 8123 || o.Redirect() != "http://127.0.0.1:8123/callback" {
		t.Errorf("a: %+v", a.OAuth)
	}
	b, _ := cfg.Servers["b"].Spec()
	if o := b.OAuth; o == nil || o.Grant != oauth.ClientCredentials || o.TokenEndpointAuthMethod != "client_secret_post" {
		t.Errorf("b: %+v", b.OAuth)
	}
	c, _ := cfg.Servers["c"].Spec()
	if o := c.OAuth; o == nil || c.HTTP.Kind != mcphttp.SSE || o.Redirect() != "https://app.example.com/cb" || o.ClientName != "app" {
		t.Errorf("c: %+v", c.OAuth)
	}

	for _, tc := range []struct{ name, json, want string }{
		{"unknown key", `{"mcpServers": {"a": {"url": "http://x/mcp", "oauth": {"clientID": "x"}}}}`, `field "oauth.clientID"`},
		{"stdio", `{"mcpServers": {"a": {"command": "x", "oauth": {}}}}`, "oauth does not apply to a stdio server"},
		{"grant", `{"mcpServers": {"a": {"url": "http://x/mcp", "oauth": {"grant": "password"}}}}`, `field "oauth.grant"`},
		{"cc without secret", `{"mcpServers": {"a": {"url": "http://x/mcp", "oauth": {"grant": "client_credentials", "clientId": "x"}}}}`, "clientSecret"},
		{"port", `{"mcpServers": {"a": {"url": "http://x/mcp", "oauth": {"callbackPort": "high"}}}}`, `field "oauth.callbackPort"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// WithVariables answers ${kind:NAME} with the host's values, used as they
// are (never expanded again); a variable without a value is an error
// naming the field and the variable, not a value; Identity tells entries
// apart by what they make of the server, and shows no secret.
func TestParseConfigHostVariables(t *testing.T) {
	const secret = "tok-of-alice-secret"
	const tmpl = `{"mcpServers": {"gh": {"url": "https://mcp.example.com/${user:org}/mcp",
		"headers": {"Authorization": "Bearer ${user:token}", "X-Home": "${HOME}"}}}}`
	values := map[string]string{"org": "acme", "token": secret + "${HOME}"}
	lookup := func(name string) (string, bool) { v, ok := values[name]; return v, ok }
	cfg, err := ParseConfig([]byte(tmpl), env(map[string]string{"HOME": "/home/host"}), WithVariables("user", lookup))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Servers["gh"].HTTP
	if h.URL != "https://mcp.example.com/acme/mcp" || h.Headers["Authorization"] != "Bearer "+secret+"${HOME}" ||
		h.Headers["X-Home"] != "/home/host" {
		t.Fatalf("expanded: %s %v", h.URL, len(h.Headers))
	}
	id := cfg.Servers["gh"].Identity()
	if len(id) != 64 || strings.Contains(id, secret) {
		t.Fatalf("identity %q", id)
	}
	values["org"] = "other"
	cfg2, err := ParseConfig([]byte(tmpl), env(map[string]string{"HOME": "/home/host"}), WithVariables("user", lookup))
	if err != nil {
		t.Fatal(err)
	}
	if cfg2.Servers["gh"].Identity() == id {
		t.Error("another URL, the same identity")
	}

	delete(values, "token")
	_, err = ParseConfig([]byte(tmpl), env(map[string]string{"HOME": "/home/host"}), WithVariables("user", lookup), WithSource("t.json"))
	if err == nil || !strings.Contains(err.Error(), `field "headers.Authorization"`) || !strings.Contains(err.Error(), "${user:token} has no value") {
		t.Fatalf("missing value: %v", err)
	}
	// Without WithVariables the kind is unknown, as before.
	if _, err := ParseConfig([]byte(tmpl), env(nil)); err == nil || !strings.Contains(err.Error(), "${user:…} is not supported") {
		t.Fatalf("without WithVariables: %v", err)
	}
}

// Token exchange (RFC 8693, enterprise-managed authorization) from the
// config file's oauth block: the IdP's endpoint and client, and the file
// the ID token is read from at each exchange; mistakes name the field,
// an unknown key suggests the known one, the IdP secret is never shown,
// and a change of the ID token file restarts the server.
func TestParseConfigTokenExchange(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "id_token")
	if err := os.WriteFile(tokenFile, []byte("eyJ.id.token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const entry = `{"mcpServers": {"crm": {"url": "https://crm.example.com/mcp", "oauth": {"grant": "token_exchange",
		"clientId": "crm-client", "idpTokenEndpoint": "https://idp.example.com/token", "idpClientId": "host",
		"idpClientSecret": "${IDP_SECRET}", "idTokenFile": "%s"}}}}`
	const secret = "idp-secret-value"
	cfg, err := ParseConfig([]byte(fmt.Sprintf(entry, tokenFile)), env(map[string]string{"IDP_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Servers["crm"]
	o := sc.OAuth
	if o.Grant != oauth.TokenExchange || o.ClientID != "crm-client" || o.IdPTokenEndpoint != "https://idp.example.com/token" ||
		o.IdPClientID != "host" || o.IdPClientSecret != secret || o.IDTokenFile != tokenFile {
		t.Fatalf("oauth: %v", o)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", sc, sc, sc, o); strings.Contains(s, secret) {
		t.Errorf("the IdP secret is shown: %s", s)
	}
	other, err := ParseConfig([]byte(fmt.Sprintf(entry, tokenFile+"2")), env(map[string]string{"IDP_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if other.Servers["crm"].key() == sc.key() {
		t.Error("another ID token file, the same restart key")
	}

	for _, tc := range []struct{ name, oauth, want string }{
		{"no token file", `{"grant": "token_exchange", "clientId": "c", "idpTokenEndpoint": "https://idp/t", "idpClientId": "h"}`,
			`idTokenFile: missing`},
		{"no endpoint", `{"grant": "token_exchange", "clientId": "c", "idpClientId": "h", "idTokenFile": "/x"}`,
			"idpTokenEndpoint: missing"},
		{"misspelt", `{"grant": "token_exchange", "clientId": "c", "idpTokenEndpiont": "https://idp/t"}`,
			`did you mean "idpTokenEndpoint"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(`{"mcpServers": {"a": {"url": "https://x/mcp", "oauth": `+tc.oauth+`}}}`), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
