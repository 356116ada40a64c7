package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// tsSessions is the TypeScript SDK's example server that binds what it
// keeps to the session (simpleStreamableHttp, from the pinned
// @modelcontextprotocol/sdk, protocol 2025-11-25, with an event store),
// behind a proxy that cuts connections and counts sessions and DELETEs.
type tsSessions struct {
	node  *httpserver.Node
	proxy *faultinject.HTTPProxy
}

func startTSSessions(t *testing.T) *tsSessions {
	t.Helper()
	node, script := npmtest.File(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js")
	srv := httpserver.StartNode(t, node, script, "listening on port")
	return &tsSessions{node: srv, proxy: faultinject.StartHTTPProxy(t, srv.URL(""))}
}

func (s *tsSessions) spec() mcphttp.Spec { return mcphttp.Spec{URL: s.proxy.URL("/mcp")} }

// logs is an mcp-go client on a Conn that keeps the data of every
// notifications/message.
type logs struct {
	conn   *mcphttp.Conn
	client *mcpclient.Client
	init   *mcp.InitializeResult

	mu   sync.Mutex
	seen []string
	more chan struct{} // capacity 1: a message came
}

func dialLogs(ctx context.Context, t *testing.T, spec mcphttp.Spec, opts ...any) (*logs, error) {
	t.Helper()
	dopts := []mcphttp.Option{mcphttp.WithLogger(testLogger(t)), mcphttp.WithLegacyProtocol()}
	var setup []func(*mcphttp.Conn)
	for _, o := range opts {
		switch o := o.(type) {
		case mcphttp.Option:
			dopts = append(dopts, o)
		case func(*mcphttp.Conn):
			setup = append(setup, o)
		}
	}
	conn, err := mcphttp.Dial(ctx, spec, dopts...)
	if err != nil {
		return nil, err
	}
	for _, f := range setup {
		f(conn)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	l := &logs{conn: conn, client: mcpclient.NewClient(conn.Transport(), mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)),
		more: make(chan struct{}, 1)}
	l.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationMessage) {
			return
		}
		l.mu.Lock()
		l.seen = append(l.seen, fmt.Sprint(n.Params.AdditionalFields["data"]))
		l.mu.Unlock()
		select {
		case l.more <- struct{}{}:
		default:
		}
	})
	if err := l.client.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpfleet-test", Version: "0"}
	if l.init, err = l.client.Initialize(ctx, init); err != nil {
		return nil, err
	}
	return l, conn.Ready(ctx, l.client)
}

// awaitLogs waits until n messages came.
func (l *logs) awaitLogs(ctx context.Context, t *testing.T, n int, srv *httpserver.Node) {
	t.Helper()
	for {
		l.mu.Lock()
		got := len(l.seen)
		l.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-l.more:
		case <-ctx.Done():
			out := ""
			if srv != nil {
				out = srv.Output()
			}
			t.Fatalf("%d of %d log messages came: %v\n%s", got, n, ctx.Err(), out)
		}
	}
}

// numbered returns the numbers of the "Periodic notification #n" messages
// that came, in order.
func (l *logs) numbered() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.seen {
		if m := periodic.FindStringSubmatch(s); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

var periodic = regexp.MustCompile(`Periodic notification #(\d+) `)

func (l *logs) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := l.client.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", errors.New("no content")
	}
	text, _ := res.Content[0].(mcp.TextContent)
	return text.Text, nil
}

// A network fault that breaks every connection (twice) while the server
// sends notifications on the session's GET stream and the call's answer is
// under way: the Conn reopens the stream in its session (afresh: see
// WithStreamReplay) and tells OnStreamReopen, messages flow again after
// each cut (in order, none twice; those sent while the stream was broken
// may be lost), the call's answer (whose stream the cut broke too, resumed
// with Last-Event-ID) arrives once, and the server saw one session and no
// DELETE.
func TestStreamReopenedInSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	ts := startTSSessions(t)
	var reopens atomic.Int32
	l, err := dialLogs(ctx, t, ts.spec(), func(c *mcphttp.Conn) { c.OnStreamReopen(func() { reopens.Add(1) }) })
	if err != nil {
		t.Fatal(err)
	}
	const count = 20
	type answer struct {
		text string
		err  error
	}
	done := make(chan answer, 2)
	go func() {
		text, err := l.call(ctx, "start-notification-stream", map[string]any{"interval": 150, "count": count})
		done <- answer{text, err}
	}()
	// The first cut comes after the second message: the answer stream
	// began with the tool (its priming event), before the first message.
	seen := 1
	for range 2 {
		seen++
		l.awaitLogs(ctx, t, seen, ts.node) // one more since the last cut
		seen = len(l.numbered())
		if n := ts.proxy.Cut(); n == 0 {
			t.Fatal("the proxy had no connection to cut")
		}
	}
	var got answer
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatalf("the call did not end\n%s", ts.node.Output())
	}
	if got.err != nil || !strings.Contains(got.text, "Started sending periodic notifications") {
		t.Fatalf("call: %q, %v\n%s", got.text, got.err, ts.node.Output())
	}
	nums := l.numbered()
	if len(nums) <= seen || nums[len(nums)-1] != fmt.Sprint(count) {
		t.Errorf("messages %v: none after the second cut, or not the last", nums)
	}
	for i := 1; i < len(nums); i++ {
		a, _ := strconv.Atoi(nums[i-1])
		b, _ := strconv.Atoi(nums[i])
		if b <= a {
			t.Errorf("messages %v: out of order or twice", nums)
			break
		}
	}
	t.Logf("%d of %d messages came through two cuts: %v", len(nums), count, nums)
	select {
	case <-l.conn.Done():
		t.Fatalf("the Conn failed: %v", l.conn.Err())
	default:
	}
	if n := l.conn.StreamReopens(); n < 2 || int(reopens.Load()) != int(n) {
		t.Errorf("stream reopened %d times, OnStreamReopen told %d, want at least 2", n, reopens.Load())
	}
	if _, err := l.call(ctx, "greet", map[string]any{"name": "after"}); err != nil {
		t.Fatalf("call after the cuts: %v", err)
	}
	select {
	case extra := <-done:
		t.Fatalf("a second answer: %+v", extra)
	default:
	}
	if s := ts.proxy.Sessions(); len(s) != 1 || s[0] != l.conn.SessionID() {
		t.Errorf("sessions %v, want the Conn's one (%s)", s, l.conn.SessionID())
	}
	if d := ts.proxy.Deletes(); len(d) != 0 {
		t.Errorf("DELETEs %v, want none", d)
	}
	if strings.Contains(ts.node.Output(), "Received session termination request") {
		t.Errorf("the server saw a session termination\n%s", ts.node.Output())
	}
}

// WithStreamReplay, against a server whose event store resumes the GET
// stream (mcp-go's): every notification the server sent on the session's
// stream arrives exactly once, in order, through two cuts.
func TestStreamReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	srv := server.NewMCPServer("replay", "1.0.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	streamable := server.NewStreamableHTTPServer(srv, server.WithEventStore(server.NewInMemoryEventStore()))
	hs := httptest.NewServer(streamable)
	t.Cleanup(func() {
		hs.Close()
		// With an event store, mcp-go keeps a goroutine per session (its
		// listening pump) until the session ends: end any the Conn's
		// DELETE did not (goleak found one once, on a loaded machine).
		streamable.CloseSessions(context.Background())
	})
	proxy := faultinject.StartHTTPProxy(t, hs.URL)
	l, err := dialLogs(ctx, t, mcphttp.Spec{URL: proxy.URL("/mcp")}, mcphttp.WithStreamReplay())
	if err != nil {
		t.Fatal(err)
	}
	const count = 30
	send := func(i int) {
		srv.SendNotificationToAllClients(string(mcp.MethodNotificationMessage),
			map[string]any{"level": "info", "data": fmt.Sprintf("Periodic notification #%d at now", i)})
	}
	for i := 1; i <= count; i++ {
		send(i)
		if i == 10 || i == 20 {
			l.awaitLogs(ctx, t, i-3, nil)
			if n := proxy.Cut(); n == 0 {
				t.Fatal("the proxy had no connection to cut")
			}
		}
	}
	l.awaitLogs(ctx, t, count, nil)
	want := make([]string, count)
	for i := range want {
		want[i] = fmt.Sprint(i + 1)
	}
	if nums := l.numbered(); !slices.Equal(nums, want) {
		t.Errorf("messages %v, want each of 1..%d once, in order", nums, count)
	}
	if n := l.conn.StreamReopens(); n < 2 {
		t.Errorf("stream reopened %d times, want 2", n)
	}
	if s := proxy.Sessions(); len(s) != 1 {
		t.Errorf("sessions %v, want one", s)
	}
}

// The host ends a session with Close (one DELETE); KeepSession leaves it
// open, for a later Conn to rejoin: that one goes on in it (no new session,
// the server's state kept) and reports Rejoined. Once the server has
// forgotten the session, a rejoin starts a new one.
func TestRejoinSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	ts := startTSSessions(t)
	a, err := dialLogs(ctx, t, ts.spec())
	if err != nil {
		t.Fatal(err)
	}
	id := a.conn.SessionID()
	if id == "" || a.conn.Rejoined() {
		t.Fatalf("session %q, rejoined %v", id, a.conn.Rejoined())
	}
	a.conn.KeepSession()
	if err := a.conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := ts.proxy.Deletes(); len(d) != 0 {
		t.Fatalf("DELETEs %v after KeepSession", d)
	}

	rejoin := mcphttp.WithRejoin(mcphttp.Rejoin{SessionID: id, Protocol: a.init.ProtocolVersion, Result: a.init})
	b, err := dialLogs(ctx, t, ts.spec(), rejoin)
	if err != nil {
		t.Fatal(err)
	}
	if !b.conn.Rejoined() || b.conn.SessionID() != id {
		t.Fatalf("rejoined %v, session %q, want %q", b.conn.Rejoined(), b.conn.SessionID(), id)
	}
	if b.init.ServerInfo.Name != a.init.ServerInfo.Name || b.client.GetServerCapabilities().Tasks == nil {
		t.Errorf("the rejoined client sees %+v, caps %+v", b.init.ServerInfo, b.client.GetServerCapabilities())
	}
	if _, err := b.call(ctx, "start-notification-stream", map[string]any{"interval": 10, "count": 2}); err != nil {
		t.Fatal(err)
	}
	b.awaitLogs(ctx, t, 2, ts.node) // on the GET stream of the rejoined session
	if s := ts.proxy.Sessions(); len(s) != 1 {
		t.Fatalf("sessions %v, want one", s)
	}
	if err := b.conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if d := ts.proxy.Deletes(); !slices.Equal(d, []string{id}) {
		t.Fatalf("DELETEs %v, want the one of %s", d, id)
	}

	// The server forgot it: a new session.
	c, err := dialLogs(ctx, t, ts.spec(), rejoin)
	if err != nil {
		t.Fatal(err)
	}
	if c.conn.Rejoined() || c.conn.SessionID() == id || c.conn.SessionID() == "" {
		t.Fatalf("rejoined %v, session %q after the server forgot %q", c.conn.Rejoined(), c.conn.SessionID(), id)
	}
	if _, err := c.call(ctx, "greet", map[string]any{"name": "new"}); err != nil {
		t.Fatal(err)
	}
	if s := ts.proxy.Sessions(); len(s) != 2 {
		t.Fatalf("sessions %v, want two", s)
	}
}

// A server that cannot be reached (a partition: every connection cut, and
// every request answered 502 by the proxy in front) ends the Conn with
// ErrStreamLost once the stream could not be reopened; it sends no DELETE,
// and a Conn that rejoins once the server is reachable again finds the
// session. A server restart, which forgets the session, ends the Conn, and
// a rejoin then starts a new session.
func TestStreamLostKeepsSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	ts := startTSSessions(t)
	a, err := dialLogs(ctx, t, ts.spec())
	if err != nil {
		t.Fatal(err)
	}
	id := a.conn.SessionID()
	ts.proxy.Down()
	awaitDone(ctx, t, a.conn, time.Now())
	if !errors.Is(a.conn.Err(), mcphttp.ErrStreamLost) {
		t.Fatalf("Err = %v, want ErrStreamLost", a.conn.Err())
	}
	if err := a.conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ts.proxy.Up()
	b, err := dialLogs(ctx, t, ts.spec(), mcphttp.WithRejoin(mcphttp.Rejoin{SessionID: id, Protocol: a.init.ProtocolVersion, Result: a.init}))
	if err != nil {
		t.Fatal(err)
	}
	if !b.conn.Rejoined() || len(ts.proxy.Deletes()) != 0 || len(ts.proxy.Sessions()) != 1 {
		t.Fatalf("rejoined %v, deletes %v, sessions %v", b.conn.Rejoined(), ts.proxy.Deletes(), ts.proxy.Sessions())
	}

	// A restart forgets the session: the Conn ends (as a stale session
	// if the server was back when the stream was reopened, else as a lost
	// stream), and a rejoin finds the session gone and starts another.
	ts.node.Restart(t)
	awaitDone(ctx, t, b.conn, time.Now())
	if err := b.conn.Err(); !errors.Is(err, mcphttp.ErrStaleSession) && !errors.Is(err, mcphttp.ErrStreamLost) {
		t.Fatalf("Err after the restart = %v, want ErrStaleSession or ErrStreamLost", err)
	}
	c, err := dialLogs(ctx, t, ts.spec(), mcphttp.WithRejoin(mcphttp.Rejoin{SessionID: id, Protocol: a.init.ProtocolVersion, Result: a.init}))
	if err != nil {
		t.Fatal(err)
	}
	if c.conn.Rejoined() || c.conn.SessionID() == id || len(ts.proxy.Sessions()) != 2 {
		t.Fatalf("after the restart: rejoined %v, session %q (was %q), sessions %v", c.conn.Rejoined(), c.conn.SessionID(), id, ts.proxy.Sessions())
	}
	if d := ts.proxy.Deletes(); len(d) != 0 {
		t.Fatalf("DELETEs %v", d)
	}
}

// A request made with transport.WithSession goes out in that session; when
// the server no longer knows it, the request fails with ErrSessionGone and
// the Conn's own session goes on.
func TestRequestInAnotherSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ts := startTSSessions(t)
	a, err := dialLogs(ctx, t, ts.spec())
	if err != nil {
		t.Fatal(err)
	}
	b, err := dialLogs(ctx, t, ts.spec())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.client.Ping(transport.WithSession(ctx, a.conn.SessionID())); err != nil {
		t.Fatalf("ping in a's session: %v", err)
	}
	err = b.client.Ping(transport.WithSession(ctx, "no-such-session"))
	if !errors.Is(err, transport.ErrSessionGone) {
		t.Fatalf("ping in a session the server does not know: %v, want ErrSessionGone", err)
	}
	if err := b.client.Ping(ctx); err != nil {
		t.Fatalf("ping in b's own session: %v", err)
	}
	select {
	case <-b.conn.Done():
		t.Fatalf("b failed: %v", b.conn.Err())
	default:
	}
}

// A proxy that answers 502 while the server is away decides nothing of
// the session: the rejoining Conn's handshake fails (it does not go on to
// start a new session, which the server, back a moment later, would
// create), and a later one rejoins.
func TestRejoinAfterBadGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := server.NewMCPServer("s", "1.0.0")
	streamable := server.NewStreamableHTTPServer(srv, server.WithStateful(true))
	var badGateway atomic.Int32 // requests still to answer 502
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if badGateway.Add(-1) >= 0 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	proxy := faultinject.StartHTTPProxy(t, hs.URL)
	spec := mcphttp.Spec{URL: proxy.URL("/mcp")}
	a, err := dialLogs(ctx, t, spec)
	if err != nil {
		t.Fatal(err)
	}
	id := a.conn.SessionID()
	a.conn.KeepSession()
	if err := a.conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rejoin := mcphttp.WithRejoin(mcphttp.Rejoin{SessionID: id, Protocol: a.init.ProtocolVersion, Result: a.init})
	badGateway.Store(1) // the ping
	if _, err = dialLogs(ctx, t, spec, rejoin); err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("dial while the ping gets 502: %v", err)
	}
	if s := proxy.Sessions(); len(s) != 1 {
		t.Fatalf("sessions %v: the 502 made a new one", s)
	}
	b, err := dialLogs(ctx, t, spec, rejoin)
	if err != nil {
		t.Fatal(err)
	}
	if !b.conn.Rejoined() || len(proxy.Sessions()) != 1 {
		t.Fatalf("rejoined %v, sessions %v", b.conn.Rejoined(), proxy.Sessions())
	}
}

// A server whose port refuses connections has lost its process, and the
// session with it: a server that does not check session ids (mcp-go's
// default) would take the old id from a new process as if nothing
// happened, so the Conn ends with ErrSessionGone rather than reopen its
// stream there, and a rejoin is refused at Dial.
func TestRefusedIsANewProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := httpserver.Start(t, httpserver.MCPGo)
	spec := mcphttp.Spec{URL: srv.URL()}
	a, err := dialLogs(ctx, t, spec)
	if err != nil {
		t.Fatal(err)
	}
	id := a.conn.SessionID()
	if id == "" {
		t.Fatal("no session")
	}
	srv.Stop()
	awaitDone(ctx, t, a.conn, time.Now())
	if err := a.conn.Err(); !errors.Is(err, transport.ErrSessionGone) || !errors.Is(err, mcphttp.ErrStreamLost) {
		t.Fatalf("Err = %v, want ErrStreamLost and ErrSessionGone", err)
	}
	_, err = dialLogs(ctx, t, spec, mcphttp.WithRejoin(mcphttp.Rejoin{SessionID: id, Protocol: a.init.ProtocolVersion, Result: a.init}))
	if !errors.Is(err, transport.ErrSessionGone) || !mcphttp.IsNotSent(err) {
		t.Fatalf("rejoin while the port is closed: %v, want ErrSessionGone, not sent", err)
	}
	srv.Restart(t)
	b, err := dialLogs(ctx, t, spec)
	if err != nil {
		t.Fatal(err)
	}
	if b.conn.SessionID() == id {
		t.Fatalf("the new process gave the old session id %q", id)
	}
}

// A proxy's 502 to server/discover says nothing of the server's protocol:
// the handshake fails rather than fall back to initialize (which would
// settle on the older protocol and open a session with a server of
// 2026-07-28), and the next handshake speaks 2026-07-28.
func TestNoLegacyFallbackOnBadGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv := server.NewMCPServer("s", "1.0.0")
	streamable := server.NewStreamableHTTPServer(srv)
	var badGateway atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if badGateway.Add(-1) >= 0 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	proxy := faultinject.StartHTTPProxy(t, hs.URL)
	spec := mcphttp.Spec{URL: proxy.URL("/mcp")}
	badGateway.Store(1) // the discover
	_, err := tryConnect(ctx, t, spec)
	if !mcphttp.IsNotSent(err) || !strings.Contains(err.Error(), "502") {
		t.Fatalf("handshake whose discover got 502: %v, want not sent, naming the 502", err)
	}
	if s := proxy.Sessions(); len(s) != 0 {
		t.Fatalf("sessions %v: the handshake fell back to initialize", s)
	}
	s := connect(ctx, t, spec)
	if v := s.client.ProtocolVersion(); !mcp.IsModernProtocol(v) {
		t.Fatalf("protocol %s after the proxy recovered, want 2026-07-28", v)
	}
}
