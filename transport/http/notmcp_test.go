package http_test

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// webPage answers every request with 200 and an HTML page (or, for a
// content type other than HTML, "OK"), as a web server does for a URL
// that is not its MCP endpoint, and counts the requests.
func webPage(n *atomic.Int64, contentType string) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", contentType)
		if !strings.Contains(contentType, "html") {
			fmt.Fprint(w, "OK\n")
			return
		}
		fmt.Fprint(w, "<!doctype html><html><head><title>Acme &amp; Co</title></head><body><h1>Welcome</h1>"+
			strings.Repeat("<p>filler</p>", 100)+"</body></html>")
	})
}

// TestHandshakeAnsweredWithWebPage: an endpoint that answers the
// handshake with 200 and a web page (the site's home page, a login page)
// fails the dial with an *Error that names the status, the media type and
// the page's title, says what to check, and matches
// transport.ErrMisconfigured and transport.ErrNotMCP, on both kinds of
// transport. Without it, mcp-go's "unexpected content type" (or, for
// legacy SSE, a wait for an endpoint event until the dial's deadline) was
// all there was, and the Manager retried it forever.
func TestHandshakeAnsweredWithWebPage(t *testing.T) {
	for _, tt := range []struct {
		name        string
		kind        mcphttp.Kind
		contentType string
		says        []string
	}{
		{"streamable HTTP", mcphttp.StreamableHTTP, "text/html; charset=utf-8",
			[]string{"POST ", `200 OK (text/html: "Acme & Co")`, "a web page, not MCP: is this the MCP endpoint?"}},
		{"legacy SSE", mcphttp.SSE, "text/html",
			[]string{"GET ", `200 OK (text/html: "Acme & Co")`, "a web page, not MCP: is this the MCP endpoint?"}},
		{"plain text", mcphttp.StreamableHTTP, "text/plain",
			[]string{`200 OK (text/plain: "OK")`, "not MCP (JSON-RPC as JSON or an event stream): is this the MCP endpoint?"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(webPage(&requests, tt.contentType))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, err := tryConnect(ctx, t, mcphttp.Spec{URL: srv.URL + "/mcp", Kind: tt.kind})
			if ctx.Err() != nil {
				t.Fatalf("the dial waited for its deadline: %v", err)
			}
			t.Logf("%v (%d requests)", err, requests.Load())
			var he *mcphttp.Error
			if !errors.As(err, &he) || !errors.Is(err, transport.ErrMisconfigured) || !errors.Is(err, transport.ErrNotMCP) {
				t.Fatalf("dial = %v; want an *http.Error that matches ErrMisconfigured and ErrNotMCP", err)
			}
			for _, says := range tt.says {
				if !strings.Contains(err.Error(), says) {
					t.Errorf("error %q does not say %q", err, says)
				}
			}
			if strings.Contains(err.Error(), "filler") {
				t.Errorf("error %q quotes the page", err)
			}
		})
	}
}

// TestStaticWebServer: a static file server (python -m http.server) that
// answers POST with 501 Not Implemented and GET with the page fails the
// dial as a mistake that says it is a web page, for both kinds of
// transport: without it, the 501 read as a server failure, retried
// forever.
func TestStaticWebServer(t *testing.T) {
	page := webPage(new(atomic.Int64), "text/html")
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method != nethttp.MethodGet {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(nethttp.StatusNotImplemented)
			fmt.Fprint(w, "<html><head><title>Error response</title></head><body>Unsupported method</body></html>")
			return
		}
		page.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, kind := range []mcphttp.Kind{mcphttp.StreamableHTTP, mcphttp.SSE} {
		t.Run(kind.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, err := tryConnect(ctx, t, mcphttp.Spec{URL: srv.URL + "/index.html", Kind: kind})
			if ctx.Err() != nil {
				t.Fatalf("the dial waited for its deadline: %v", err)
			}
			t.Log(err)
			if !errors.Is(err, transport.ErrMisconfigured) || !errors.Is(err, transport.ErrNotMCP) ||
				!strings.Contains(err.Error(), "is this the MCP endpoint?") {
				t.Fatalf("dial = %v; want a mistake that says it is a web page", err)
			}
		})
	}
}
