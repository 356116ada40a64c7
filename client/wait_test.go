package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// shortCtx is a context that ends soon: for a wait that must end with it.
// How soon does not matter: the server it waits for is not coming.
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// failedOnce waits until the server's first dial failed: its last cause is
// known.
func failedOnce(t *testing.T, rec *recorder, server string) Event {
	t.Helper()
	return rec.wait(t, func(e Event) bool { return e.Server == server && e.Kind == EventRetry && e.Err != nil })
}

// TestFailFastOneErrorForEveryAsker: a request, Apply's wait for its
// required servers, WaitFor and WaitReady get the same error from a server
// in a state that no wait ends (failFastLocked), each naming the server,
// with the sentinel and the cause.
func TestFailFastOneErrorForEveryAsker(t *testing.T) {
	needsAuth := fmt.Errorf("test: %w: the token was refused", ErrNeedsAuthorization)
	for _, tt := range []struct {
		name  string
		spec  func(*testServer) ServerSpec
		state lifecycle.State
		is    []error
		// waitFor: WaitConnected fails at once too (else it waits, for the
		// user or the host, and ends with ctx and the cause).
		waitFor bool
		// ready: WaitReady counts the server as ready.
		ready bool
	}{
		{"permanently failed", func(*testServer) ServerSpec {
			return ServerSpec{Stdio: &stdio.Spec{Command: "mcpfleet-no-such-server"}}
		}, lifecycle.PermanentlyFailed, []error{ErrPermanentlyFailed, stdio.ErrCommandNotFound}, true, false},
		{"needs authorization", func(ts *testServer) ServerSpec {
			ts.SetDialError(needsAuth)
			return ServerSpec{Dialer: ts.dialer()}
		}, lifecycle.NeedsAuthorization, []error{ErrNeedsAuthorization, needsAuth}, false, false},
		{"disabled", func(ts *testServer) ServerSpec {
			return ServerSpec{Dialer: ts.dialer(), Disabled: true}
		}, lifecycle.Disabled, []error{ErrDisabled}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer()
			m := newTestManager(t, WithPolicy(slowPolicy))
			mustAdd(t, m, "s", tt.spec(ts))
			mustWait(t, m, "s", tt.state)
			check := func(who string, err error) {
				t.Helper()
				var se *ServerError
				if !errors.As(err, &se) || se.Server != "s" {
					t.Errorf("%s: %v does not name the server", who, err)
				}
				for _, want := range tt.is {
					if !errors.Is(err, want) {
						t.Errorf("%s: %v is not %v", who, err, want)
					}
				}
				if errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s: %v waited for its context", who, err)
				}
			}
			long, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			_, err := m.CallTool(long, "s", "echo", nil)
			check("CallTool", err)
			check("Apply's wait", m.waitRequired(long, "apply", []string{"s"}))
			if tt.waitFor {
				check("WaitConnected", m.WaitConnected(long, "s"))
			} else if err := m.WaitConnected(shortCtx(t), "s"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("WaitConnected: %v, want a wait to its context's end", err)
			}
			if err := m.WaitReady(long); tt.ready {
				if err != nil {
					t.Errorf("WaitReady: %v, want ready", err)
				}
			} else {
				check("WaitReady", err)
			}
		})
	}
}

// TestWaitForEndsWithTheCause: a wait for Connected that its context ends
// says why the server is not there: the error wraps the context's error
// and the server's last cause, and names the state. Before, it said only
// "still Connecting: context deadline exceeded", and the cause was in
// Status.LastError alone.
func TestWaitForEndsWithTheCause(t *testing.T) {
	ts := newTestServer()
	ts.SetDialError(errDown)
	m := newTestManager(t, WithPolicy(slowPolicy))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	failedOnce(t, rec, "s")
	for _, w := range []struct {
		name string
		wait func(context.Context) error
	}{
		{"WaitFor", func(ctx context.Context) error { return m.WaitFor(ctx, "s", lifecycle.Connected) }},
		{"WaitConnected", func(ctx context.Context) error { return m.WaitConnected(ctx, "s") }},
		{"WaitReady", m.WaitReady},
	} {
		err := w.wait(shortCtx(t))
		t.Logf("%s: %v", w.name, err)
		var se *ServerError
		if !errors.As(err, &se) || se.Server != "s" {
			t.Errorf("%s: %v does not name the server", w.name, err)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errDown) {
			t.Errorf("%s: %v; want the context's error and the cause, both", w.name, err)
		}
		if !strings.Contains(err.Error(), "still Connecting") || !strings.Contains(err.Error(), errDown.Error()) {
			t.Errorf("%s: %v does not say the state and the cause", w.name, err)
		}
	}
}

// waitingCtx is a context that says when a wait first selects on it:
// waiting closes at the first call of Done, which a wait makes after it
// has read the server's state.
type waitingCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitingCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// TestWaitEndsWithTheCauseFoundMeanwhile: a wait that began while the
// server's first dial was still going, and that its context ends after the
// dial failed, says the cause too. The state stays Connecting through a
// failed dial, so nothing wakes the wait: it must read the cause when it
// ends, not only when it began. Before, it said "still Connecting: context
// canceled" alone.
func TestWaitEndsWithTheCauseFoundMeanwhile(t *testing.T) {
	for _, w := range []struct {
		name string
		wait func(context.Context, *Manager) error
	}{
		{"WaitConnected", func(ctx context.Context, m *Manager) error { return m.WaitConnected(ctx, "s") }},
		// Apply's wait for a required server and WaitReady end in
		// awaitReady (which they reach through a context of their own).
		{"awaitReady", func(ctx context.Context, m *Manager) error {
			s, err := m.slot("s")
			if err != nil {
				return err
			}
			return s.awaitReady(ctx, false)
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			dialing, fail := make(chan struct{}), make(chan struct{})
			var once sync.Once
			m := newTestManager(t, WithPolicy(slowPolicy))
			events, unsubscribe := m.Events(1 << 10)
			defer unsubscribe()
			mustAdd(t, m, "s", ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) {
				once.Do(func() { close(dialing) })
				select {
				case <-fail:
					return nil, errDown
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}})
			<-dialing
			parent, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			ctx := &waitingCtx{Context: parent, waiting: make(chan struct{})}
			go func() {
				select {
				case <-ctx.waiting: // the wait has read the state, with no cause yet
				case <-parent.Done():
					return
				}
				close(fail)
				for e := range events { // until the failure is the server's last cause
					if e.Server == "s" && e.Kind == EventRetry && errors.Is(e.Err, errDown) {
						break
					}
				}
				cancel()
			}()
			err := w.wait(ctx, m)
			t.Logf("%s: %v", w.name, err)
			if !errors.Is(err, context.Canceled) || !errors.Is(err, errDown) {
				t.Errorf("%s: %v; want the context's end and the cause, both", w.name, err)
			}
		})
	}
}

// TestWaitForQuotesTheBanner: the server, a child that writes a
// banner to stdout and then nothing: a WaitConnected that gives up says
// what the server wrote, from the last failed dial, not only that the
// context ended.
func TestWaitForQuotesTheBanner(t *testing.T) {
	m := newTestManager(t, WithPolicy(slowPolicy), WithTimeouts(Timeouts{Dial: 2 * time.Second}))
	rec := record(m)
	mustAdd(t, m, "s", faultSpec(faultserver.ModeBannerHang))
	failedOnce(t, rec, "s")
	err := m.WaitConnected(shortCtx(t), "s")
	t.Logf("%v", err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), faultserver.BannerLine) {
		t.Fatalf("WaitConnected: %v; want the context's end and the banner", err)
	}
}

// TestWaitReady: WaitReady waits for the whole fleet: a server that
// connects, one disabled, one lazy (ready as they are); it returns at once
// with the cause, naming the server, when one settles short of Connected
// in a state no wait ends; and when its context ends, it names every
// server still not ready with its cause.
func TestWaitReady(t *testing.T) {
	t.Run("ready", func(t *testing.T) {
		ts := newTestServer()
		m := newTestManager(t)
		mustAdd(t, m, "a", ServerSpec{Dialer: ts.dialer()})
		mustAdd(t, m, "b", ServerSpec{Dialer: ts.dialer()})
		mustAdd(t, m, "off", ServerSpec{Dialer: ts.dialer(), Disabled: true})
		mustAdd(t, m, "lazy", ServerSpec{Dialer: ts.dialer(), Lazy: true})
		if err := m.WaitReady(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "b"} {
			if st, _ := m.Status(name); st.State != lifecycle.Connected {
				t.Errorf("%s is %v after WaitReady", name, st.State)
			}
		}
		if st, _ := m.Status("lazy"); st.State != lifecycle.Disconnected {
			t.Errorf("WaitReady started the lazy server: %v", st.State)
		}
	})
	t.Run("a mistake ends it at once", func(t *testing.T) {
		ts := newTestServer()
		m := newTestManager(t, WithPolicy(slowPolicy))
		mustAdd(t, m, "ok", ServerSpec{Dialer: ts.dialer()})
		mustAdd(t, m, "broken", ServerSpec{Stdio: &stdio.Spec{Command: "mcpfleet-no-such-server"}})
		down := newTestServer()
		down.SetDialError(errDown)
		mustAdd(t, m, "down", ServerSpec{Dialer: down.dialer()}) // retried for a long while
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		err := m.WaitReady(ctx)
		t.Logf("%v", err)
		var se *ServerError
		if !errors.As(err, &se) || se.Server != "broken" || se.Op != "wait ready" ||
			!errors.Is(err, ErrPermanentlyFailed) || !errors.Is(err, stdio.ErrCommandNotFound) {
			t.Fatalf("WaitReady = %v; want the broken server named, PermanentlyFailed, command not found", err)
		}
		if ctx.Err() != nil {
			t.Fatal("WaitReady waited for its context")
		}
	})
	t.Run("its context ends", func(t *testing.T) {
		ts := newTestServer()
		m := newTestManager(t, WithPolicy(slowPolicy))
		rec := record(m)
		mustAdd(t, m, "ok", ServerSpec{Dialer: ts.dialer()})
		down := newTestServer()
		down.SetDialError(errDown)
		mustAdd(t, m, "down", ServerSpec{Dialer: down.dialer()})
		mustWait(t, m, "ok", lifecycle.Connected)
		failedOnce(t, rec, "down")
		err := m.WaitReady(shortCtx(t))
		t.Logf("%v", err)
		var se *ServerError
		if !errors.As(err, &se) || se.Server != "down" || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errDown) {
			t.Fatalf("WaitReady = %v; want the down server named, with the context's error and its cause", err)
		}
		if strings.Contains(err.Error(), `"ok"`) {
			t.Errorf("WaitReady names the connected server: %v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		m := newTestManager(t)
		m.Close()
		if err := m.WaitReady(testCtx(t)); !errors.Is(err, ErrClosed) {
			t.Fatalf("WaitReady after Close = %v", err)
		}
	})
}
