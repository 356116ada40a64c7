package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// The secrets an HTTP server's spec holds: in the URL's query and in a
// header.
const (
	urlSecret    = "URLSECRET-m3"
	headerSecret = "HEADERSECRET-m3"
)

// A secret in the server URL's query, or in a configured header, appears
// in no error, event, status, stats or log line of the Manager, whatever
// failed: a call on a connection the server cut (net/http's *url.Error
// quotes the URL) or a dial the server redirected to another origin (which
// is refused, and reaches nothing there).
func TestURLSecretsShownNowhere(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))

	// A server that cuts every connection once told to.
	var cut atomic.Bool
	s := mcpserver.NewMCPServer("cut", "1.0.0", mcpserver.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(s)
	real := mcpserver.NewStreamableHTTPServer(s)
	cutter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if cut.Load() && req.Method == http.MethodPost {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		real.ServeHTTP(w, req)
	}))
	t.Cleanup(cutter.Close)
	t.Cleanup(func() { real.Shutdown(context.Background()) })

	// A server that redirects everything to another origin, which counts
	// what reaches it.
	var stolen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		stolen.Add(1)
		http.Error(w, "gotcha", http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/x", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	// After the servers: its Close (a cleanup) runs before theirs, which
	// wait for its open streams.
	m := newTestManager(t, WithLogger(logger))
	r := record(m)
	headers := map[string]string{"X-Api-Key": headerSecret}
	mustAdd(t, m, "cut", ServerSpec{HTTP: &mcphttp.Spec{URL: cutter.URL + "/mcp?api_key=" + urlSecret, Headers: headers}})
	mustWait(t, m, "cut", lifecycle.Connected)
	mustAdd(t, m, "redirected", ServerSpec{HTTP: &mcphttp.Spec{URL: redirector.URL + "/mcp?api_key=" + urlSecret, Headers: headers}})

	cut.Store(true)
	_, callErr := m.CallTool(testCtx(t), "cut", "echo", map[string]any{"message": "x"})
	if callErr == nil {
		t.Fatal("a call on a cut connection succeeded")
	}
	// The notification stream too: the Manager reconnects at once, and its
	// dials fail on the cut connections.
	cutter.CloseClientConnections()
	r.wait(t, func(e Event) bool {
		return e.Kind == EventState && e.Server == "redirected" && e.Err != nil &&
			errors.Is(e.Err, mcphttp.ErrCrossOriginRedirect)
	})
	r.wait(t, func(e Event) bool { return e.Kind == EventState && e.Server == "cut" && e.Err != nil })

	shown := []string{callErr.Error(), fmt.Sprintf("%+v", m.Stats())}
	for _, name := range []string{"cut", "redirected"} {
		st, _ := m.Status(name)
		if st.LastError == nil {
			t.Errorf("%s: no LastError to look at", name)
		}
		shown = append(shown, fmt.Sprintf("%v %+v", st, st), fmt.Sprint(st.LastError))
	}
	for _, ev := range r.snapshot() {
		shown = append(shown, fmt.Sprintf("%+v", ev), fmt.Sprint(ev.Err))
	}
	logMu.Lock()
	shown = append(shown, logs.String())
	logMu.Unlock()
	redacted := false
	for _, s := range shown {
		for _, secret := range []string{urlSecret, headerSecret} {
			if strings.Contains(s, secret) {
				t.Errorf("%s shown in: %s", secret, s)
			}
		}
		redacted = redacted || strings.Contains(s, "api_key=xxxxx")
	}
	if !redacted {
		t.Error("no redacted URL shown anywhere: the test saw no error that quotes the URL")
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("%d requests reached the other origin", n)
	}
}

// A config whose URL does not parse fails without quoting the URL's
// secrets; the oauth block takes the issuer to pin.
func TestConfigURLErrorAndIssuer(t *testing.T) {
	_, err := ParseConfig([]byte(`{"mcpServers":{"s":{"url":"http://127.0.0.1:1/%zz?api_key=` + urlSecret + `"}}}`))
	if err == nil || strings.Contains(err.Error(), urlSecret) {
		t.Errorf("ParseConfig = %v, want an error without the secret", err)
	}
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"s":{"url":"https://mcp.example.com/mcp?api_key=` + urlSecret +
		`","oauth":{"clientId":"c","issuer":"https://auth.example.com"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.Servers["s"]
	if sc.OAuth == nil || sc.OAuth.Issuer != "https://auth.example.com" {
		t.Errorf("oauth block: %v", sc.OAuth)
	}
	if strings.Contains(fmt.Sprint(sc), urlSecret) {
		t.Errorf("ServerConfig shows the URL secret: %v", sc)
	}
	_, err = ParseConfig([]byte(`{"mcpServers":{"s":{"url":"https://mcp.example.com/mcp","oauth":{"issuer":"http://auth.example.com"}}}}`))
	if err == nil || !strings.Contains(err.Error(), "oauth") {
		t.Errorf("a plain-http issuer off localhost: %v", err)
	}
}
