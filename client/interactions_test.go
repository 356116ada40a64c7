package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// The features of issue 14 together (interceptors, idle shutdown, Apply)
// and Close's one deadline: the interactions a review found wrong.

// An approval interceptor whose own prompt timed out refuses the
// subscription with an error wrapping context.DeadlineExceeded: the
// subscription was never sent, so it is not recorded, and the server can
// go idle (it was recorded, so it never did, and every new runtime was
// subscribed to it, unintercepted).
func TestRefusedSubscribeIsNotRecorded(t *testing.T) {
	const uri = "test://a"
	deny := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		if c.Method() == "resources/subscribe" {
			pctx, cancel := context.WithTimeout(ctx, time.Millisecond) // the user never answered
			defer cancel()
			<-pctx.Done()
			return nil, fmt.Errorf("approval: %w", pctx.Err())
		}
		return next(ctx, c)
	}
	m, clock, verdicts := idleManager(t, WithInterceptor(deny))
	mustAdd(t, m, "s", ServerSpec{Dialer: InProcess(subscribable(uri)), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	err := m.SubscribeResource(testCtx(t), "s", uri)
	t.Logf("SubscribeResource: %v", err)
	s, _ := m.slot("s")
	s.mu.Lock()
	subs := s.subsLocked()
	s.mu.Unlock()
	t.Logf("subs after refusal: %v", subs)
	clock.Advance(testIdle)
	select {
	case v := <-verdicts:
		if v != idleClosed {
			t.Fatalf("idle check after a refused subscribe: %s, want closed", v)
		}
	case <-testCtx(t).Done():
		t.Fatal("no verdict")
	}
}

// Call by qualified name of a lazy server with no catalog goes through the
// interceptors before anything starts: one that refuses stops the spawn.
func TestCallOfALazyServerIsInterceptedBeforeItStarts(t *testing.T) {
	var dials atomic.Int32
	refuse := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		return nil, fmt.Errorf("policy: no")
	}
	m := newTestManager(t, WithInterceptor(refuse))
	ts := newTestServer()
	d := ts.dialer()
	mustAdd(t, m, "lazy", ServerSpec{Lazy: true, Dialer: func(ctx context.Context) (transport.Conn, error) {
		dials.Add(1)
		return d(ctx)
	}})
	_, err := m.Call(testCtx(t), "lazy__echo", map[string]any{"text": "x"})
	t.Logf("Call: %v", err)
	if n := dials.Load(); n != 0 {
		t.Fatalf("a call every interceptor refuses dialled the lazy server %d time(s)", n)
	}
}

// hangConn's Close takes until its context ends (a child ignoring EOF),
// and records that context's deadline.
type hangConn struct {
	*inproc.Conn
	deadlines chan<- time.Time
}

func (c hangConn) Close(ctx context.Context) error {
	d, _ := ctx.Deadline()
	c.deadlines <- d
	<-ctx.Done()
	return c.Conn.Close(context.Background())
}

// Close of many runtimes, each of which takes its whole close timeout,
// gives every one of them the same deadline: the timeouts do not add up
// round after round (they did, when Close had 256 workers: ceil(n/256)
// close timeouts in all). The deadlines are compared, not the time Close
// took.
func TestCloseOneDeadlineForAllRuntimes(t *testing.T) {
	const closeTimeout = 300 * time.Millisecond
	m := New(WithTimeouts(Timeouts{Close: closeTimeout, IdleProbe: -1}))
	ts := newTestServer()
	const n = 257
	deadlines := make(chan time.Time, n)
	for i := range n {
		if err := m.Add(context.Background(), fmt.Sprintf("s%04d", i), ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) {
			c, err := ts.Dial(ctx)
			if err != nil {
				return nil, err
			}
			return hangConn{c, deadlines}, nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		mustWait(t, m, fmt.Sprintf("s%04d", i), lifecycle.Connected)
	}
	_ = m.Close()
	close(deadlines)
	got := 0
	var first time.Time
	for d := range deadlines {
		got++
		if got == 1 {
			first = d
		}
		if d.IsZero() || !d.Equal(first) {
			t.Fatalf("runtimes closed with deadlines %v apart, want one deadline for all", d.Sub(first))
		}
	}
	if got != n {
		t.Fatalf("%d runtimes closed, want %d", got, n)
	}
}

// While an approval interceptor holds a subscribe, the URI is not recorded
// yet: a runtime that connects meanwhile is not subscribed to it, and the
// server never hears of a subscription the interceptor then refuses.
func TestSubscribeAwaitingApprovalIsNotRenewed(t *testing.T) {
	hooks := &server.Hooks{}
	var mu sync.Mutex
	var methods []string
	hooks.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, message any) {
		mu.Lock()
		methods = append(methods, string(method))
		mu.Unlock()
	})
	srv := server.NewMCPServer("sub", "1.0", server.WithResourceCapabilities(true, false), server.WithHooks(hooks))
	const uri = "test://a"
	srv.AddResource(mcp.NewResource(uri, "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "a"}}, nil
	})
	ip := inproc.New(srv)
	entered, verdict := make(chan struct{}), make(chan error)
	approve := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		if c.Method() == "resources/subscribe" {
			entered <- struct{}{}
			if err := <-verdict; err != nil {
				return nil, err
			}
		}
		return next(ctx, c)
	}
	m := newTestManager(t, WithInterceptor(approve), WithPolicy(fastPolicy))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) { return ip.Dial(ctx) }})
	mustWait(t, m, "s", lifecycle.Connected)
	errc := make(chan error, 1)
	go func() { errc <- m.SubscribeResource(testCtx(t), "s", uri) }()
	<-entered
	ip.Kill(nil) // the server restarts while the user thinks
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	// The new runtime renews what is recorded when it dials, before it is
	// Connected: a subscription awaiting approval must not be among it.
	if subs, _ := m.Subscriptions("s"); len(subs) != 0 {
		t.Fatalf("subscriptions recorded while the interceptor had not passed the request on: %v", subs)
	}
	verdict <- errors.New("user said no")
	t.Logf("SubscribeResource: %v", <-errc)
	mu.Lock()
	defer mu.Unlock()
	for _, method := range methods {
		if method == "subscriptions/listen" || method == "resources/subscribe" {
			t.Fatalf("the server got %s for a subscription the interceptor had not approved (and then refused): %v", method, methods)
		}
	}
}

// A call waiting for an interceptor's approval is use: the idle check does
// not close the server under it (it did, and the approved call paid a cold
// start on the next generation).
func TestIdleApprovalWaitIsUse(t *testing.T) {
	entered, approved := make(chan struct{}), make(chan struct{})
	approve := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		entered <- struct{}{}
		<-approved
		return next(ctx, c)
	}
	m, clock, verdicts := idleManager(t, WithInterceptor(approve))
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "x"})
		errc <- err
	}()
	<-entered
	clock.Advance(testIdle)
	v := <-verdicts
	close(approved)
	err := <-errc
	st, _ := m.Status("s")
	t.Logf("verdict while awaiting approval: %s; call: %v; generation after: %d, dials %d", v, err, st.Generation, ts.Dials())
	if v == idleClosed {
		t.Fatalf("the server was closed while a call awaited approval (the call then dialled generation %d)", st.Generation)
	}
}

// An unsubscribe the interceptor refuses never reaches the server, so the
// host keeps the subscription too: it renews it, and the idle check sees it.
func TestRefusedUnsubscribeKeepsTheSubscription(t *testing.T) {
	const uri = "test://a"
	deny := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		if c.Method() == "resources/unsubscribe" {
			return nil, errors.New("policy: keep watching")
		}
		return next(ctx, c)
	}
	m, clock, verdicts := idleManager(t, WithInterceptor(deny))
	mustAdd(t, m, "s", ServerSpec{Dialer: InProcess(subscribable(uri)), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	if err := m.SubscribeResource(testCtx(t), "s", uri); err != nil {
		t.Fatal(err)
	}
	err := m.UnsubscribeResource(testCtx(t), "s", uri)
	t.Logf("UnsubscribeResource: %v", err)
	clock.Advance(testIdle)
	if v := <-verdicts; v != idleSubscribed {
		t.Fatalf("after a refused unsubscribe the idle check found %s, want subscribed (the server still is)", v)
	}
}

// Apply of a changed entry leaves a server that idle shutdown closed
// stopped until its next request, as a lazy one.
func TestApplyLeavesAnIdleServerStopped(t *testing.T) {
	ts := newTestServer()
	m, clock, verdicts := idleManager(t)
	m.opts.dialOverride = func(ServerSpec) Dialer { return ts.dialer() }
	applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "idleTimeout": "1m"}}}`)
	mustWait(t, m, "s", lifecycle.Connected)
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustWait(t, m, "s", lifecycle.Disconnected)
	res := applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "args": ["v2"], "idleTimeout": "1m"}}}`)
	st, _ := m.Status("s") // a connect Apply started would show as Connecting already
	t.Logf("Apply: %v; state %s, dials %d", res, st.State, ts.Dials())
	if st.State != lifecycle.Disconnected || ts.Dials() != 1 {
		t.Fatalf("an unused idle server was dialled by Apply: %d dials, state %s", ts.Dials(), st.State)
	}
}

// A required server that went idle counts as connected for Apply: a later
// Apply neither fails nor hangs waiting for it.
func TestApplyOfARequiredIdleServer(t *testing.T) {
	ts := newTestServer()
	m, clock, verdicts := idleManager(t)
	m.opts.dialOverride = func(ServerSpec) Dialer { return ts.dialer() }
	const js = `{"mcpServers": {"s": {"command": "srv", "idleTimeout": "1m", "required": true}}}`
	applyJSON(t, m, js)
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustWait(t, m, "s", lifecycle.Disconnected)
	cfg, err := ParseConfig([]byte(js), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := m.Apply(ctx, cfg)
	if err != nil {
		t.Fatalf("Apply of the unchanged config: %v (%v)", err, res)
	}
}
