package fleet_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/fleet"
)

// TestUserValueInURLPathStaysOneSegment: a user id with a path in it
// ("mallory/../alice") is one percent-encoded path segment of the URL,
// and the requests of mallory's fleet reach the tenant named so, never
// alice's, on a real server that routes by the segment (Go's ServeMux,
// which cleans a path with ".." in it and redirects to alice's).
func TestUserValueInURLPathStaysOneSegment(t *testing.T) {
	var mu sync.Mutex
	tenants := map[string]int{}
	mux := http.NewServeMux()
	h := server.NewStreamableHTTPServer(userServer("tenant"))
	mux.HandleFunc("/tenants/{tenant}/mcp", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tenants[r.PathValue("tenant")]++
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { // after the pool's close (cleanups run last first)
		srv.CloseClientConnections()
		srv.Close()
	})
	tmpl := mustTemplate(t, `{"mcpServers": {"crm": {"url": "`+srv.URL+`/tenants/${user:id}/mcp?who=${user:id}"}}}`)
	cfg, err := tmpl.Config("mallory/../alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Servers["crm"].HTTP.URL, srv.URL+"/tenants/mallory%2F..%2Falice/mcp?who=mallory%2F..%2Falice"; got != want {
		t.Fatalf("url %s, want %s", got, want)
	}
	p := newPool(t, fleet.Config{Template: tmpl})
	ctx := testCtx(t)
	f := get(t, ctx, p, "mallory/../alice")
	defer f.Release()
	whoami := func() error {
		_, err := f.Manager().CallTool(ctx, "crm", "open_case_tenant", nil)
		return err
	}
	if err := whoami(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tenants["alice"] != 0 || tenants["mallory/../alice"] == 0 {
		t.Fatalf("requests by tenant: %v", tenants)
	}
}

// TestUserValueFitsItsField: Template.Config fits each value to where it
// stands, and refuses one that does not fit with an error naming the
// user, the server, the field and the variable, never the value.
func TestUserValueFitsItsField(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"envs/u1-id.env":    "API_KEY=placeholder\n", // what ParseTemplate reads
		"envs/bob.env":      "API_KEY=bobs\n",
		"secrets/alice.env": "API_KEY=alices-secret\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tmpl := mustTemplate(t, `{"mcpServers": {
		"files": {"command": "srv", "envFile": "`+filepath.ToSlash(dir)+`/envs/${user:id}.env"},
		"cli": {"command": "srv", "args": ["${user:arg}", "--name=${user:arg}"], "env": {"V": "${user:env}"}},
		"api": {"url": "https://${user:host}.example.com/mcp?q=${user:q}", "headers": {"Authorization": "Bearer ${user:token}"}}}}`)
	good := map[string]string{"arg": "plain", "env": "two\nlines", "host": "eu-1", "q": "a&b=c d/e", "token": "tok/en+=="}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	cfg, err := tmpl.Config("bob", good)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["files"].Stdio.Env["API_KEY"]; got != "bobs" {
		t.Errorf("bob's envFile gave API_KEY %q", got)
	}
	if got := cfg.Servers["api"].HTTP.URL; got != "https://eu-1.example.com/mcp?q=a%26b%3Dc%20d%2Fe" {
		t.Errorf("url %s", got)
	}
	if got := cfg.Servers["api"].HTTP.Headers["Authorization"]; got != "Bearer tok/en+==" {
		t.Errorf("header %q: a header value is sent as it is", got)
	}
	if got := cfg.Servers["cli"].Stdio; strings.Join(got.Args, " ") != "plain --name=plain" || got.Env["V"] != "two\nlines" {
		t.Errorf("cli %q %q", got.Args, got.Env["V"])
	}

	const secret = "s3cr3t"
	for _, tc := range []struct {
		name, user string
		values     map[string]string
		want       []string
	}{
		{"a step up in envFile", "../secrets/alice", good, []string{`(user "../secrets/alice")`, `server "files"`, `field "envFile"`, "${user:id}", `"/"`}},
		{"dot dot in envFile", "..", good, []string{`field "envFile"`, "${user:id}"}},
		{"a path in an argument", "bob", with("arg", "x/"+secret), []string{`server "cli"`, `field "args[0]"`, "${user:arg}"}},
		{"an option for an argument", "bob", with("arg", "--config="+secret), []string{`field "args[0]"`, "${user:arg}", `start with "-"`}},
		{"NUL in env", "bob", with("env", secret+"\x00"), []string{`field "env.V"`, "${user:env}", "NUL"}},
		{"a line break in a header", "bob", with("token", secret+"\r\nX-Admin: 1"), []string{`field "headers.Authorization"`, "${user:token}", "control"}},
		{"another domain as host", "bob", with("host", "evil.com/"+secret), []string{`server "api"`, `field "url"`, "${user:host}", "host"}},
		{"control character in a name", "bob\n", good, []string{`field "envFile"`, "control"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tmpl.Config(tc.user, tc.values)
			if err == nil {
				t.Fatalf("accepted: %+v", cfg.Servers)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), secret) || strings.Contains(err.Error(), "alices-secret") {
				t.Errorf("the error shows a value: %v", err)
			}
		})
	}
	// A variable where no value may stand is the template's mistake.
	_, err = fleet.ParseTemplate([]byte(`{"mcpServers": {"a": {"url": "${user:scheme}://x.example.com/mcp"}}}`))
	if err == nil || !strings.Contains(err.Error(), "scheme") || !strings.Contains(err.Error(), `field "url"`) {
		t.Errorf("a variable in the scheme: %v", err)
	}
}
