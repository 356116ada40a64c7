package client

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// TestHTTPMistakeSettlesAtOnce: before a server ever connected, an HTTP
// answer that no retry can fix settles it in PermanentlyFailed after the
// attempt that showed it, and the cause says the method, the URL with its
// secrets masked, the status, a short text of the body and what to check.
// An answer that a retry may fix (a 500) does not.
func TestHTTPMistakeSettlesAtOnce(t *testing.T) {
	status := func(code int, contentType, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(code)
			fmt.Fprint(w, body)
		})
	}
	for _, tt := range []struct {
		name    string
		handler http.Handler
		headers map[string]string
		mistake bool
		says    []string
	}{
		{"404 to both generations", http.NotFoundHandler(), nil, true,
			[]string{"http: POST ", "/mcp?key=xxxxx: 404 Not Found (text/plain: \"404 page not found\")",
				"GET (legacy SSE) too: 404 Not Found", "is the path right? MCP endpoints are usually /mcp"}},
		{"405 to both generations", status(405, "text/plain", "no"), nil, true,
			[]string{"405 Method Not Allowed", "GET (legacy SSE) too: 405"}},
		{"410 to both generations", status(410, "text/plain", "gone"), nil, true,
			[]string{"410 Gone", "too: 410"}},
		{"401 without credentials or OAuth", status(401, "text/plain", "unauthorized"), nil, true,
			[]string{"401 Unauthorized", `"headers": {"Authorization": "Bearer ${TOKEN}"}`}},
		{"403 without credentials or OAuth", status(403, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"forbidden here"}}`), nil, true,
			[]string{"403 Forbidden (application/json: \"forbidden here\")"}},
		{"501 to both generations", status(501, "text/plain", "not implemented"), nil, true,
			[]string{"501 Not Implemented", "too: 501"}},
		{"an HTML page of a failure", status(500, "text/html; charset=utf-8",
			"<html><head><title>500 &amp; Internal Error</title></head><body><h1>x</h1>"+strings.Repeat("<p>filler</p>", 500)+"</body></html>"), nil, false,
			[]string{`500 Internal Server Error (text/html: "500 & Internal Error")`, "the server failed; it is retried"}},
		{"401 with credentials: refused, not a mistake", status(401, "text/plain", "bad token"),
			map[string]string{"Authorization": "Bearer wrong"}, false,
			[]string{"401 Unauthorized", "the server refused the credentials in the headers"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			m := newTestManager(t, WithPolicy(slowPolicy))
			rec := record(m)
			mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL + "/mcp?key=SECRET", Headers: tt.headers}})
			var e Event
			if tt.mistake {
				e = rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.PermanentlyFailed })
				if e.Attempt != 1 {
					t.Errorf("settled at attempt %d, want 1", e.Attempt)
				}
			} else {
				e = rec.wait(t, func(e Event) bool { return e.Kind == EventRetry })
				if st, _ := m.Status("s"); st.State != lifecycle.Connecting {
					t.Errorf("state %s, want Connecting (retrying)", st.State)
				}
			}
			msg := e.Err.Error()
			t.Logf("%s", msg)
			for _, says := range tt.says {
				if !strings.Contains(msg, says) {
					t.Errorf("cause %q does not say %q", msg, says)
				}
			}
			if strings.Contains(msg, "SECRET") || strings.Contains(msg, "transport error") || strings.Contains(msg, "filler") {
				t.Errorf("cause %q quotes a secret, mcp-go's wrapper or the page", msg)
			}
			var he *mcphttp.Error
			if !errors.As(e.Err, &he) || errors.Is(e.Err, transport.ErrMisconfigured) != tt.mistake {
				t.Errorf("cause %#v: want an *http.Error, mistake %v", e.Err, tt.mistake)
			}
		})
	}
}

// TestHTTPWrongTransport: a URL that is a legacy SSE endpoint, given as
// streamable HTTP, is a mistake whose hint says which type to set.
func TestHTTPWrongTransport(t *testing.T) {
	sse := httpserver.Start(t, httpserver.MCPGoSSE)
	m := newTestManager(t, WithPolicy(slowPolicy))
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: sse.URL()}})
	err := m.WaitFor(testCtx(t), "s", lifecycle.Connected)
	if !errors.Is(err, ErrPermanentlyFailed) || !strings.Contains(err.Error(), `set "type": "sse"`) {
		t.Fatalf("WaitFor = %v; want PermanentlyFailed with the hint to set type sse", err)
	}
}

// TestHTTPUntrustedCertificate: a certificate the system does not trust is
// a mistake, said in a line.
func TestHTTPUntrustedCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // its side of the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	m := newTestManager(t, WithPolicy(slowPolicy))
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL + "/mcp"}})
	err := m.WaitFor(testCtx(t), "s", lifecycle.Connected)
	if !errors.Is(err, ErrPermanentlyFailed) || !errors.Is(err, transport.ErrMisconfigured) ||
		!strings.Contains(err.Error(), "tls: x509: certificate signed by unknown authority") ||
		strings.Count(err.Error(), "failed to send request") > 0 {
		t.Fatalf("WaitFor = %v; want a mistake saying the certificate is not trusted, once", err)
	}
}

// TestHTTP404AfterWorkingIsNoMistake: a server that worked and then answers
// 404 for a while (a rolling deploy) is an outage: it is retried, never
// settles in PermanentlyFailed, and is found again when it comes back.
func TestHTTP404AfterWorkingIsNoMistake(t *testing.T) {
	real := httpserver.Start(t, httpserver.MCPGo)
	var deploying atomic.Bool
	target, err := url.Parse(real.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.URL.Path = target.Path },
		FlushInterval: -1}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if deploying.Load() {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close) // after the Manager's own cleanup: it ends the stream
	m := newTestManager(t, WithPolicy(lifecycle.Policy{InitialInterval: 5 * time.Millisecond,
		MaxInterval: 20 * time.Millisecond, MaxAttempts: 3, Jitter: -1, ProbeInterval: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: front.URL + "/mcp"}})
	mustWait(t, m, "s", lifecycle.Connected)

	deploying.Store(true)
	if err := m.Reconnect(testCtx(t), "s"); err != nil { // as if the stream broke
		t.Fatal(err)
	}
	// Retried on the budget, with the 404 as the cause...
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventRetry && e.Attempt >= 2 })
	if !strings.Contains(e.Err.Error(), "404 Not Found") {
		t.Fatalf("retry cause %v; want the 404", e.Err)
	}
	deploying.Store(false) // ...until the deploy is done.
	mustWait(t, m, "s", lifecycle.Connected)
	for _, st := range states(rec.snapshot(), "s") {
		if st == lifecycle.PermanentlyFailed.String() {
			t.Fatalf("a server that worked settled as a mistake: %v", states(rec.snapshot(), "s"))
		}
	}
}
