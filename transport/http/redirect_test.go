package http_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// The secrets a request of these tests carries, one per place a credential
// rides: the URL's query, a configured header, the Authorizer's token.
const (
	urlSecret    = "URLSECRET-q7"
	headerSecret = "HEADERSECRET-h7"
	tokenSecret  = "AT-SECRET-t7"
)

// bearer is an Authorizer that puts a fixed token on every request it is
// asked to, and counts them.
type bearer struct {
	token string
	calls atomic.Int64
}

func (b *bearer) Authorize(req *nethttp.Request) error {
	b.calls.Add(1)
	req.Header.Set("Authorization", "Bearer "+b.token)
	return nil
}

func (b *bearer) Answered(*nethttp.Request, *nethttp.Response) (bool, error) { return false, nil }

// witness is a server at another origin that records every request that
// reaches it: headers and body.
type witness struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newWitness(t *testing.T) *witness {
	w := &witness{}
	w.srv = httptest.NewServer(nethttp.HandlerFunc(func(rw nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		var b strings.Builder
		r.Header.Write(&b)
		w.mu.Lock()
		w.seen = append(w.seen, r.Method+" "+r.URL.String()+"\n"+b.String()+"\n"+string(body))
		w.mu.Unlock()
		nethttp.Error(rw, "gotcha", nethttp.StatusTeapot)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// url is the witness's URL under the name localhost: another origin than
// 127.0.0.1's.
func (w *witness) url() string {
	return strings.Replace(w.srv.URL, "127.0.0.1", "localhost", 1) + "/steal?next=1"
}

func (w *witness) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

// A server (or an open redirect in front of it) that answers with a
// redirect to another origin gets the request refused: nothing reaches the
// other origin, neither the token, nor the configured header, nor the
// body, whatever the redirect's status; and the error, the Conn's error
// and the log quote none of the secrets.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	for _, code := range []int{nethttp.StatusMovedPermanently, nethttp.StatusFound, nethttp.StatusSeeOther,
		nethttp.StatusTemporaryRedirect, nethttp.StatusPermanentRedirect} {
		t.Run(nethttp.StatusText(code), func(t *testing.T) {
			other := newWitness(t)
			redirector := httptest.NewServer(nethttp.HandlerFunc(func(rw nethttp.ResponseWriter, r *nethttp.Request) {
				nethttp.Redirect(rw, r, other.url(), code)
			}))
			defer redirector.Close()

			var logs bytes.Buffer
			auth := &bearer{token: tokenSecret}
			spec := mcphttp.Spec{URL: redirector.URL + "/mcp?api_key=" + urlSecret, Headers: map[string]string{"X-Api-Key": headerSecret}}
			ctx := testCtx(t)
			conn, err := mcphttp.Dial(ctx, spec, mcphttp.WithAuthorizer(auth),
				mcphttp.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			if err != nil {
				t.Fatal(err)
			}
			cl := mcpclient.NewClient(conn.Transport())
			err = cl.Start(ctx)
			if err == nil {
				_, err = cl.Initialize(ctx, mcp.InitializeRequest{})
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_ = cl.Close()
			_ = conn.Close(closeCtx)

			if err == nil {
				t.Fatal("the handshake succeeded through a redirect to another origin")
			}
			if !errors.Is(err, mcphttp.ErrCrossOriginRedirect) {
				t.Errorf("error %v does not wrap ErrCrossOriginRedirect", err)
			}
			if got := other.requests(); len(got) != 0 {
				t.Fatalf("%d requests reached the other origin; the first:\n%s", len(got), got[0])
			}
			if auth.calls.Load() == 0 {
				t.Error("the Authorizer was never asked: the test does not show the token staying home")
			}
			var ue *url.Error
			if errors.As(err, &ue) && strings.Contains(ue.URL, urlSecret) {
				t.Errorf("errors.As *url.Error gives the raw URL %s", ue.URL)
			}
			noSecret(t, "the error", err.Error())
			if cerr := conn.Err(); cerr != nil {
				noSecret(t, "Conn.Err", cerr.Error())
			}
			noSecret(t, "the log", logs.String())
		})
	}
}

// testCtx is a context bounded by testTimeout, ended with the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// noSecret fails the test if s holds any of the secrets.
func noSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{urlSecret, headerSecret, tokenSecret} {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds %s: %s", what, secret, s)
		}
	}
}

// A redirect within the server's origin is followed, with the token and
// the headers: the credentials are bound to the origin, not to the path.
func TestRedirectWithinOriginFollowed(t *testing.T) {
	s := mcpserver.NewMCPServer("redirected", "1.0.0", mcpserver.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(s)
	real := mcpserver.NewStreamableHTTPServer(s)
	var withToken, withHeader atomic.Int64
	mux := nethttp.NewServeMux()
	mux.HandleFunc("/old", func(rw nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(rw, r, "/new?"+r.URL.RawQuery, nethttp.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/new", func(rw nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("Authorization") == "Bearer "+tokenSecret {
			withToken.Add(1)
		}
		if r.Header.Get("X-Api-Key") == headerSecret {
			withHeader.Add(1)
		}
		real.ServeHTTP(rw, r)
	})
	// Cleanups, not defers: they run after the Conn's own (registered
	// later), and httptest's Close waits for its open streams.
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { real.Shutdown(context.Background()) })

	ctx := testCtx(t)
	sess := connect(ctx, t, mcphttp.Spec{URL: srv.URL + "/old?api_key=" + urlSecret, Headers: map[string]string{"X-Api-Key": headerSecret}},
		mcphttp.WithAuthorizer(&bearer{token: tokenSecret}))
	sess.mustEcho(ctx, t, "hello")
	if withToken.Load() == 0 || withHeader.Load() == 0 {
		t.Errorf("requests after the same-origin redirect: %d with the token, %d with the header; want some of each",
			withToken.Load(), withHeader.Load())
	}
}

// Every error of a request quotes the URL with its query values masked:
// here the server cuts the connection, and mcp-go's error is net/http's
// *url.Error with the URL in it.
func TestRequestErrorsRedactURL(t *testing.T) {
	var cut atomic.Bool
	s := mcpserver.NewMCPServer("cut", "1.0.0", mcpserver.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(s)
	real := mcpserver.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(rw nethttp.ResponseWriter, r *nethttp.Request) {
		if cut.Load() && r.Method == nethttp.MethodPost {
			conn, _, err := rw.(nethttp.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		real.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { real.Shutdown(context.Background()) })

	var logs bytes.Buffer
	ctx := testCtx(t)
	sess := connect(ctx, t, mcphttp.Spec{URL: srv.URL + "/mcp?api_key=" + urlSecret},
		mcphttp.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	cut.Store(true)
	_, err := sess.echo(ctx, "x")
	if err == nil {
		t.Fatal("echo succeeded on a cut connection")
	}
	if !strings.Contains(err.Error(), "api_key=xxxxx") {
		t.Errorf("the error does not show the redacted URL: %v", err)
	}
	noSecret(t, "the error", err.Error())
	noSecret(t, "the log", logs.String())
}

// The spec's own errors and its printed forms mask the URL's secrets, a URL
// that does not parse included.
func TestSpecRedactsURL(t *testing.T) {
	bad := mcphttp.Spec{URL: "http://127.0.0.1:1/%zz?api_key=" + urlSecret}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate accepted a URL that does not parse")
	}
	noSecret(t, "Validate", err.Error())
	good := mcphttp.Spec{URL: "http://127.0.0.1:1/mcp?api_key=" + urlSecret}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("spec", "spec", good)
	noSecret(t, "String", good.String())
	noSecret(t, "LogValue", logs.String())
}
