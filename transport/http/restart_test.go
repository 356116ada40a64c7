package http_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// restartable is a test server that can be stopped and started again on
// the same port.
type restartable interface {
	URL() string
	Stop()
	Restart(testing.TB)
}

// outcome is what a call on a connection from before a server restart gets
// once the new server listens.
type outcome int

const (
	// works: the server keeps no session state (or does not check it), so
	// the old client's call simply succeeds.
	works outcome = iota
	// stale: the server forgot the session; IsStaleSession.
	stale
	// hangs: the server never answers (server-everything's SSE transport
	// drops POSTs for unknown sessions); only the caller's context ends it.
	hangs
)

func (o outcome) String() string {
	return [...]string{"works", "stale", "hangs"}[o]
}

type target struct {
	name   string
	kind   mcphttp.Kind
	opts   []mcphttp.Option
	start  func(t *testing.T) restartable
	notify func(restartable) // nil: the server has no way to trigger list_changed
	// wantModern says which protocol generation the handshake settles on.
	wantModern bool
	// wantDone says whether the Conn notices a stopped server by itself
	// (there is a notification stream to lose).
	wantDone bool
	// afterRestart is what a call on the old client gets from the new server.
	afterRestart outcome
}

func goServer(kind httpserver.Kind) func(t *testing.T) restartable {
	return func(t *testing.T) restartable { return httpserver.Start(t, kind) }
}

func everything(mode string) func(t *testing.T) restartable {
	return func(t *testing.T) restartable { return httpserver.StartEverything(t, mode) }
}

func notifyGo(s restartable) { s.(*httpserver.Server).NotifyToolsChanged() }

var legacy = []mcphttp.Option{mcphttp.WithLegacyProtocol()}

// targets is every server kind the issue names, on each protocol generation
// it speaks. The official Go SDK's stateful server answers server/discover
// but rejects 2026-07-28 afterwards, so it is reached the way the Manager
// falls back: pinned to the handshake (TestUnsupportedProtocolFallback
// covers the rejection).
var targets = []target{
	{name: "mcpgo/modern", start: goServer(httpserver.MCPGo), notify: notifyGo, wantModern: true, wantDone: true, afterRestart: works},
	{name: "mcpgo/legacy", opts: legacy, start: goServer(httpserver.MCPGo), notify: notifyGo, wantDone: true, afterRestart: works},
	{name: "mcpgo-stateful/modern", start: goServer(httpserver.MCPGoStateful), notify: notifyGo, wantModern: true, wantDone: true, afterRestart: works},
	{name: "mcpgo-stateful/legacy", opts: legacy, start: goServer(httpserver.MCPGoStateful), notify: notifyGo, wantDone: true, afterRestart: stale},
	{name: "mcpgo-sse", kind: mcphttp.SSE, start: goServer(httpserver.MCPGoSSE), notify: notifyGo, wantModern: true, wantDone: true, afterRestart: stale},
	{name: "gosdk-stateful/legacy", opts: legacy, start: goServer(httpserver.GoSDKStateful), notify: notifyGo, wantDone: true, afterRestart: stale},
	{name: "gosdk-stateless/modern", start: goServer(httpserver.GoSDKStateless), notify: notifyGo, wantModern: true, wantDone: true, afterRestart: works},
	// The stateless Go SDK server answers the GET stream with 405: on the
	// older protocol nothing tells the client the server restarted.
	{name: "gosdk-stateless/legacy", opts: legacy, start: goServer(httpserver.GoSDKStateless), wantDone: false, afterRestart: works},
	// server-everything's streamable HTTP answers server/discover with an
	// error: the client falls back to the handshake by itself.
	{name: "everything-streamable", start: everything(httpserver.EverythingStreamable), wantDone: true, afterRestart: stale},
	{name: "everything-sse", kind: mcphttp.SSE, start: everything(httpserver.EverythingSSE), wantDone: true, afterRestart: hangs},
}

// TestRestart runs each server through: connect, call, stop (the Conn
// notices, calls fail as not sent, dials fail fast), restart on the same
// port (the old client's call is classified as the table says), and a
// fresh connection that works.
func TestRestart(t *testing.T) {
	for _, tt := range targets {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv := tt.start(t)
			spec := mcphttp.Spec{URL: srv.URL(), Kind: tt.kind}
			s := connect(ctx, t, spec, tt.opts...)

			if got := mcp.IsModernProtocol(s.client.ProtocolVersion()); got != tt.wantModern {
				t.Errorf("protocol %q: modern = %v, want %v", s.client.ProtocolVersion(), got, tt.wantModern)
			}
			tools, err := s.client.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			if !hasTool(tools.Tools, "echo") {
				t.Fatalf("ListTools: no echo tool in %d tools", len(tools.Tools))
			}
			s.mustEcho(ctx, t, "before")
			if err := s.conn.Err(); err != nil {
				t.Fatalf("Err = %v while the connection is up", err)
			}

			// Stop: the notification stream breaks off.
			stopped := time.Now()
			srv.Stop()
			if tt.wantDone {
				took := awaitDone(ctx, t, s.conn, stopped)
				t.Logf("Done closed %v after the server stopped: %v", took, s.conn.Err())
				if !errors.Is(s.conn.Err(), mcphttp.ErrStreamLost) {
					t.Errorf("Err = %v, want ErrStreamLost", s.conn.Err())
				}
				if !mcphttp.IsTransportFatal(s.conn.Err()) {
					t.Errorf("IsTransportFatal(%v) = false", s.conn.Err())
				}
			} else {
				select {
				case <-s.conn.Done():
					t.Errorf("Done closed without a stream to lose: %v", s.conn.Err())
				default:
				}
			}

			// While down: calls and dials are refused before anything is sent.
			callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = s.echo(callCtx, "down")
			callCancel()
			// Once Done closed, the Conn dropped its idle connections and the
			// call dials: refused. Without that, the call may go out on a
			// keep-alive connection the server closed and get EOF.
			notSent := mcphttp.IsNotSent(err)
			if !mcphttp.IsTransportFatal(err) || (!notSent && (tt.wantDone || !errors.Is(err, io.EOF))) {
				t.Errorf("call while down: %v: IsNotSent = %v, IsTransportFatal = %v", err, notSent, mcphttp.IsTransportFatal(err))
			}
			dialStart := time.Now()
			_, err = mcphttp.Dial(ctx, spec, tt.opts...)
			if !mcphttp.IsNotSent(err) {
				t.Errorf("Dial while down: %v: IsNotSent = false", err)
			}
			// Refused at once, not retried: a quarter of the context's
			// bound tells the two apart on however slow a machine.
			took := time.Since(dialStart)
			t.Logf("Dial while down took %v", took)
			if took > testTimeout/4 {
				t.Errorf("Dial while down took %v", took)
			}

			// Restart on the same port: the old client meets a new server.
			srv.Restart(t)
			callCtx, callCancel = context.WithTimeout(ctx, 500*time.Millisecond)
			_, err = s.echo(callCtx, "after")
			callCancel()
			t.Logf("old client after restart: %v", err)
			switch tt.afterRestart {
			case works:
				if err != nil {
					t.Errorf("call on the old client: %v, want success", err)
				}
			case stale:
				if !mcphttp.IsStaleSession(err) || !errors.Is(err, transport.ErrSessionTerminated) || !mcphttp.IsTransportFatal(err) {
					t.Errorf("call on the old client: %v: want a stale session error (IsStaleSession %v)", err, mcphttp.IsStaleSession(err))
				}
				if mcphttp.IsNotSent(err) {
					t.Errorf("IsNotSent(%v) = true for a stale session", err)
				}
				if !tt.wantDone {
					break
				}
			case hangs:
				if !errors.Is(err, context.DeadlineExceeded) || mcphttp.IsStaleSession(err) || mcphttp.IsNotSent(err) || mcphttp.IsTransportFatal(err) {
					t.Errorf("call on the old client: %v, want only the context deadline", err)
				}
			}

			// A fresh connection to the restarted server works.
			s2 := connect(ctx, t, spec, tt.opts...)
			s2.mustEcho(ctx, t, "fresh")
		})
	}
}

// TestNotifications checks that list_changed arrives over the notification
// stream, on both protocol generations and over SSE.
func TestNotifications(t *testing.T) {
	for _, tt := range targets {
		if tt.notify == nil {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			srv := tt.start(t)
			s := connect(ctx, t, mcphttp.Spec{URL: srv.URL(), Kind: tt.kind}, tt.opts...)
			tt.notify(srv)
			s.awaitNote(ctx, t, string(mcp.MethodNotificationToolsListChanged))
			// And again: the stream stays open.
			tt.notify(srv)
			s.awaitNote(ctx, t, string(mcp.MethodNotificationToolsListChanged))
		})
	}
}

// TestUnsupportedProtocolFallback shows the -32022 case: the official Go
// SDK's stateful server answers server/discover, so mcp-go settles on
// 2026-07-28, and then rejects that version at the first real request
// (Ready's subscriptions/listen). Dialing again pinned to the handshake
// works.
func TestUnsupportedProtocolFallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := httpserver.Start(t, httpserver.GoSDKStateful)
	spec := mcphttp.Spec{URL: srv.URL()}

	_, err := tryConnect(ctx, t, spec)
	if !mcphttp.IsUnsupportedProtocol(err) {
		t.Fatalf("connect: %v, want -32022 unsupported protocol version", err)
	}
	if mcphttp.IsStaleSession(err) || mcphttp.IsNotSent(err) || mcphttp.IsTransportFatal(err) {
		t.Errorf("%v classified as stale/not sent/fatal", err)
	}

	// Without Ready the first real request meets the same rejection.
	conn, err := mcphttp.Dial(ctx, spec, mcphttp.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	c := mcpclient.NewClient(conn.Transport())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		t.Fatalf("discover did not settle on 2026-07-28 but %q: the server changed", c.ProtocolVersion())
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); !mcphttp.IsUnsupportedProtocol(err) {
		t.Fatalf("ListTools: %v, want -32022", err)
	}

	s := connect(ctx, t, spec, mcphttp.WithLegacyProtocol())
	if mcp.IsModernProtocol(s.client.ProtocolVersion()) {
		t.Errorf("WithLegacyProtocol: protocol %q", s.client.ProtocolVersion())
	}
	s.mustEcho(ctx, t, "legacy")
}

func hasTool(tools []mcp.Tool, name string) bool {
	for _, tool := range tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}
