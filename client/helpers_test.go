package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the stdio test servers' executable.
	faultserver.Main()
	gosdkserver.Main()
	hostMain() // after the servers: the host's children inherit its variable
	// mcp-go's server with an event store (the resume tests' servers) starts
	// a session's listening pump for a GET that races the session's end (a
	// DELETE, or the test server's shutdown) and never stops it: the
	// server's goroutine, in the test servers only, not one of ours (make
	// stress found one, once).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/mark3labs/mcp-go/server.(*StreamableHTTPServer).startListeningPump.func1"))
}

// testServer is an in-process mcp-go server with tools whose behaviour the
// tests control, and a Dialer whose connections record what reached them.
type testServer struct {
	*inproc.Server
	calls   atomic.Int64  // tool calls the server executed
	block   chan struct{} // "block" waits on it
	entered chan struct{} // "block" signals here once it started
	mu      sync.Mutex
	conns   []*recConn
	// staleNext makes the next request of the newest connection fail as an
	// HTTP server that forgot the session would, without executing it.
	staleNext atomic.Bool
	// closeErr is returned by every Close of a connection of this server.
	closeErr error
	// listCalls counts tools/list requests; while listGate is set they
	// wait for it to close.
	listCalls atomic.Int64
	listGate  atomic.Pointer[chan struct{}]
	// listFail makes tools/list answer with a JSON-RPC error.
	listFail atomic.Bool
	// sendHook, when set, runs as a request enters a connection's
	// transport, before it is counted as late: it stands for a sender
	// held up there.
	sendHook atomic.Pointer[func(c *recConn, ctx context.Context, method string)]
}

func newTestServer() *testServer { return newTestServerListChanged(true) }

// newTestServerListChanged is newTestServer declaring tools listChanged or
// not: a runtime of a server that declares nothing to listen for opens no
// subscriptions/listen stream.
func newTestServerListChanged(listChanged bool) *testServer {
	ts := &testServer{block: make(chan struct{}), entered: make(chan struct{}, 16)}
	srv := server.NewMCPServer("test", "1.0", server.WithToolCapabilities(listChanged))
	readOnly := true
	idem := true
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("text"), mcp.WithReadOnlyHintAnnotation(readOnly)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			return mcp.NewToolResultText(r.GetString("text", "")), nil
		})
	srv.AddTool(mcp.NewTool("incr", mcp.WithDestructiveHintAnnotation(true)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := ts.calls.Add(1)
			return mcp.NewToolResultText(time.Duration(n).String()), nil
		})
	srv.AddTool(mcp.NewTool("put", mcp.WithIdempotentHintAnnotation(idem)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			return mcp.NewToolResultText("ok"), nil
		})
	srv.AddTool(mcp.NewTool("fail"),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("tool says no"), nil
		})
	srv.AddTool(mcp.NewTool("crash"), // the connection dies while the tool runs
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			ts.Kill(nil)
			return mcp.NewToolResultText("never seen"), nil
		})
	srv.AddTool(mcp.NewTool("crash-readonly", mcp.WithReadOnlyHintAnnotation(readOnly)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if ts.calls.Add(1) == 1 {
				ts.Kill(nil)
			}
			return mcp.NewToolResultText("second try"), nil
		})
	srv.AddTool(mcp.NewTool("block"),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.entered <- struct{}{}
			select {
			case <-ts.block:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			ts.calls.Add(1)
			return mcp.NewToolResultText("unblocked"), nil
		})
	ts.Server = inproc.New(srv)
	return ts
}

func (ts *testServer) dialer() Dialer {
	return func(ctx context.Context) (transport.Conn, error) {
		c, err := ts.Dial(ctx)
		if err != nil {
			return nil, err
		}
		rc := &recConn{Conn: c, ts: ts, closing: make(chan struct{})}
		ts.mu.Lock()
		ts.conns = append(ts.conns, rc)
		ts.mu.Unlock()
		return rc, nil
	}
}

// lateRequests counts requests that reached a connection after it was closed.
func (ts *testServer) lateRequests() int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var n int64
	for _, c := range ts.conns {
		n += c.afterClose.Load()
	}
	return n
}

// lateMethods lists the methods of the requests lateRequests counts.
func (ts *testServer) lateMethods() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []string
	for _, c := range ts.conns {
		c.lateMu.Lock()
		out = append(out, c.late...)
		c.lateMu.Unlock()
	}
	return out
}

// openConns counts connections not yet closed.
func (ts *testServer) openConns() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, c := range ts.conns {
		if !c.closed.Load() {
			n++
		}
	}
	return n
}

// closesDone waits until every runtime the server's slot was closing in
// the background (after a loss, a Reconnect, going idle) is closed: such a
// close runs after the state moved on, so a test that counts open
// connections once the server is Connected again must wait for it.
func closesDone(t *testing.T, m *Manager, name string) {
	t.Helper()
	s, err := m.slot(name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.closing.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-testCtx(t).Done():
		t.Fatal("the slot's background closes did not end")
	}
}

// recConn wraps an in-process Conn to record requests after Close and to
// inject a stale-session rejection.
type recConn struct {
	*inproc.Conn
	ts         *testServer
	closed     atomic.Bool
	closing    chan struct{} // closed as Close begins
	closeOnce  sync.Once
	afterClose atomic.Int64
	lateMu     sync.Mutex
	late       []string // the methods of the requests counted in afterClose
}

func (c *recConn) Transport() mcptransport.Interface {
	return &recTransport{Interface: c.Conn.Transport(), c: c}
}

func (c *recConn) Close(ctx context.Context) error {
	c.closed.Store(true)
	c.closeOnce.Do(func() { close(c.closing) })
	err := c.Conn.Close(ctx)
	c.ts.mu.Lock()
	closeErr := c.ts.closeErr
	c.ts.mu.Unlock()
	if closeErr != nil {
		return closeErr
	}
	return err
}

type recTransport struct {
	mcptransport.Interface
	c *recConn
}

func (t *recTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	if h := t.c.ts.sendHook.Load(); h != nil {
		(*h)(t.c, ctx, req.Method)
	}
	if t.c.closed.Load() {
		t.c.afterClose.Add(1)
		t.c.lateMu.Lock()
		t.c.late = append(t.c.late, req.Method)
		t.c.lateMu.Unlock()
	}
	if req.Method == string(mcp.MethodToolsList) {
		t.c.ts.listCalls.Add(1)
		if gate := t.c.ts.listGate.Load(); gate != nil {
			select {
			case <-*gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if t.c.ts.listFail.Load() {
			return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID,
				Error: &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: "test: list is broken"}}, nil
		}
	}
	if req.Method == string(mcp.MethodToolsCall) && t.c.ts.staleNext.CompareAndSwap(true, false) {
		return nil, mcptransport.ErrSessionTerminated
	}
	return t.Interface.SendRequest(ctx, req)
}

// fastPolicy retries at once-ish so tests never wait on a real backoff.
var fastPolicy = lifecycle.Policy{
	InitialInterval: time.Millisecond,
	MaxInterval:     2 * time.Millisecond,
	MaxAttempts:     3,
	ProbeInterval:   -1,
}

// newTestManager's close timeout is the product's default: a close that
// escalates through a short grace to SIGKILL and reaps the child took over a
// second under make stress (TestStdioFaults/ignore_SIGTERM, 1 of 20 rounds),
// and a test that wants a shorter one sets its own.
func newTestManager(t *testing.T, opts ...Option) *Manager {
	t.Helper()
	m := New(append([]Option{WithPolicy(fastPolicy), WithTimeouts(Timeouts{Ready: 2 * time.Second, Drain: time.Second, Close: DefaultCloseTimeout})}, opts...)...)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		if n := m.illegal.Load(); n != 0 {
			t.Errorf("%d illegal transitions were attempted", n)
		}
	})
	return m
}

// testCtx bounds a test's waits. Generous: a deadline only ends a wait
// that would never end, and a -race build of this package on two busy
// cores runs its parallel tests ten times slower than a quiet machine
// (TestCatalogOverTheItemLimit's 11 pages of 1,000 tools took 7 s alone
// at a load of 20, and over 20 s beside the package's other tests).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustAdd(t *testing.T, m *Manager, name string, spec ServerSpec) {
	t.Helper()
	if err := m.Add(testCtx(t), name, spec); err != nil {
		t.Fatal(err)
	}
}

func mustWait(t *testing.T, m *Manager, name string, st lifecycle.State) {
	t.Helper()
	if err := m.WaitFor(testCtx(t), name, st); err != nil {
		t.Fatal(err)
	}
}

// recorder collects events until the manager closes.
type recorder struct {
	mu     sync.Mutex
	events []Event
	more   chan struct{}
	done   chan struct{}
}

func record(m *Manager) *recorder {
	ch, _ := m.Events(1 << 16)
	r := &recorder{more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for e := range ch {
			r.mu.Lock()
			r.events = append(r.events, e)
			close(r.more)
			r.more = make(chan struct{})
			r.mu.Unlock()
		}
	}()
	return r
}

// waitState waits for a state event of server moving to `to`, and returns it.
func (r *recorder) wait(t *testing.T, pred func(Event) bool) Event {
	t.Helper()
	ctx := testCtx(t)
	seen := 0
	for {
		r.mu.Lock()
		evs, more := r.events, r.more
		r.mu.Unlock()
		for ; seen < len(evs); seen++ {
			if pred(evs[seen]) {
				return evs[seen]
			}
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("no matching event; got %v", states(evs, ""))
		}
	}
}

// states lists the state sequence of server's events ("" for all).
func states(evs []Event, server string) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == EventState && (server == "" || e.Server == server) {
			out = append(out, e.To.String())
		}
	}
	return out
}

func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

var errDown = errors.New("test: server down")

func newTool(name string) mcp.Tool { return mcp.NewTool(name) }

// text returns the first text content of a result.
func text(r *mcp.CallToolResult) string {
	if r == nil || len(r.Content) == 0 {
		return ""
	}
	if tc, ok := r.Content[0].(mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// waitStates waits until server's state events are exactly want.
func (r *recorder) waitStates(t *testing.T, server string, want ...string) {
	t.Helper()
	ctx := testCtx(t)
	for {
		r.mu.Lock()
		got, more := states(r.events, server), r.more
		r.mu.Unlock()
		if slices.Equal(got, want) {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("states of %q: %v, want %v", server, got, want)
		}
	}
}

// awaitPublished waits, rechecking at each event, until the published
// catalog of server holds the qualified tool; what says which tool it is
// in the failure.
func (r *recorder) awaitPublished(t *testing.T, m *Manager, server, tool, what string) {
	t.Helper()
	ctx := testCtx(t)
	for {
		r.mu.Lock()
		more := r.more
		r.mu.Unlock()
		if slices.Contains(publishedTools(m, server), tool) {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("%s never showed: tools %v, states %v", what, publishedTools(m, server), states(r.snapshot(), server))
		}
	}
}

// callBlocked starts a call of ts's "block" tool on server "s" and returns
// once the server runs it; the call's outcome arrives on the channel.
func callBlocked(t *testing.T, m *Manager, ts *testServer) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := m.CallTool(testCtx(t), "s", "block", nil)
		done <- err
	}()
	<-ts.entered
	return done
}
