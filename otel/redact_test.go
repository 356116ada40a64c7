package otel_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// A span's status and its events quote no URL secret: neither the server
// URL's query, in a transport's error, nor a URL in the server's own
// error message.
func TestSpansCarryNoURLSecret(t *testing.T) {
	const secret = "SPANSECRET-o5"
	tel := newTelemetry(t)

	// An HTTP server whose connections are cut once the test says so.
	var cut atomic.Bool
	s := server.NewMCPServer("cut", "1.0.0", server.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(s)
	real := server.NewStreamableHTTPServer(s)
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cut.Load() && r.Method == http.MethodPost {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		real.ServeHTTP(w, r)
	}))
	t.Cleanup(cutter.Close)
	t.Cleanup(func() { real.Shutdown(context.Background()) })

	// A server whose tool fails with an error that quotes a URL with a key.
	leaky := server.NewMCPServer("leaky", "1.0.0", server.WithToolCapabilities(false))
	leaky.AddTool(mcp.NewTool("fetch"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("upstream https://api.example.com/v1?key=" + secret + " failed")
	})
	ls := inproc.New(leaky)

	m := newManager(t, tel)
	addConnected(t, m, tel, "cut", client.ServerSpec{HTTP: &mcphttp.Spec{URL: cutter.URL + "/mcp?api_key=" + secret}})
	addConnected(t, m, tel, "leaky", client.ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) {
		c, err := ls.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}})
	ctx := testCtx(t)
	cut.Store(true)
	if _, err := m.CallTool(ctx, "cut", "echo", map[string]any{"message": "x"}); err == nil {
		t.Fatal("a call on a cut connection succeeded")
	}
	if _, err := m.CallTool(ctx, "leaky", "fetch", nil); err == nil {
		t.Fatal("the leaky tool succeeded")
	}
	checkSpan := func(s sdktrace.ReadOnlySpan) {
		t.Helper()
		shown := []string{s.Status().Description}
		for _, kv := range s.Attributes() {
			shown = append(shown, kv.Value.Emit())
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				shown = append(shown, kv.Value.Emit())
			}
		}
		for _, x := range shown {
			if strings.Contains(x, secret) {
				t.Errorf("span %s shows the secret: %s", s.Name(), x)
			}
		}
		if s.Status().Description == "" {
			t.Errorf("span %s has no status description to look at", s.Name())
		}
		t.Logf("%s: %q", s.Name(), s.Status().Description)
	}
	for _, s := range tel.spans.Ended() {
		if s.Name() == "tools/call echo" || s.Name() == "tools/call fetch" {
			checkSpan(s)
		}
	}
	if !strings.Contains(tel.span(t, "tools/call fetch").Status().Description, "key=xxxxx") {
		t.Error("the leaky tool's span status is not the server's message, redacted")
	}
}
