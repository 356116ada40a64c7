package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// slowCloseConn is a Conn whose Close waits for gate before closing, and records
// when it has closed.
type slowCloseConn struct {
	transport.Conn
	gate   <-chan struct{}
	closed *atomic.Bool
}

func (c *slowCloseConn) Close(ctx context.Context) error {
	select {
	case <-c.gate:
	case <-ctx.Done():
	}
	err := c.Conn.Close(ctx)
	c.closed.Store(true)
	return err
}

func slowCloseDialer(d Dialer, gate <-chan struct{}, closed *atomic.Bool) Dialer {
	return func(ctx context.Context) (transport.Conn, error) {
		c, err := d(ctx)
		if err != nil {
			return nil, err
		}
		return &slowCloseConn{Conn: c, gate: gate, closed: closed}, nil
	}
}

// closeMustWaitFor checks that Close, started once another teardown of the
// slot is under way, does not return before that teardown closed the
// runtime (whose Close waits on gate).
func closeMustWaitFor(t *testing.T, stop func(*Manager) error) {
	ts := newTestServer()
	gate := make(chan struct{})
	var closed atomic.Bool
	m := newTestManager(t, WithTimeouts(Timeouts{Drain: 10 * time.Second, Close: 10 * time.Second}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: slowCloseDialer(ts.dialer(), gate, &closed)})
	mustWait(t, m, "s", lifecycle.Connected)

	inflight := callBlocked(t, m, ts)
	stopped := make(chan error, 1)
	go func() { stopped <- stop(m) }()
	rec.wait(t, func(e Event) bool {
		return e.Kind == EventState && (e.To == lifecycle.Disabling || e.To == lifecycle.Closed)
	})

	closeDone := make(chan error, 1)
	go func() { closeDone <- m.Close() }()
	rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Closed })
	close(ts.block) // the call ends; the runtime's close now waits on gate
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight call: %v", err)
	}
	select {
	case <-closeDone:
		if !closed.Load() {
			t.Fatal("Close returned while the runtime was still being closed")
		}
	case <-time.After(300 * time.Millisecond): // Close is waiting for the runtime, as it should
	}
	close(gate)
	<-closeDone
	if err := <-stopped; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if !closed.Load() || ts.openConns() != 0 {
		t.Fatal("runtime not closed after Close returned")
	}
}

func TestCloseWaitsForADisableInProgress(t *testing.T) {
	closeMustWaitFor(t, func(m *Manager) error { return m.Disable(testCtx(t), "s") })
}

func TestCloseWaitsForARemoveInProgress(t *testing.T) {
	closeMustWaitFor(t, func(m *Manager) error { return m.Remove(testCtx(t), "s") })
}

// A server added under the name of one still being removed must not be
// held to the old one's generations: once Connected, its catalog is
// published, and stays published when the old one's Remove returns.
func TestAddDuringRemoveOfTheSameName(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t, WithTimeouts(Timeouts{Drain: 10 * time.Second}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	inflight := callBlocked(t, m, ts)
	removed := make(chan error, 1)
	go func() { removed <- m.Remove(testCtx(t), "s") }()
	rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Closed })

	ts2 := newTestServer()
	err := m.Add(testCtx(t), "s", ServerSpec{Dialer: ts2.dialer()})
	if err == nil {
		mustWait(t, m, "s", lifecycle.Connected)
		if _, ok := m.View().Catalog("s"); !ok {
			t.Fatal("server added while its namesake was being removed is Connected but unpublished")
		}
	} else if !errors.Is(err, ErrDuplicateServer) {
		t.Fatalf("Add during Remove: %v", err)
	}
	close(ts.block)
	<-inflight
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if err != nil { // the name is free once Remove returned
		mustAdd(t, m, "s", ServerSpec{Dialer: ts2.dialer()})
		mustWait(t, m, "s", lifecycle.Connected)
	}
	if _, ok := m.View().Catalog("s"); !ok {
		t.Fatal("new server's catalog not published after the old one's Remove returned")
	}
}

// Close is teardown, not a transaction: when the old runtime of a server
// whose entry changed fails to close, the new one starts all the same, and
// the close error is an event (as for any runtime closed in the background).
func TestApplyRestartsAServerWhoseOldRuntimeFailedToClose(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	m.opts.dialOverride = func(spec ServerSpec) Dialer {
		if spec.Stdio == nil {
			return nil
		}
		return ts.dialer()
	}
	rec := record(m)
	apply := func(js string) (ApplyResult, error) {
		t.Helper()
		cfg, err := ParseConfig([]byte(js), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		return m.Apply(testCtx(t), cfg)
	}
	if _, err := apply(`{"mcpServers": {"a": {"command": "a"}}}`); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "a", lifecycle.Connected)
	ts.mu.Lock()
	ts.closeErr = errors.New("test: close failed")
	ts.mu.Unlock()
	res, err := apply(`{"mcpServers": {"a": {"command": "a", "args": ["v2"]}}}`)
	if err != nil || !slices.Equal(res.Restarted, []string{"a"}) {
		t.Fatalf("Apply: %v, %v", res, err)
	}
	ev := rec.wait(t, func(e Event) bool { return e.Kind == EventCloseError })
	if ev.Server != "a" || !strings.Contains(ev.Err.Error(), "close failed") {
		t.Fatalf("close error event: %+v", ev)
	}
	if err := m.WaitFor(testCtx(t), "a", lifecycle.Connected); err != nil {
		t.Fatalf("server whose old runtime failed to close was not restarted: %v", err)
	}
}

// hangingSSE is an SSE endpoint that accepts the stream's GET and never
// answers it (until the test ends). Each GET is signalled on got.
func hangingSSE(t *testing.T) (url string, got <-chan struct{}) {
	release := make(chan struct{})
	gets := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case gets <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL + "/sse", gets
}

// The dial timeout bounds the whole attempt, the transport's Start
// included.
func TestDialTimeoutBoundsAStartThatHangs(t *testing.T) {
	m := newTestManager(t, WithTimeouts(Timeouts{Dial: 100 * time.Millisecond}),
		WithPolicy(lifecycle.Policy{MaxAttempts: 1, InitialInterval: time.Millisecond, ProbeInterval: -1}))
	url, _ := hangingSSE(t) // after the manager: its cleanup releases the server first
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: url, Kind: mcphttp.SSE}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, "s", lifecycle.PermanentlyFailed); err != nil {
		t.Fatalf("dials that hang in Start are not bounded by the dial timeout: %v", err)
	}
}

// Disable cancels a dial in progress at once, even one stuck in Start.
func TestDisableCancelsADialStuckInStart(t *testing.T) {
	m := newTestManager(t)
	url, got := hangingSSE(t)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: url, Kind: mcphttp.SSE}})
	<-got // the dial is in Start, waiting for the stream
	done := make(chan error, 1)
	go func() { done <- m.Disable(testCtx(t), "s") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Disable did not return: the dial it abandoned is stuck in Start")
	}
}

// A second Close, while the first is still closing runtimes, returns only
// once they are closed, as the first does.
func TestSecondCloseWaitsForTheFirst(t *testing.T) {
	ts := newTestServer()
	gate := make(chan struct{})
	var closed atomic.Bool
	m := newTestManager(t, WithTimeouts(Timeouts{Close: 10 * time.Second}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: slowCloseDialer(ts.dialer(), gate, &closed)})
	mustWait(t, m, "s", lifecycle.Connected)
	first := make(chan error, 1)
	go func() { first <- m.Close() }()
	rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Closed })
	second := make(chan error, 1)
	go func() { second <- m.Close() }()
	select {
	case <-second:
		if !closed.Load() {
			t.Fatal("a second Close returned while the first was still closing the runtime")
		}
	case <-time.After(300 * time.Millisecond): // waiting for the first, as it should
	}
	close(gate)
	<-first
	<-second
}

// TestOwnRequestNotAfterClose: a request the Manager sends on a runtime by
// itself (its subscriptions/listen stream, an idle probe), held up after it
// got past every check of the lease's context but before it reached the
// Conn, must not reach the Conn after the runtime was closed: closing waits
// for it. Without the wait, the Conn is closed under it and the request
// reaches it afterwards (TestModel saw it on a loaded machine: the listen
// stream a dial opened went out on a runtime a kill had closed meanwhile).
func TestOwnRequestNotAfterClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method mcp.MCPMethod
		opts   []Option
		start  func(ts *testServer) // makes the Manager send it, once connected
	}{
		{"listen", mcp.MethodSubscriptionsListen, nil, nil},
		// The servers of the others declare nothing to listen for: the
		// close would wait for the listen stream, not for the request held.
		// The probe of a 2026-07-28 server is server/discover.
		{"probe", mcp.MethodServerDiscover, []Option{WithTimeouts(Timeouts{IdleProbe: time.Millisecond})}, nil},
		// mcp-go's server sends list_changed to in-process sessions that
		// do not listen.
		{"refresh", mcp.MethodToolsList, nil, func(ts *testServer) {
			ts.MCPServer().SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServerListChanged(tc.method == mcp.MethodSubscriptionsListen)
			var armed atomic.Bool              // not the dial's own requests
			held := make(chan struct{})        // the request is held at the Conn
			waited := make(chan struct{})      // closing the runtime waits for it
			var heldOnce, waitedOnce sync.Once // one request held, one close
			hook := func(c *recConn, ctx context.Context, method string) {
				if method != string(tc.method) || !armed.Load() {
					return
				}
				heldOnce.Do(func() { close(held) })
				select {
				case <-c.closing: // the Conn was closed under the request
				case <-waited:
				}
			}
			ts.sendHook.Store(&hook)
			m := newTestManager(t, tc.opts...)
			m.onOwnWait = func(*lease) { waitedOnce.Do(func() { close(waited) }) }
			armed.Store(tc.method == mcp.MethodSubscriptionsListen)
			mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
			mustWait(t, m, "s", lifecycle.Connected)
			armed.Store(true)
			if tc.start != nil {
				tc.start(ts)
			}
			select {
			case <-held:
			case <-testCtx(t).Done():
				t.Fatalf("the runtime sent no %s of its own", tc.method)
			}
			if err := m.Disable(testCtx(t), "s"); err != nil {
				t.Fatal(err)
			}
			if open := ts.openConns(); open != 0 {
				t.Fatalf("Disable returned with %d runtimes open", open)
			}
			// Close waits for every goroutine of the Manager's: the held
			// request has gone on and been counted, if late.
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if n := ts.lateRequests(); n != 0 {
				t.Fatalf("%d requests reached the runtime after it was closed: %v", n, ts.lateMethods())
			}
		})
	}
}
