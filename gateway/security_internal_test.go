package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// itestCtx ends with the test, and at the latest after a minute.
func itestCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newTestGateway serves the in-process servers over a Manager, connected.
func newTestGateway(t testing.TB, servers map[string]*upstream.Server, opts ...Option) *Gateway {
	t.Helper()
	ctx := itestCtx(t)
	m := client.New()
	for name, up := range servers {
		if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcess(up.MCPServer)}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range servers {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	g := New(m, opts...)
	t.Cleanup(func() {
		g.Close()
		m.Close()
	})
	return g
}

// modernBody is a 2026-07-28 JSON-RPC message: method, id (nil for a
// notification) and params, with the _meta every such request carries.
func modernBody(method string, id any, params map[string]any) []byte {
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw-test", "version": "1"},
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != nil {
		msg["id"] = id
	}
	b, _ := json.Marshal(msg)
	return b
}

// modernPost sends a 2026-07-28 message with hc, with the headers that
// protocol asks for.
func modernPost(ctx context.Context, hc *http.Client, url, method, name string, body []byte, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, name)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return hc.Do(req)
}

// TestCancelOnlyByItsSender: a 2026-07-28 request carries no session, so
// mcp-go keys it by its id alone; a notifications/cancelled that another
// client sends for the same id must not end it. The client's own
// cancellation, on the connection that carries the call (HTTP/2 here), does.
func TestCancelOnlyByItsSender(t *testing.T) {
	up := upstream.New("a")
	g := newTestGateway(t, map[string]*upstream.Server{"a": up})
	h := g.HTTPHandler(HTTPOptions{})
	ts := httptest.NewUnstartedServer(h)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
	})
	url := ts.URL + "/mcp"
	// Two clients, each with a connection of its own.
	newClient := func() *http.Client {
		tr := ts.Client().Transport.(*http.Transport).Clone()
		tr.ForceAttemptHTTP2 = true
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	alice, bob := newClient(), newClient()
	ctx := itestCtx(t)

	type answer struct {
		status int
		body   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := modernPost(ctx, alice, url, "tools/call", "a__slow",
			modernBody("tools/call", 7, map[string]any{"name": "a__slow", "arguments": map[string]any{"label": "alice"}}), nil)
		if err != nil {
			done <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{status: resp.StatusCode, body: string(b)}
	}()
	select {
	case <-up.Started:
	case <-ctx.Done():
		t.Fatal("alice's call never started")
	}
	calls := g.calls.onServer("a")
	if len(calls) != 1 {
		t.Fatalf("%d calls in flight on a", len(calls))
	}
	handler := calls[0].handlerContext()
	if proto := fmtProto(t, alice, url); proto != 2 {
		t.Fatalf("the test needs HTTP/2, got HTTP/%d", proto)
	}

	cancel := func(hc *http.Client) {
		t.Helper()
		resp, err := modernPost(ctx, hc, url, "notifications/cancelled", "",
			modernBody("notifications/cancelled", nil, map[string]any{"requestId": 7, "reason": "test"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("a cancellation answered %d", resp.StatusCode)
		}
	}
	cancel(bob)
	// The cancellation is handled before its answer: had it reached
	// alice's request, its context would have ended by now.
	if err := handler.Err(); err != nil {
		t.Fatalf("bob's cancellation of request 7 ended alice's: %v", err)
	}
	cancel(alice)
	select {
	case label := <-up.Cancelled:
		if label != "alice" {
			t.Fatalf("cancelled %q", label)
		}
	case <-ctx.Done():
		t.Fatal("alice's own cancellation did not reach the server")
	}
	if a := <-done; a.err != nil && ctx.Err() != nil {
		t.Fatalf("alice's call: %v", a.err)
	}
}

// fmtProto returns the major HTTP version hc speaks to url.
func fmtProto(t testing.TB, hc *http.Client, url string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(itestCtx(t), http.MethodGet, url+"-nothing", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.ProtoMajor
}

// templateServer is an MCP server whose resources and templates answer
// with the server's name.
func templateServer(name string, uris []string, templates ...string) *upstream.Server {
	s := &upstream.Server{MCPServer: server.NewMCPServer(name, "test", server.WithResourceCapabilities(true, true))}
	answer := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: name}}, nil
	}
	for _, u := range uris {
		s.AddResource(mcp.NewResource(u, u), answer)
	}
	for _, t := range templates {
		s.AddResourceTemplate(mcp.NewResourceTemplate(t, t), answer)
	}
	return s
}

// TestResourceReadsGoToTheirServer: a server with a catch-all template
// ({+any}) beside one with notes://{user}/diary: mcp-go alone would pick a
// template in map order, and some reads of notes://bob/diary went to the
// catch-all. Reads follow the gateway's own routes: the catch-all that
// overlaps the other's template is quarantined (logged, and named by
// QuarantinedTemplates), and a URI a server lists exactly goes to it.
func TestResourceReadsGoToTheirServer(t *testing.T) {
	g := newTestGateway(t, map[string]*upstream.Server{
		"any":   templateServer("any", []string{"notes://carol/diary"}, "{+any}"),
		"notes": templateServer("notes", nil, "notes://{user}/diary"),
	})
	c, err := mcpclient.NewInProcessClient(g.Server())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := itestCtx(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	read := func(uri string) (string, error) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			return "", err
		}
		return res.Contents[0].(mcp.TextResourceContents).Text, nil
	}
	wrong := 0
	for range 200 {
		got, err := read("notes://bob/diary")
		if err != nil {
			t.Fatal(err)
		}
		if got != "notes" {
			wrong++
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of 200 reads of notes://bob/diary went to another server", wrong)
	}
	if got, err := read("notes://carol/diary"); err != nil || got != "any" {
		t.Fatalf("a URI that server any lists: %q %v", got, err)
	}
	if got, err := read("file:///etc/passwd"); err == nil {
		t.Fatalf("a URI only the quarantined catch-all matches was read, from %q", got)
	}
	want := []QuarantinedTemplate{{Server: "any", Template: "{+any}", Holder: "notes", HolderTemplate: "notes://{user}/diary"}}
	if got := g.QuarantinedTemplates(); !slices.Equal(got, want) {
		t.Fatalf("quarantined %+v, want %+v", got, want)
	}
	templates, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate.Raw() != "notes://{user}/diary" {
		t.Fatalf("templates served: %+v", templates.ResourceTemplates)
	}
}

// serveHTTP serves g's HTTP handler on an httptest server and returns its
// MCP endpoint.
func serveHTTP(t testing.TB, g *Gateway, o HTTPOptions) string {
	t.Helper()
	h := g.HTTPHandler(o)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// legacyPost sends a JSON-RPC message of the protocol before 2026-07-28,
// in session sid ("" for none), and returns the response with its body.
func legacyPost(t testing.TB, url, sid, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(itestCtx(t), http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestSessionCaps: sessions are no longer free. Past a client's cap, or
// the gateway's, an initialize is refused with 429, Retry-After and a
// JSON-RPC error naming the cap, and the session table stays at the cap
// however many come; opening sessions faster than the client's rate is
// refused alike.
func TestSessionCaps(t *testing.T) {
	up := upstream.New("a")
	for _, c := range []struct {
		name           string
		total, client  int
		want           int
		wantMsg        string
		wantRetryAfter string
	}{
		{"per client", 100, 4, 4, "the client holds 4 sessions, its cap, and none is idle", "60"},
		{"overall", 5, 100, 5, "5 sessions are open, the gateway's cap, and none is idle", "60"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newTestGateway(t, map[string]*upstream.Server{"a": up},
				WithSessionCaps(c.total, c.client, -1), WithClientLimits(-1, -1))
			url := serveHTTP(t, g, HTTPOptions{})
			opened := 0
			for range 200 {
				resp, body := legacyPost(t, url, "", initializeBody)
				switch resp.StatusCode {
				case http.StatusOK:
					opened++
				case http.StatusTooManyRequests:
					var e struct {
						ID    int
						Error mcp.JSONRPCErrorDetails
					}
					if err := json.Unmarshal([]byte(body), &e); err != nil || e.ID != 1 || !strings.Contains(e.Error.Message, c.wantMsg) {
						t.Fatalf("the refusal: %q %v", body, err)
					}
					if got := resp.Header.Get("Retry-After"); got != c.wantRetryAfter {
						t.Fatalf("Retry-After %q", got)
					}
				default:
					t.Fatalf("initialize: %d %s", resp.StatusCode, body)
				}
			}
			if opened != c.want {
				t.Fatalf("%d sessions opened, want %d", opened, c.want)
			}
			if n, counted := g.sessions.sizes(); n != c.want || counted != c.want {
				t.Fatalf("the session table holds %d sessions (%d counted), want %d", n, counted, c.want)
			}
		})
	}
	t.Run("open rate", func(t *testing.T) {
		g := newTestGateway(t, map[string]*upstream.Server{"a": up}, WithSessionCaps(-1, -1, 0.001), WithClientLimits(-1, -1))
		url := serveHTTP(t, g, HTTPOptions{})
		if resp, body := legacyPost(t, url, "", initializeBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("the first initialize: %d %s", resp.StatusCode, body)
		}
		resp, body := legacyPost(t, url, "", initializeBody)
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "over the client's rate of opening sessions") {
			t.Fatalf("the second initialize: %d %s", resp.StatusCode, body)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 100 {
			t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
	})
	t.Run("idle reclaimed", func(t *testing.T) {
		// At the cap, the least recently used idle session makes room; one
		// with a stream open is not idle.
		g := newTestGateway(t, map[string]*upstream.Server{"a": up}, WithSessionCaps(-1, 2, -1), WithClientLimits(-1, -1))
		g.sessions.reclaimAfter = 0
		url := serveHTTP(t, g, HTTPOptions{})
		open := func() string {
			t.Helper()
			resp, body := legacyPost(t, url, "", initializeBody)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("initialize: %d %s", resp.StatusCode, body)
			}
			return resp.Header.Get("Mcp-Session-Id")
		}
		streaming, idle := open(), open()
		ctx, cancel := context.WithCancel(itestCtx(t))
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", streaming)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		stream, err := http.DefaultClient.Do(req)
		if err != nil || stream.StatusCode != http.StatusOK {
			t.Fatalf("the stream: %v %v", stream, err)
		}
		defer stream.Body.Close()
		newer := open()
		list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		if resp, _ := legacyPost(t, url, idle, list); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("the reclaimed session answers %d, want 404", resp.StatusCode)
		}
		for _, sid := range []string{streaming, newer} {
			if resp, body := legacyPost(t, url, sid, list); resp.StatusCode != http.StatusOK {
				t.Fatalf("a session kept: %d %s", resp.StatusCode, body)
			}
		}
		if n, counted := g.sessions.sizes(); n != 2 || counted != 2 {
			t.Fatalf("the session table holds %d (%d counted)", n, counted)
		}
	})
}

// modernCtx is the context of a 2026-07-28 request over HTTP from client
// at addr, by the client program name.
func modernCtx(g *Gateway, client, addr, name string) context.Context {
	ctx := context.WithValue(context.Background(), peerKey{}, &peer{client: client, addr: addr, conn: addr + ":1"})
	ctx = server.WithRequestProtocolInfo(ctx, &server.RequestProtocolInfo{Modern: true, ProtocolVersion: mcp.ProtocolVersion20260728,
		ClientInfo: &mcp.Implementation{Name: name, Version: "1"}, ClientCapabilities: &mcp.ClientCapabilities{}})
	return ctx
}

// TestModernSessionsPerProgram: 2026-07-28 clients at one address are no
// longer one session: each client program (by its client identity,
// address and client info) has its own, so one cannot take over the
// rounds of another's call; and they count under the caps, one with
// nothing in flight giving way to a new one.
func TestModernSessionsPerProgram(t *testing.T) {
	m := client.New()
	defer m.Close()
	g := New(m, WithSessionCaps(-1, 2, -1))
	defer g.Close()
	a, b := modernCtx(g, "token", "127.0.0.1", "editor"), modernCtx(g, "token", "127.0.0.1", "agent")
	sa, err := g.sessions.of(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := g.sessions.of(b)
	if err != nil {
		t.Fatal(err)
	}
	if sa == sb {
		t.Fatal("two client programs at one address share a session")
	}
	if again, _ := g.sessions.of(modernCtx(g, "token", "127.0.0.1", "editor")); again != sa {
		t.Fatal("a program's next request has another session")
	}
	ca, err := g.start(a, "tools/call", "x", "t", true)
	if err != nil {
		t.Fatal(err)
	}
	tok := g.calls.token(ca)
	if g.calls.resume(tok, sb) != nil {
		t.Fatal("another program resumed the call's rounds")
	}
	if g.calls.resume(tok, sa) != ca {
		t.Fatal("the call's own program cannot resume it")
	}
	cb, err := g.start(b, "tools/call", "x", "t", true)
	if err != nil {
		t.Fatal(err)
	}
	// Two sessions, both busy: a third program of the client is refused.
	third := modernCtx(g, "token", "127.0.0.1", "third")
	if _, err := g.start(third, "tools/call", "x", "t", true); err == nil || !strings.Contains(err.Error(), "holds 2 sessions, its cap") {
		t.Fatalf("a third session past the cap: %v", err)
	}
	g.finish(ca, nil, nil)
	c3, err := g.start(third, "tools/call", "x", "t", true)
	if err != nil {
		t.Fatalf("a third session once one is idle: %v", err)
	}
	if !sa.ended.Load() {
		t.Fatal("the idle session was not the one that gave way")
	}
	g.finish(cb, nil, nil)
	g.finish(c3, nil, nil)
	if n, counted := g.sessions.sizes(); n != 2 || counted != 2 {
		t.Fatalf("the table holds %d (%d counted)", n, counted)
	}
}

// TestReadTimeoutCutsNoCall: the http.Server's ReadTimeout (which serve
// sets, DefaultReadTimeout) bounds reading a request, and net/http lifts
// it once the body is read: a call that lasts longer than it is answered.
func TestReadTimeoutCutsNoCall(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	waiter := &upstream.Server{MCPServer: server.NewMCPServer("w", "test", server.WithToolCapabilities(true))}
	waiter.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(3 * readTimeout): // the time that passes is what the test is about
			return mcp.NewToolResultText("waited"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	g := newTestGateway(t, map[string]*upstream.Server{"w": waiter})
	h := g.HTTPHandler(HTTPOptions{})
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ReadTimeout = readTimeout
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
	})
	url := ts.URL + "/mcp"
	resp, body := legacyPost(t, url, "", initializeBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	resp, body = legacyPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w__wait","arguments":{}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"waited"`) {
		t.Fatalf("a call longer than the read timeout: %d %s", resp.StatusCode, body)
	}
}

// dialLegacy connects an mcp-go client of the protocol before 2026-07-28
// to url, with its GET stream open.
func dialLegacy(t testing.TB, url string) *mcpclient.Client {
	t.Helper()
	ctx := itestCtx(t)
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening(), transport.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLogsOnlyToSessionsThatAsked: a server's log message that belongs
// to no call goes to the sessions that asked for log messages
// (logging/setLevel), not to every session.
func TestLogsOnlyToSessionsThatAsked(t *testing.T) {
	g := newTestGateway(t, map[string]*upstream.Server{"a": upstream.New("a")})
	url := serveHTTP(t, g, HTTPOptions{})
	asked, silent := dialLegacy(t, url), dialLegacy(t, url)
	type got struct{ method, logger string }
	recv := func(c *mcpclient.Client) chan got {
		ch := make(chan got, 16)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			logger, _ := n.Params.AdditionalFields["logger"].(string)
			ch <- got{n.Method, logger}
		})
		return ch
	}
	fromAsked, fromSilent := recv(asked), recv(silent)
	ctx := itestCtx(t)
	if err := asked.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	// mcp-go registers a session just after it answered its initialize.
	waitUntil(t, func() bool { return len(g.sessions.registered()) == 2 })
	g.forwardLog("a", &client.LogMessage{Level: mcp.LoggingLevelError, Logger: "secret", Data: "bob's call did this"})
	// A marker after it, to every session: a session's notifications come
	// in the order they were sent.
	g.srv.SendNotificationToAllClients("test/marker", nil)
	next := func(ch chan got) got {
		t.Helper()
		select {
		case n := <-ch:
			return n
		case <-ctx.Done():
			t.Fatal("no notification")
			return got{}
		}
	}
	if n := next(fromAsked); n.method != string(mcp.MethodNotificationMessage) || n.logger != "a/secret" {
		t.Fatalf("the session that asked got %+v first", n)
	}
	if n := next(fromSilent); n.method != "test/marker" {
		t.Fatalf("a session that never asked for logs got %+v", n)
	}
}

// waitUntil waits until cond holds, for a state the test cannot be told
// of; at most until the test's context ends.
func waitUntil(t testing.TB, cond func() bool) {
	t.Helper()
	ctx := itestCtx(t)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the state never came")
		}
	}
}

// TestModernSubscribeRefusedFirst: resources/subscribe is gone from the
// 2026-07-28 protocol (a listen stream's filter replaces it), and mcp-go
// refuses it; the gateway used to subscribe the server first, for a
// session of the request alone that never ends, and kept the subscription
// for ever. Now nothing is subscribed.
func TestModernSubscribeRefusedFirst(t *testing.T) {
	g := newTestGateway(t, map[string]*upstream.Server{"a": upstream.New("a")})
	url := serveHTTP(t, g, HTTPOptions{})
	ctx := itestCtx(t)
	resp, err := modernPost(ctx, http.DefaultClient, url, "resources/subscribe", "mem://a/a",
		modernBody("resources/subscribe", 1, map[string]any{"uri": "mem://a/a"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"error"`) {
		t.Fatalf("a 2026-07-28 resources/subscribe: %d %s", resp.StatusCode, body)
	}
	g.subs.mu.Lock()
	targets, subscribers := len(g.subs.targets), len(g.subs.bySub)
	g.subs.mu.Unlock()
	if targets != 0 || subscribers != 0 {
		t.Fatalf("after a refused subscribe: %d subscriptions of servers, %d subscribers", targets, subscribers)
	}
}

// TestClientTableBounded: clients that come and stay (many addresses, none
// idle) do not grow the table without end: past its bound they share one
// client's limits.
func TestClientTableBounded(t *testing.T) {
	var tab sessionTable
	tab.init(defaultOptions())
	for i := range 3 * clientMax {
		c := tab.client("addr 10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256))
		c.inflight.Add(1) // busy: never forgotten
	}
	if n := len(tab.clients); n > clientMax+1 { // and the shared one
		t.Fatalf("%d clients held, bound %d", n, clientMax)
	}
	if tab.client("addr 192.0.2.1").key != overflowClient {
		t.Fatal("a client past the bound has limits of its own")
	}
}
