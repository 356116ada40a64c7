package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// TestAdmin: the admin endpoint answers status, tools, call and watch to a
// request with the token, and refuses one without it, and one from a
// browser (an Origin header) even with it.
func TestAdmin(t *testing.T) {
	m := newManager(t, map[string]*upstream.Server{"a": upstream.New("a")})
	h := admin.New(m, "s3cret", admin.Options{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { // after the responses' bodies are closed
		ts.Close()
		h.Close()
	})
	do := func(method, path, body string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(testCtx(t), method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	if resp := do("GET", "/v1/status", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if resp := do("GET", "/v1/status", "", map[string]string{"Authorization": "Bearer s3cre"}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %d", resp.StatusCode)
	}
	if resp := do("GET", "/v1/status", "", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://localhost:3000"}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("from a browser: %d", resp.StatusCode)
	}

	var status struct{ Servers []admin.ServerReport }
	if err := json.NewDecoder(do("GET", "/v1/status", "", auth).Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if len(status.Servers) != 1 || status.Servers[0].Name != "a" || status.Servers[0].State != "Connected" || status.Servers[0].Tools == 0 {
		t.Fatalf("status %+v", status.Servers)
	}
	var tools struct{ Tools []admin.ToolReport }
	if err := json.NewDecoder(do("GET", "/v1/tools?q=echo+text&k=1", "", auth).Body).Decode(&tools); err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "a__echo" || !tools.Tools[0].ReadOnly {
		t.Fatalf("tools %+v", tools.Tools)
	}

	lines := bufio.NewScanner(do("POST", "/v1/call", `{"tool":"a__progress","arguments":{"steps":2}}`, auth).Body)
	var got []admin.StreamLine
	for lines.Scan() {
		var l admin.StreamLine
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if len(got) != 3 || got[0].Progress == nil || got[1].Progress == nil || got[2].Result == nil {
		t.Fatalf("call stream %+v", got)
	}

	watch := bufio.NewScanner(do("GET", "/v1/watch", "", auth).Body)
	var first admin.StreamLine
	if !watch.Scan() || json.Unmarshal(watch.Bytes(), &first) != nil || len(first.Servers) != 1 {
		t.Fatalf("watch starts with %s", watch.Text())
	}
	if err := m.Disable(testCtx(t), "a"); err != nil {
		t.Fatal(err)
	}
	for watch.Scan() {
		var l admin.StreamLine
		if err := json.Unmarshal(watch.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Event != nil && l.Event.Kind == "state" && l.Event.To == "Disabled" {
			return
		}
	}
	t.Fatalf("watch ended before the server was disabled: %v", watch.Err())
}

// templateServer is an MCP server with resource templates that answer
// with the server's name.
func templateServer(name string, templates ...string) *upstream.Server {
	s := &upstream.Server{MCPServer: server.NewMCPServer(name, "test", server.WithResourceCapabilities(true, true))}
	for _, tmpl := range templates {
		s.AddResourceTemplate(mcp.NewResourceTemplate(tmpl, tmpl),
			func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: name}}, nil
			})
	}
	return s
}

// TestStatusNamesQuarantinedTemplates: the status of a running serve says
// which resource templates its gateway does not serve, and whose they
// overlap: only the gateway knows, so the handler asks the one it was
// given.
func TestStatusNamesQuarantinedTemplates(t *testing.T) {
	m := newManager(t, map[string]*upstream.Server{
		"any":   templateServer("any", "{+any}"),
		"notes": templateServer("notes", "notes://{user}/diary"),
	})
	g := gateway.New(m)
	defer g.Close()
	if q := g.QuarantinedTemplates(); len(q) != 1 {
		t.Fatalf("the gateway quarantined %+v", q)
	}
	h := admin.New(m, "t", admin.Options{Gateway: g})
	defer h.Close()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/v1/status", nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var status struct{ Servers []admin.ServerReport }
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatal(err)
	}
	if q := status.Servers[0].QuarantinedTemplates; status.Servers[0].Name != "any" || len(q) != 1 || q[0] != "{+any} (overlaps notes's notes://{user}/diary)" {
		t.Fatalf("status: %+v", status.Servers)
	}
}

// TestAdminControl: a request with the token enables, disables and
// reconnects a server and gets its report back; an unknown server is 404;
// reload answers only when the serve gave a way to reload; tools with
// schema=1 carry each tool's input schema.
func TestAdminControl(t *testing.T) {
	m := newManager(t, map[string]*upstream.Server{"a": upstream.New("a")})
	reloads := 0
	h := admin.New(m, "t", admin.Options{Reload: func(context.Context) (client.ApplyResult, error) {
		reloads++
		return client.ApplyResult{Added: []string{"b"}}, nil
	}})
	defer h.Close()
	do := func(method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(testCtx(t), method, "http://127.0.0.1"+path, nil)
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, op := range []struct{ op, state string }{{"disable", "Disabled"}, {"enable", ""}, {"reconnect", ""}} {
		rec := do("POST", "/v1/servers/a/"+op.op)
		var got struct{ Server admin.ServerReport }
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Server.Name != "a" ||
			op.state != "" && got.Server.State != op.state {
			t.Fatalf("%s: %d %s", op.op, rec.Code, rec.Body)
		}
	}
	if err := m.WaitFor(testCtx(t), "a", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	if rec := do("POST", "/v1/servers/nope/disable"); rec.Code != http.StatusNotFound {
		t.Fatalf("an unknown server: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/v1/servers/a/explode"); rec.Code != http.StatusNotFound {
		t.Fatalf("an unknown operation: %d %s", rec.Code, rec.Body)
	}
	if rec := do("POST", "/v1/reload"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "added b") || reloads != 1 {
		t.Fatalf("reload: %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/v1/servers/a/disable"); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("a GET that would change something: %d", rec.Code)
	}
	var tools struct{ Tools []admin.ToolReport }
	if err := json.Unmarshal(do("GET", "/v1/tools?schema=1").Body.Bytes(), &tools); err != nil {
		t.Fatal(err)
	}
	for _, tr := range tools.Tools {
		if tr.Name == "a__echo" && strings.Contains(string(tr.InputSchema), `"text"`) && tr.Tool == "echo" {
			return
		}
	}
	t.Fatalf("no schema of a__echo in %+v", tools.Tools)
}
