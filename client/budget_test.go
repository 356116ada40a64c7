package client

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// logCounter is a slog.Handler that counts the records of each message
// prefix it is asked about.
type logCounter struct {
	mu   sync.Mutex
	msgs map[string]int
}

func newLogCounter() *logCounter { return &logCounter{msgs: map[string]int{}} }

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCounter) WithGroup(string) slog.Handler            { return c }
func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.msgs[r.Message]++
	c.mu.Unlock()
	return nil
}

func (c *logCounter) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for msg, k := range c.msgs {
		if strings.HasPrefix(msg, prefix) {
			n += k
		}
	}
	return n
}

// flood has server's "notify" tool send notifications of kind at rate a
// second for d, and returns how many it sent.
func flood(ctx context.Context, t *testing.T, m *Manager, server, kind string, rate int, d time.Duration) int {
	t.Helper()
	res, err := m.CallTool(ctx, server, "notify", map[string]any{"kind": kind, "rate": rate, "ms": d.Milliseconds()})
	if err != nil {
		t.Errorf("notify: %v", err)
		return 0
	}
	n, err := strconv.Atoi(strings.TrimPrefix(text(res), "sent="))
	if err != nil || res.IsError {
		t.Errorf("notify: %q", text(res))
	}
	return n
}

// waitDropReports waits until the EventNotificationsDropped of server add
// up to want, and returns them.
func (r *recorder) waitDropReports(t *testing.T, server string, kind EventKind, want uint64) []Event {
	t.Helper()
	var evs []Event
	r.wait(t, func(e Event) bool {
		if e.Kind != kind || e.Server != server {
			return false
		}
		evs = append(evs, e)
		var sum uint64
		for _, e := range evs {
			sum += e.Count
		}
		if sum > want {
			t.Errorf("%s events of %q count %d, more than the %d in its status", kind, server, sum, want)
		}
		return sum >= want
	})
	return evs
}

// TestNotificationFloodIsBounded has a stdio server send 100,000 log
// notifications a second for two seconds while another server answers
// calls. The other server's calls all succeed; the flood is charged to the
// flooding server's budget: what passes is within the budget, the rest is
// dropped and counted, and reported in a few events. The event queue and
// the goroutines stay bounded throughout. The budget is 50 a second, well
// below what the host reads even under -race on a loaded machine, so that
// the test does not depend on its speed.
func TestNotificationFloodIsBounded(t *testing.T) {
	ctx := testCtx(t)
	logs := newLogCounter()
	m := newTestManager(t, WithLogger(slog.New(logs)))
	rec := record(m)
	const rate = 50
	spec := faultSpec(faultserver.ModeFlood)
	spec.Limits.NotificationRate = rate
	mustAdd(t, m, "flood", spec)
	quiet := newTestServer()
	mustAdd(t, m, "quiet", ServerSpec{Dialer: quiet.dialer()})
	mustWait(t, m, "flood", lifecycle.Connected)
	mustWait(t, m, "quiet", lifecycle.Connected)

	goroutines := runtime.NumGoroutine()
	start := time.Now()
	sentc := make(chan int, 1)
	go func() { sentc <- flood(ctx, t, m, "flood", "log", 100_000, 2*time.Second) }()

	// While it floods, the other server answers every call.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var sent, calls, maxQueue, maxGoroutines int
	for flooding := true; flooding; {
		select {
		case sent = <-sentc:
			flooding = false
		case <-tick.C:
		}
		if _, err := m.CallTool(ctx, "quiet", "echo", map[string]any{"text": "still here"}); err != nil {
			t.Fatalf("a call to the other server failed during the flood: %v", err)
		}
		calls++
		m.bus.mu.Lock()
		maxQueue = max(maxQueue, len(m.bus.queue))
		m.bus.mu.Unlock()
		maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
	}
	elapsed := time.Since(start)
	st, err := m.Status("flood")
	if err != nil {
		t.Fatal(err)
	}
	admitted := logs.count("mcpfleet: server log")
	t.Logf("sent %d in %v (%.0f/s); %d admitted, %d dropped; %d calls to the other server; bus queue ≤ %d, goroutines %d → ≤ %d",
		sent, elapsed, float64(sent)/elapsed.Seconds(), admitted, st.DroppedNotifications, calls, maxQueue, goroutines, maxGoroutines)

	// The answer to the flood call came after every notification on the
	// same pipe, and each was admitted or dropped before the next was read.
	if got := uint64(admitted) + st.DroppedNotifications; got != uint64(sent) {
		t.Errorf("admitted %d + dropped %d = %d, want the %d sent", admitted, st.DroppedNotifications, got, sent)
	}
	// What passed is within the budget: a full bucket plus the rate.
	budget := burst(rate) + int(rate*elapsed.Seconds()) + 1
	if admitted > budget {
		t.Errorf("%d notifications passed in %v, over the budget of %d", admitted, elapsed, budget)
	}
	if st.DroppedNotifications == 0 {
		t.Fatalf("nothing dropped of %d sent", sent)
	}
	if sent > 2*budget && maxQueue > budget {
		t.Errorf("the event queue reached %d, more than the budget of %d", maxQueue, budget)
	}
	if maxGoroutines > goroutines+50 {
		t.Errorf("goroutines grew from %d to %d during the flood", goroutines, maxGoroutines)
	}

	reports := rec.waitDropReports(t, "flood", EventNotificationsDropped, st.DroppedNotifications)
	if limit := int(time.Since(start)/reportEvery) + 2; len(reports) > limit {
		t.Errorf("%d drop reports in %v, want at most %d", len(reports), time.Since(start), limit)
	}
	for _, e := range reports {
		if !errors.Is(e.Err, ErrNotificationRate) || !strings.Contains(e.Err.Error(), "limits.notificationRate = 50") {
			t.Errorf("drop report's error: %v", e.Err)
		}
	}
	if n := logs.count("mcpfleet: a server is over its limits"); n != len(reports) {
		t.Errorf("%d log records of the drops, want one per report (%d)", n, len(reports))
	}
	if st, _ := m.Status("quiet"); st.DroppedNotifications != 0 {
		t.Errorf("the other server dropped %d", st.DroppedNotifications)
	}
	// The flooding server itself is still served.
	if res, err := m.CallTool(ctx, "flood", "echo", map[string]any{"text": "after"}); err != nil || text(res) != "after" {
		t.Fatalf("call after the flood: %v, %v", res, err)
	}
}

// TestNotificationBudgetKinds floods each kind of notification the Manager
// acts on past a budget of 20 a second: each is dropped and counted. A
// dropped list_changed still gets its list refreshed: the flood of
// list_changed ends with a real change of the tool list, which the View
// shows. With the budget off nothing is dropped.
func TestNotificationBudgetKinds(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"log", "progress", "resource", "list"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			m := newTestManager(t)
			rec := record(m)
			spec := faultSpec(faultserver.ModeFlood)
			spec.Limits.NotificationRate = 20
			mustAdd(t, m, "flood", spec)
			mustWait(t, m, "flood", lifecycle.Connected)
			if kind == "resource" {
				// An update of a URI not subscribed to is no event.
				if err := m.SubscribeResource(ctx, "flood", "flood://r"); err != nil {
					t.Fatal(err)
				}
			}

			start := time.Now()
			sent := flood(ctx, t, m, "flood", kind, 100_000, 300*time.Millisecond)
			elapsed := time.Since(start)
			st, _ := m.Status("flood")
			t.Logf("sent %d, dropped %d", sent, st.DroppedNotifications)
			if st.DroppedNotifications == 0 || st.DroppedNotifications > uint64(sent) {
				t.Fatalf("dropped %d of %d", st.DroppedNotifications, sent)
			}
			if passed := uint64(sent) - st.DroppedNotifications; passed > uint64(burst(20)+int(20*elapsed.Seconds())+1) {
				t.Errorf("%d passed in %v", passed, elapsed)
			}
			rec.waitDropReports(t, "flood", EventNotificationsDropped, st.DroppedNotifications)
			if kind == "resource" {
				n := 0
				for _, e := range rec.snapshot() {
					if e.Kind == EventResourceUpdated {
						n++
					}
				}
				if uint64(n) != uint64(sent)-st.DroppedNotifications {
					t.Errorf("%d resource events, want the %d that passed", n, uint64(sent)-st.DroppedNotifications)
				}
			}
			if kind == "list" {
				rec.wait(t, func(e Event) bool {
					return e.Kind == EventCatalog && e.Server == "flood" && strings.Contains(strings.Join(e.Diff.Added, ","), "late")
				})
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		// The manager's budget is 10 a second, the server's spec turns it
		// off.
		t.Parallel()
		ctx := testCtx(t)
		logs := newLogCounter()
		m := newTestManager(t, WithLogger(slog.New(logs)), WithLimits(Limits{NotificationRate: 10}))
		rec := record(m)
		spec := faultSpec(faultserver.ModeFlood)
		spec.Limits.NotificationRate = -1
		mustAdd(t, m, "flood", spec)
		mustWait(t, m, "flood", lifecycle.Connected)
		start := time.Now()
		sent := flood(ctx, t, m, "flood", "log", 100_000, 50*time.Millisecond)
		if budget := burst(10) + int(10*time.Since(start).Seconds()) + 1; sent <= budget {
			t.Fatalf("sent %d, within the budget of %d it would have had", sent, budget)
		}
		st, _ := m.Status("flood")
		if st.DroppedNotifications != 0 || logs.count("mcpfleet: server log") != sent {
			t.Errorf("sent %d, dropped %d, logged %d", sent, st.DroppedNotifications, logs.count("mcpfleet: server log"))
		}
		for _, e := range rec.snapshot() {
			if e.Kind == EventNotificationsDropped {
				t.Errorf("drop event with the budget off: %+v", e)
			}
		}
	})
}

// asked has server's "ask" tool send n requests of kind to the host at once
// and returns what the host answered.
func asked(ctx context.Context, t *testing.T, m *Manager, server, kind string, n int) faultserver.FloodAnswers {
	t.Helper()
	var ans faultserver.FloodAnswers
	res, err := m.CallTool(ctx, server, "ask", map[string]any{"kind": kind, "n": n})
	if err != nil {
		t.Errorf("ask: %v", err)
		return ans
	}
	if err := json.Unmarshal([]byte(text(res)), &ans); err != nil {
		t.Errorf("ask: %q: %v", text(res), err)
	}
	return ans
}

// errorsAll reports whether every error message the server saw contains
// each of want.
func errorsAll(ans faultserver.FloodAnswers, want ...string) bool {
	for msg := range ans.Errors {
		for _, w := range want {
			if !strings.Contains(msg, w) {
				return false
			}
		}
	}
	return true
}

// TestServerRequestsAtOnce has a stdio server send 1,000 sampling requests
// at once, under the default limits, while the host's handler holds every
// request it gets. At most DefaultMaxServerRequests reach it; the rest get
// a JSON-RPC error naming the limit at once, and the host is told in
// events. Meanwhile another server's calls and sampling requests go
// through.
func TestServerRequestsAtOnce(t *testing.T) {
	ctx := testCtx(t)
	var (
		inHandler, most atomic.Int64
		entered         = make(chan struct{}, 1000)
		release         = make(chan struct{})
	)
	sample := func(ctx context.Context, server string, _ mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		if server == "flood" {
			n := inHandler.Add(1)
			defer inHandler.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
			Content: mcp.NewTextContent("ok")}, Model: "test"}, nil
	}
	m := newTestManager(t, WithSamplingHandler(sample))
	rec := record(m)
	mustAdd(t, m, "flood", faultSpec(faultserver.ModeFlood))
	mustAdd(t, m, "quiet", faultSpec(faultserver.ModeFlood))
	mustWait(t, m, "flood", lifecycle.Connected)
	mustWait(t, m, "quiet", lifecycle.Connected)

	const n = 1000
	start := time.Now()
	answers := make(chan faultserver.FloodAnswers, 1)
	go func() { answers <- asked(ctx, t, m, "flood", "sampling", n) }()
	for range DefaultMaxServerRequests {
		select {
		case <-entered:
		case <-ctx.Done():
			t.Fatalf("only %d requests reached the handler", inHandler.Load())
		}
	}
	// Every other request is refused while those are held.
	reports := rec.waitDropReports(t, "flood", EventServerRequestRefused, n-DefaultMaxServerRequests)

	// The other server is not held to the flooding one's limits.
	if ans := asked(ctx, t, m, "quiet", "sampling", 1); ans.OK != 1 {
		t.Errorf("the other server's sampling request: %+v", ans)
	}
	if res, err := m.CallTool(ctx, "quiet", "echo", map[string]any{"text": "hi"}); err != nil || text(res) != "hi" {
		t.Errorf("the other server's call: %v, %v", res, err)
	}

	close(release)
	ans := <-answers
	t.Logf("answers: %d ok, %d errors: %v", ans.OK, ans.Error, ans.Errors)
	if got := most.Load(); got != DefaultMaxServerRequests {
		t.Errorf("at most %d requests were in the handler at once, want %d", got, DefaultMaxServerRequests)
	}
	if ans.OK != DefaultMaxServerRequests || ans.Error != n-DefaultMaxServerRequests {
		t.Errorf("%d answered, %d refused; want %d, %d", ans.OK, ans.Error, DefaultMaxServerRequests, n-DefaultMaxServerRequests)
	}
	if !errorsAll(ans, "over the server request limit", "limits.maxServerRequests = 8", "sampling/createMessage") {
		t.Errorf("the server's errors do not name the limit: %v", ans.Errors)
	}
	for _, e := range reports {
		if e.Method != "sampling/createMessage" || !errors.Is(e.Err, ErrServerRequestLimit) {
			t.Errorf("refusal event: method %q, error %v", e.Method, e.Err)
		}
	}
	if limit := int(time.Since(start)/reportEvery) + 2; len(reports) > limit {
		t.Errorf("%d refusal events in %v, want at most %d", len(reports), time.Since(start), limit)
	}
	if st, _ := m.Status("flood"); st.RefusedServerRequests != n-DefaultMaxServerRequests {
		t.Errorf("status counts %d refused", st.RefusedServerRequests)
	}
	if st, _ := m.Status("quiet"); st.RefusedServerRequests != 0 {
		t.Errorf("the other server's status counts %d refused", st.RefusedServerRequests)
	}
}

// TestServerRequestRate has a server send requests of each kind at once
// with no limit on how many are open but a rate of 10 a second: a burst of
// 20 goes through, plus what the rate refills meanwhile, and the rest are
// refused naming the rate. With both limits off, every request reaches the
// host.
func TestServerRequestRate(t *testing.T) {
	t.Parallel()
	h := &host{}
	for _, kind := range []string{"sampling", "elicitation", "roots"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			m := newTestManager(t, WithSamplingHandler(h.sample), WithElicitationHandler(h.elicit), WithRoots(),
				WithLimits(Limits{MaxServerRequests: -1, ServerRequestRate: 10}))
			rec := record(m)
			mustAdd(t, m, "flood", faultSpec(faultserver.ModeFlood))
			mustWait(t, m, "flood", lifecycle.Connected)
			const n = 200
			start := time.Now()
			ans := asked(ctx, t, m, "flood", kind, n)
			elapsed := time.Since(start)
			t.Logf("%d ok, %d errors in %v: %v", ans.OK, ans.Error, elapsed, ans.Errors)
			if ans.OK < burst(10) || ans.OK > burst(10)+int(10*elapsed.Seconds())+1 || ans.OK+ans.Error != n {
				t.Errorf("%d answered, %d refused in %v", ans.OK, ans.Error, elapsed)
			}
			if !errorsAll(ans, "over the server request limit", "limits.serverRequestRate = 10") {
				t.Errorf("the server's errors do not name the limit: %v", ans.Errors)
			}
			method := serverRequestMethods[map[string]int{"sampling": reqSampling, "elicitation": reqElicitation, "roots": reqRoots}[kind]]
			for _, e := range rec.waitDropReports(t, "flood", EventServerRequestRefused, uint64(ans.Error)) {
				if e.Method != method {
					t.Errorf("refusal event for %q, want %q", e.Method, method)
				}
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		ctx := testCtx(t)
		m := newTestManager(t, WithSamplingHandler(h.sample), WithLimits(Limits{MaxServerRequests: -1, ServerRequestRate: -1}))
		mustAdd(t, m, "flood", faultSpec(faultserver.ModeFlood))
		mustWait(t, m, "flood", lifecycle.Connected)
		if ans := asked(ctx, t, m, "flood", "sampling", 200); ans.OK != 200 {
			t.Errorf("with the limits off: %+v", ans)
		}
		if st, _ := m.Status("flood"); st.RefusedServerRequests != 0 {
			t.Errorf("with the limits off, %d refused", st.RefusedServerRequests)
		}
	})
}

// TestDropReportsAreThrottled drives the reports of one tally on a fake
// clock: the first drop is reported at once; drops within the next second
// wait for it and come in one event with their count.
func TestDropReportsAreThrottled(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	m := newTestManager(t, WithClock(clock), WithTimeouts(Timeouts{IdleProbe: -1}))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: newTestServer().dialer(), Disabled: true})
	s, err := m.slot("s")
	if err != nil {
		t.Fatal(err)
	}
	drop := func() { s.tallied(&s.more().dropped, Event{Kind: EventNotificationsDropped}, nil) }
	reports := func() (counts []uint64) {
		for _, e := range rec.snapshot() {
			if e.Kind == EventNotificationsDropped {
				counts = append(counts, e.Count)
			}
		}
		return counts
	}

	drop()
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventNotificationsDropped })
	if e.Count != 1 || e.Server != "s" || !errors.Is(e.Err, ErrNotificationRate) {
		t.Fatalf("first report: count %d, server %q, error %v", e.Count, e.Server, e.Err)
	}
	drop()
	drop()
	drop()
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := reports(); len(got) != 1 {
		t.Fatalf("reports before the second passed: %v", got)
	}
	clock.Advance(reportEvery)
	rec.wait(t, func(e Event) bool { return e.Kind == EventNotificationsDropped && e.Count == 3 })
	if got := reports(); len(got) != 2 {
		t.Fatalf("reports: %v, want [1 3]", got)
	}
	if st, _ := m.Status("s"); st.DroppedNotifications != 4 {
		t.Fatalf("status counts %d dropped, want 4", st.DroppedNotifications)
	}
}

// BenchmarkNotificationDropped measures what a notification over the
// budget costs the transport's goroutine that read it: it is dropped
// before it is decoded, without allocating.
func BenchmarkNotificationDropped(b *testing.B) {
	m := New(WithLimits(Limits{NotificationRate: 1e-9}))
	defer m.Close()
	s := newSlot(m, "b", ServerSpec{Dialer: newTestServer().dialer()}, "")
	l := &lease{slot: s, kick: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(m.ctx)
	defer l.cancel()
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationMessage),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"level": "info", "data": "flood"}}}}
	l.onNotification(n) // the one-notification bucket
	b.ReportAllocs()
	for b.Loop() {
		l.onNotification(n)
	}
	if got := s.more().dropped.total.Load(); got < uint64(b.N) {
		b.Fatalf("dropped %d of %d", got, b.N)
	}
}
