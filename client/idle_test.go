package client

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// The idle tests run the Manager on a fake clock with the idle probe off,
// so that the idle checks are its only timers: a check fires only when the
// test advances the clock past it, and the Manager's onIdle hook says what
// each one found. Nothing waits on real time.

const testIdle = time.Minute

// idleManager returns a Manager on a fake clock and the verdicts of its
// idle checks, in order.
func idleManager(t *testing.T, opts ...Option) (*Manager, *fakeclock.Clock, <-chan idleVerdict) {
	t.Helper()
	clock := fakeclock.New(time.Unix(1000, 0))
	m := newTestManager(t, append([]Option{WithClock(clock), WithTimeouts(Timeouts{IdleProbe: -1})}, opts...)...)
	verdicts := make(chan idleVerdict, 64)
	m.onIdle = func(_ *slot, v idleVerdict) { verdicts <- v }
	return m, clock, verdicts
}

// nextVerdict waits for the next idle check's verdict and checks it.
func nextVerdict(t *testing.T, verdicts <-chan idleVerdict, want idleVerdict) {
	t.Helper()
	select {
	case v := <-verdicts:
		if v != want {
			t.Fatalf("idle check: %s, want %s", v, want)
		}
	case <-testCtx(t).Done():
		t.Fatalf("no idle check; want %s", want)
	}
}

// mustIdleClose waits for server to go Disconnected for being idle, checks
// the event and the status, and waits until the old runtime is closed.
func mustIdleClose(t *testing.T, m *Manager, rec *recorder, clock *fakeclock.Clock, name string, gen uint64) {
	t.Helper()
	e := rec.wait(t, func(e Event) bool {
		return e.Kind == EventState && e.Server == name && e.From == lifecycle.Connected &&
			e.To == lifecycle.Disconnected && e.Generation == gen
	})
	if !errors.Is(e.Err, ErrIdleTimeout) {
		t.Fatalf("idle event: err %v, want ErrIdleTimeout", e.Err)
	}
	st, err := m.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != lifecycle.Disconnected || !st.IdleSince.Equal(clock.Now()) || st.LastError != nil || st.Generation != gen {
		t.Fatalf("status after idle: state %s, idle since %v (now %v), last error %v, generation %d",
			st.State, st.IdleSince, clock.Now(), st.LastError, st.Generation)
	}
	s, err := m.slot(name)
	if err != nil {
		t.Fatal(err)
	}
	s.closing.Wait() // the detached runtime's background close
}

// mustEcho calls the echo tool of server and checks the answer.
func mustEcho(t *testing.T, m *Manager, server string) {
	t.Helper()
	res, err := m.CallTool(testCtx(t), server, "echo", map[string]any{"text": "hi"})
	if err != nil || text(res) != "hi" {
		t.Fatalf("echo = %q, %v", text(res), err)
	}
}

// TestIdleShutdown: a server used within its idle timeout stays; one
// unused for it has its runtime closed and goes Disconnected with
// ErrIdleTimeout, its catalog still published; the next call starts it
// again, one generation up, and waits for it as for a lazy server.
func TestIdleShutdown(t *testing.T) {
	m, clock, verdicts := idleManager(t)
	rec := record(m)
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	if st, _ := m.Status("s"); st.IdleTimeout != testIdle || !st.IdleSince.IsZero() {
		t.Fatalf("status: idle timeout %v, idle since %v", st.IdleTimeout, st.IdleSince)
	}

	clock.Advance(testIdle / 2)
	mustEcho(t, m, "s") // used half-way: the check at the timeout finds it used
	clock.Advance(testIdle / 2)
	nextVerdict(t, verdicts, idleNotYet)
	if st, _ := m.Status("s"); st.State != lifecycle.Connected || st.Generation != 1 {
		t.Fatalf("after a use within the timeout: %s, generation %d", st.State, st.Generation)
	}

	clock.Advance(testIdle / 2) // a whole timeout since the call
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
	if n := ts.openConns(); n != 0 {
		t.Fatalf("%d connections open after the idle close", n)
	}
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("the idle server's catalog was unpublished")
	}

	mustEcho(t, m, "s")
	st, _ := m.Status("s")
	if st.State != lifecycle.Connected || st.Generation != 2 || !st.IdleSince.IsZero() {
		t.Fatalf("after the next call: %s, generation %d, idle since %v", st.State, st.Generation, st.IdleSince)
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Disconnected", "Connecting", "Connected")

	// The new runtime goes idle the same way.
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 2)
}

// subscribable is an mcp-go server with one resource, uri, that a host can
// subscribe to.
func subscribable(uri string) *server.MCPServer {
	srv := server.NewMCPServer("sub", "1.0", server.WithResourceCapabilities(true, false))
	srv.AddResource(mcp.NewResource(uri, "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "a"}}, nil
	})
	return srv
}

// TestIdleSubscriptionKeepsServer: a server the host is subscribed to is
// never idle, however long; once unsubscribed, it is closed a timeout after
// the unsubscribe.
func TestIdleSubscriptionKeepsServer(t *testing.T) {
	const uri = "test://a"
	m, clock, verdicts := idleManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: InProcess(subscribable(uri)), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	if err := m.SubscribeResource(testCtx(t), "s", uri); err != nil {
		t.Fatalf("SubscribeResource: %v", err)
	}
	for range 3 {
		clock.Advance(testIdle)
		nextVerdict(t, verdicts, idleSubscribed)
	}
	if st, _ := m.Status("s"); st.State != lifecycle.Connected || st.Generation != 1 {
		t.Fatalf("subscribed server: %s, generation %d", st.State, st.Generation)
	}
	if err := m.UnsubscribeResource(testCtx(t), "s", uri); err != nil {
		t.Fatalf("UnsubscribeResource: %v", err)
	}
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
}

// TestIdleInFlightKeepsServer: a call in flight for longer than the idle
// timeout keeps the server; the timeout counts from the call's end.
func TestIdleInFlightKeepsServer(t *testing.T) {
	m, clock, verdicts := idleManager(t)
	rec := record(m)
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)

	done := callBlocked(t, m, ts)
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleBusy)
	clock.Advance(testIdle / 2)
	close(ts.block) // the call ends a timeout and a half in
	if err := <-done; err != nil {
		t.Fatalf("the long call: %v", err)
	}
	clock.Advance(testIdle / 2) // a timeout after the check, half of one after the call
	nextVerdict(t, verdicts, idleNotYet)
	if st, _ := m.Status("s"); st.State != lifecycle.Connected || st.Generation != 1 {
		t.Fatalf("half a timeout after the long call: %s, generation %d", st.State, st.Generation)
	}
	clock.Advance(testIdle / 2)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
}

// TestIdleServerRequestKeepsServer: a request of the server's that the host
// is still answering (sampling here) keeps the server; the timeout counts
// from its answer. The request comes through the lease's handlers as
// mcp-go hands it over, outside any call of the host's.
func TestIdleServerRequestKeepsServer(t *testing.T) {
	entered, answer := make(chan struct{}), make(chan struct{})
	sample := func(ctx context.Context, _ string, _ mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		close(entered)
		<-answer
		return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
			Content: mcp.NewTextContent("4")}, Model: "test"}, nil
	}
	m, clock, verdicts := idleManager(t, WithSamplingHandler(sample))
	rec := record(m)
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	s, _ := m.slot("s")
	s.mu.Lock()
	h := &leaseHandlers{m: m, l: s.lease}
	s.mu.Unlock()

	done := make(chan error, 1)
	go func() {
		_, err := h.CreateMessage(testCtx(t), mcp.CreateMessageRequest{})
		done <- err
	}()
	<-entered
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleBusy)
	clock.Advance(testIdle / 2)
	close(answer)
	if err := <-done; err != nil {
		t.Fatalf("sampling: %v", err)
	}
	clock.Advance(testIdle / 2)
	nextVerdict(t, verdicts, idleNotYet)
	clock.Advance(testIdle / 2)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
}

// TestIdleHTTPSessionDeleted: an HTTP server's idle runtime ends its
// session with a DELETE; the next call opens a new one.
func TestIdleHTTPSessionDeleted(t *testing.T) {
	srv := httpserver.Start(t, httpserver.MCPGoStateful)
	m, clock, verdicts := idleManager(t, WithPolicy(httpPolicy), WithHTTPOptions(mcphttp.WithLegacyProtocol()))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}, IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	tt := httpTarget{wantEcho: "hi"}
	mustHTTPEcho(testCtx(t), t, m, tt, "before idle")
	if n := srv.Deletes(); n != 0 {
		t.Fatalf("%d DELETEs before idle", n)
	}
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
	if n := srv.Deletes(); n != 1 {
		t.Fatalf("%d DELETEs after the idle close, want 1", n)
	}
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("the idle server's catalog was unpublished")
	}
	mustHTTPEcho(testCtx(t), t, m, tt, "after idle")
	if st := mustHTTPStatus(t, m); st.Generation != 2 || st.State != lifecycle.Connected {
		t.Fatalf("after the next call: %s, generation %d", st.State, st.Generation)
	}
}

// TestIdleTimeoutApplyInPlace: Apply changes a server's idleTimeout with no
// restart (Unchanged, same runtime), and the new timeout counts from the
// last use; 0 turns it off.
func TestIdleTimeoutApplyInPlace(t *testing.T) {
	ts := newTestServer()
	m, clock, verdicts := idleManager(t)
	m.opts.dialOverride = func(ServerSpec) Dialer { return ts.dialer() }
	rec := record(m)
	entry := func(idle string) string {
		return `{"mcpServers": {"s": {"command": "srv", "idleTimeout": ` + idle + `}}}`
	}
	applyJSON(t, m, entry(`"1m"`))
	mustWait(t, m, "s", lifecycle.Connected)

	// Off: no check is armed.
	if res := applyJSON(t, m, entry(`0`)); !slices.Equal(res.Unchanged, []string{"s"}) {
		t.Fatalf("Apply idleTimeout 0: %v", res)
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending with the idle timeout off", n)
	}
	clock.Advance(time.Hour)

	// On again, longer: counted from now, since uses were not kept.
	if res := applyJSON(t, m, entry(`"3m"`)); !slices.Equal(res.Unchanged, []string{"s"}) {
		t.Fatalf("Apply idleTimeout 3m: %v", res)
	}
	if st, _ := m.Status("s"); st.IdleTimeout != 3*time.Minute || st.Generation != 1 {
		t.Fatalf("status: idle timeout %v, generation %d", st.IdleTimeout, st.Generation)
	}
	clock.Advance(2 * time.Minute)
	mustEcho(t, m, "s") // two minutes in: the check at three finds it used
	clock.Advance(time.Minute)
	nextVerdict(t, verdicts, idleNotYet)

	// Shorter: due at once from the last use, two minutes ago.
	if res := applyJSON(t, m, entry(`60`)); !slices.Equal(res.Unchanged, []string{"s"}) {
		t.Fatalf("Apply idleTimeout 60: %v", res)
	}
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
	rec.waitStates(t, "s", "Connecting", "Connected", "Disconnected")
}

// TestSetIdleTimeout: SetIdleTimeout gives an added server an idle timeout
// with no restart, counted from now; zero turns it off; a negative one, an
// unknown server and a closed Manager are errors that name the server.
func TestSetIdleTimeout(t *testing.T) {
	m, clock, verdicts := idleManager(t)
	rec := record(m)
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)

	err := m.SetIdleTimeout("s", -time.Second)
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), `"s"`) || !strings.Contains(err.Error(), "idleTimeout") {
		t.Fatalf("negative timeout: %v", err)
	}
	if err := m.SetIdleTimeout("nope", time.Minute); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("unknown server: %v", err)
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending with no idle timeout", n)
	}

	clock.Advance(time.Hour) // unused for an hour before it had a timeout
	if err := m.SetIdleTimeout("s", testIdle); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Status("s"); st.IdleTimeout != testIdle || st.State != lifecycle.Connected || st.Generation != 1 {
		t.Fatalf("status: idle timeout %v, %s, generation %d", st.IdleTimeout, st.State, st.Generation)
	}
	// Counted from the call: a check counted from the last use, an hour
	// ago, would be due at once and not wait on the clock.
	if n := clock.Pending(); n != 1 {
		t.Fatalf("%d timers pending; want the idle check", n)
	}
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)

	mustEcho(t, m, "s") // generation 2, under the same timeout
	if err := m.SetIdleTimeout("s", 0); err != nil {
		t.Fatal(err)
	}
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending with the idle timeout off", n)
	}
	clock.Advance(time.Hour)
	if st, _ := m.Status("s"); st.State != lifecycle.Connected || st.Generation != 2 || st.IdleTimeout != 0 {
		t.Fatalf("with the timeout off: %s, generation %d, idle timeout %v", st.State, st.Generation, st.IdleTimeout)
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Disconnected", "Connecting", "Connected")

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.SetIdleTimeout("s", time.Minute); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// TestIdleNotificationIsUse: a notification from the server counts as use
// of it.
func TestIdleNotificationIsUse(t *testing.T) {
	m, clock, verdicts := idleManager(t)
	rec := record(m)
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)

	clock.Advance(testIdle / 2)
	ts.MCPServer().SendNotificationToAllClients(string(mcp.MethodNotificationMessage),
		map[string]any{"level": "info", "data": "still here"})
	rec.wait(t, func(e Event) bool { return e.Kind == EventLog })
	clock.Advance(testIdle / 2)
	nextVerdict(t, verdicts, idleNotYet)
	clock.Advance(testIdle / 2)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
}

// timerClock is a clock that can only make timers, as a host's own may be:
// the idle check then waits on a goroutine of the Manager's.
type timerClock struct{ c *fakeclock.Clock }

func (c timerClock) Now() time.Time { return c.c.Now() }
func (c timerClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	return c.c.NewTimer(d)
}

// TestIdleTimerOnlyClock: idle shutdown works on a clock with no AfterFunc.
func TestIdleTimerOnlyClock(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	m := newTestManager(t, WithClock(timerClock{clock}), WithTimeouts(Timeouts{IdleProbe: -1}))
	verdicts := make(chan idleVerdict, 64)
	m.onIdle = func(_ *slot, v idleVerdict) { verdicts <- v }
	rec := record(m)
	ts := newTestServer()
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), IdleTimeout: testIdle})
	mustWait(t, m, "s", lifecycle.Connected)
	mustEcho(t, m, "s")
	clock.Advance(testIdle)
	nextVerdict(t, verdicts, idleClosed)
	mustIdleClose(t, m, rec, clock, "s", 1)
	mustEcho(t, m, "s")
	if st, _ := m.Status("s"); st.Generation != 2 {
		t.Fatalf("generation %d after the next call, want 2", st.Generation)
	}
}

// TestParseConfigIdleTimeout: "idleTimeout" takes a duration or a number of
// seconds, like "timeout", reaches the spec, and is left out of the key
// (Apply changes it in place).
func TestParseConfigIdleTimeout(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"a": {"command": "x", "idleTimeout": "5m"},
		"b": {"command": "x", "idleTimeout": 90},
		"c": {"command": "x", "idleTimeout": "${IDLE:-2m}"},
		"d": {"command": "x"}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"a": 5 * time.Minute, "b": 90 * time.Second, "c": 2 * time.Minute, "d": 0} {
		sc := cfg.Servers[name]
		spec, err := sc.Spec()
		if sc.IdleTimeout != want || err != nil || spec.IdleTimeout != want {
			t.Errorf("%s: idle timeout %v, spec %v (%v); want %v", name, sc.IdleTimeout, spec.IdleTimeout, err, want)
		}
		if sc.key() != cfg.Servers["d"].key() {
			t.Errorf("%s: the idle timeout is in the key", name)
		}
	}
	_, err = ParseConfig([]byte(`{"mcpServers": {"a": {"command": "x", "idleTimeout": "-1s"}}}`), env(nil))
	if err == nil || !strings.Contains(err.Error(), `field "idleTimeout"`) {
		t.Fatalf("negative idleTimeout: %v", err)
	}
	if err := (ServerSpec{Dialer: newTestServer().dialer(), IdleTimeout: -time.Second}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "idleTimeout") {
		t.Fatalf("negative ServerSpec.IdleTimeout: %v", err)
	}
}
