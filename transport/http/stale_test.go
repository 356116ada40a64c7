package http_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// noSessionBody is how the TypeScript SDK's servers answer a request on a
// session they do not know, with HTTP 400.
const noSessionBody = `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`

// forgetfulServer is an mcp-go stateful server that, once forget is set,
// answers every request carrying a session ID the TypeScript way.
func forgetfulServer(t *testing.T) (*httptest.Server, *atomic.Bool) {
	t.Helper()
	s := server.NewMCPServer("forgetful", "1.0.0", server.WithToolCapabilities(true))
	httpserver.AddMCPGoTools(s)
	streamable := server.NewStreamableHTTPServer(s, server.WithStateful(true))
	var forget atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if forget.Load() && r.Header.Get("Mcp-Session-Id") != "" {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, noSessionBody)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		_ = streamable.Shutdown(context.Background())
	})
	return ts, &forget
}

// TestStaleSession400 checks the HTTP 400 / JSON-RPC -32000 form of a stale
// session: over a Conn it becomes transport.ErrSessionTerminated and closes
// Done; on a plain mcp-go transport it arrives as a bare JSON-RPC error
// that only its message identifies, and IsStaleSession still catches it.
func TestStaleSession400(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	t.Run("conn", func(t *testing.T) {
		ts, forget := forgetfulServer(t)
		s := connect(ctx, t, mcphttp.Spec{URL: ts.URL}, mcphttp.WithLegacyProtocol())
		s.mustEcho(ctx, t, "hi")
		forget.Store(true)
		_, err := s.echo(ctx, "stale")
		if !errors.Is(err, transport.ErrSessionTerminated) || !mcphttp.IsStaleSession(err) || mcphttp.IsNotSent(err) {
			t.Fatalf("call: %v, want ErrSessionTerminated", err)
		}
		<-s.conn.Done()
		if !errors.Is(s.conn.Err(), mcphttp.ErrStaleSession) || !errors.Is(s.conn.Err(), transport.ErrSessionTerminated) {
			t.Errorf("Err = %v, want ErrStaleSession", s.conn.Err())
		}
		// mcp-go keeps the session ended: the next call fails without
		// being sent.
		if _, err := s.echo(ctx, "again"); !errors.Is(err, transport.ErrSessionTerminated) {
			t.Errorf("second call: %v, want ErrSessionTerminated", err)
		}
	})

	t.Run("raw mcp-go", func(t *testing.T) {
		ts, forget := forgetfulServer(t)
		tr, err := transport.NewStreamableHTTP(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		c := mcpclient.NewClient(tr, mcpclient.WithLegacyProtocolOnly())
		defer c.Close()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			t.Fatal(err)
		}
		forget.Store(true)
		_, err = c.ListTools(ctx, mcp.ListToolsRequest{})
		var terr *transport.Error
		if err == nil || errors.As(err, &terr) || errors.Is(err, transport.ErrSessionTerminated) {
			t.Fatalf("raw mcp-go: %v (%T): the 400 handling of mcp-go changed", err, err)
		}
		t.Logf("raw mcp-go on HTTP 400/-32000: %q (%T)", err, err)
		if !mcphttp.IsStaleSession(err) {
			t.Errorf("IsStaleSession(%v) = false", err)
		}
	})
}
