package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// The TypeScript SDK's example server that binds each task to the session
// that created it (simpleStreamableHttp, from the pinned
// @modelcontextprotocol/sdk, protocol 2025-11-25: another session gets
// -32602 "Task not found"), behind a proxy that breaks connections as a
// network fault does and counts the sessions the server created and the
// DELETEs it got. The server's own log says the same: "Session initialized
// with ID" per session, "Received session termination request" per DELETE.
type tsSessionServer struct {
	node  *httpserver.Node
	proxy *faultinject.HTTPProxy
}

func startTSSessionServer(t *testing.T) *tsSessionServer {
	t.Helper()
	node, script := npmtest.File(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js")
	srv := httpserver.StartNode(t, node, script, "listening on port")
	return &tsSessionServer{node: srv, proxy: faultinject.StartHTTPProxy(t, srv.URL(""))}
}

func (s *tsSessionServer) spec() ServerSpec {
	return ServerSpec{HTTP: &mcphttp.Spec{URL: s.proxy.URL("/mcp")}}
}

// checkOneSession fails the test unless the server created want sessions
// and got the DELETEs of dels only, by the proxy's count and by its log.
func (s *tsSessionServer) checkSessions(t *testing.T, want int, dels ...string) {
	t.Helper()
	out := s.node.Output()
	if got := s.proxy.Sessions(); len(got) != want {
		t.Errorf("the server created sessions %v, want %d\n%s", got, want, out)
	}
	if n := strings.Count(out, "Session initialized with ID"); n != want {
		t.Errorf("the server logged %d sessions, want %d", n, want)
	}
	if got := s.proxy.Deletes(); !slices.Equal(got, dels) && (len(got) != 0 || len(dels) != 0) {
		t.Errorf("DELETEs %v, want %v", got, dels)
	}
	if n := strings.Count(out, "Received session termination request"); n != len(dels) {
		t.Errorf("the server logged %d session terminations, want %d", n, len(dels))
	}
}

// noReconnect fails the test if server left Connected since it connected.
func noReconnect(t *testing.T, rec *recorder, server string) {
	t.Helper()
	if got := states(rec.snapshot(), server); !slices.Equal(got, []string{"Connecting", "Connected"}) {
		t.Errorf("states of %s: %v, want Connecting, Connected only", server, got)
	}
}

// awaitPoll waits for the next poll of task to end.
func (e *taskEnv) awaitPoll(task *Task) {
	e.t.Helper()
	for drained := false; !drained; {
		select {
		case <-e.polled:
		default:
			drained = true
		}
	}
	for {
		select {
		case id := <-e.polled:
			if id == task.ID() {
				return
			}
		case <-task.Done():
			return
		case <-e.ctx.Done():
			e.t.Fatalf("no poll of task %s: %v", task.ID(), e.ctx.Err())
		}
	}
}

// (a) A session-bound task (the delay tool requires a task: CallTool runs
// it as one, transparently, and hands its handle out WithTaskStarted)
// while every connection is cut twice, the server running on: the call
// returns the result once, the slot never leaves Connected, and the server
// saw one session and no DELETE.
func TestSessionTaskThroughCuts(t *testing.T) {
	t.Parallel()
	ts := startTSSessionServer(t)
	e := newTaskEnvClock(t, store.NewMemoryTaskStore(), nil)
	e.add("ts", ts.spec())

	started := make(chan *Task, 1)
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 2)
	go func() {
		res, err := e.m.CallTool(e.ctx, "ts", "delay", map[string]any{"duration": 5000},
			WithTaskStarted(func(t *Task) { started <- t }))
		done <- answer{res, err}
	}()
	var task *Task
	select {
	case task = <-started:
	case <-e.ctx.Done():
		t.Fatalf("the task did not start\n%s", ts.node.Output())
	}
	if got, err := e.m.Task("ts", task.ID()); err != nil || got != task {
		t.Fatalf("Manager.Task: %v, %v", got, err)
	}
	for i := range 2 {
		if n := ts.proxy.Cut(); n == 0 {
			t.Fatalf("cut %d: no connection to cut", i+1)
		}
		e.awaitPoll(task) // the poll after the cut (the reopened stream asks for one at once)
		if st := task.Status(); st != TaskWorking {
			t.Fatalf("after cut %d: %s (%s)\n%s", i+1, st, task.Info().Message, ts.node.Output())
		}
	}
	var got answer
	select {
	case got = <-done:
	case <-e.ctx.Done():
		t.Fatalf("the call did not end\n%s", ts.node.Output())
	}
	if got.err != nil || text(got.res) != "Completed 5000ms delay" {
		t.Fatalf("call: %q, %v\n%s", text(got.res), got.err, ts.node.Output())
	}
	select {
	case extra := <-done:
		t.Fatalf("a second answer: %+v", extra)
	default:
	}
	e.event(EventTaskCompleted, task.ID())
	if n := e.count(EventTaskCompleted, task.ID()); n != 1 {
		t.Errorf("%d completed events, want 1", n)
	}
	noReconnect(t, e.rec, "ts")
	ts.checkSessions(t, 1)
	if st := e.m.Stats().Servers[0]; st.Reopened < 2 || st.Reconnects != 0 {
		t.Errorf("stats: reopened %d, reconnects %d; want at least 2 and 0", st.Reopened, st.Reconnects)
	}
}

// (b) A plain call of about three seconds whose notifications (the
// server's log messages, on the session's stream) keep coming while every
// connection is cut twice: the answer arrives once (its stream resumed
// with Last-Event-ID), messages keep coming after each cut, the slot never
// leaves Connected, and the server saw one session and no DELETE.
func TestSessionCallThroughCuts(t *testing.T) {
	t.Parallel()
	ts := startTSSessionServer(t)
	m := newTestManager(t, WithTimeouts(Timeouts{Drain: DefaultDrainTimeout}))
	rec := record(m)
	mustAdd(t, m, "ts", ts.spec())
	mustWait(t, m, "ts", lifecycle.Connected)
	ctx := testCtx(t)

	const count = 20
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 2)
	go func() {
		res, err := m.CallTool(ctx, "ts", "start-notification-stream", map[string]any{"interval": 150, "count": count})
		done <- answer{res, err}
	}()
	logged := func(n int) func(Event) bool {
		return func(e Event) bool {
			return e.Kind == EventLog && strings.Contains(fmt.Sprint(e.Log.Data), fmt.Sprintf("#%d ", n))
		}
	}
	// The first cut after the second message: the answer stream began
	// (with its priming event, which carries an event ID) before the first.
	rec.wait(t, logged(2))
	if n := ts.proxy.Cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	last := 0
	for _, e := range rec.snapshot() {
		for i := 1; i <= count; i++ {
			if logged(i)(e) {
				last = max(last, i)
			}
		}
	}
	rec.wait(t, func(e Event) bool {
		for i := last + 1; i <= count; i++ {
			if logged(i)(e) {
				return true
			}
		}
		return false
	})
	if n := ts.proxy.Cut(); n == 0 {
		t.Fatal("no connection to cut")
	}
	var got answer
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatalf("the call did not end\n%s", ts.node.Output())
	}
	if got.err != nil || !strings.Contains(text(got.res), "Started sending periodic notifications") {
		t.Fatalf("call: %q, %v\n%s", text(got.res), got.err, ts.node.Output())
	}
	rec.wait(t, logged(count)) // messages came after the second cut too
	select {
	case extra := <-done:
		t.Fatalf("a second answer: %+v", extra)
	default:
	}
	noReconnect(t, rec, "ts")
	ts.checkSessions(t, 1)
	st := m.Stats().Servers[0]
	if st.Calls[OutcomeOK] != 1 || st.Calls[OutcomeUnknown] != 0 || st.Reopened < 2 {
		t.Errorf("stats: ok %d, unknown %d, reopened %d; want 1, 0, at least 2", st.Calls[OutcomeOK], st.Calls[OutcomeUnknown], st.Reopened)
	}
	t.Logf("resumed %d answer streams, reopened the session's stream %d times", st.Resumed, st.Reopened)
}

// (c) A Manager closed while a session-bound task runs leaves the session
// open (no DELETE); a Manager opened on the same store finds the task by
// its id, asks about it in the session it was started in, and gets its
// result once.
func TestSessionTaskAcrossManagers(t *testing.T) {
	t.Parallel()
	ts := startTSSessionServer(t)
	st := store.NewFileTaskStore(t.TempDir())
	first := newTaskEnvClock(t, st, nil)
	first.add("ts", ts.spec())
	task, err := first.m.StartTask(first.ctx, "ts", "delay", map[string]any{"duration": 3000})
	if err != nil {
		t.Fatal(err)
	}
	id := task.ID()
	if err := first.m.Close(); err != nil {
		t.Fatal(err)
	}
	ts.checkSessions(t, 1) // and no DELETE
	recs, err := st.LoadTasks(first.ctx)
	if err != nil || len(recs) != 1 || recs[0].SessionID != ts.proxy.Sessions()[0] || recs[0].ServerIdentity == "" {
		t.Fatalf("stored %+v, %v: want the task with its session %v", recs, err, ts.proxy.Sessions())
	}

	second := newTaskEnvClock(t, st, nil)
	second.add("ts", ts.spec())
	again, err := second.m.Task("ts", id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := again.Wait(second.ctx)
	if err != nil || text(res) != "Completed 3000ms delay" {
		t.Fatalf("Wait: %q, %v\n%s", text(res), err, ts.node.Output())
	}
	second.event(EventTaskCompleted, id)
	if n := second.count(EventTaskCompleted, id); n != 1 {
		t.Errorf("%d completed events, want 1", n)
	}
	if _, err := second.m.Task("ts", id); !errors.Is(err, ErrUnknownTask) {
		t.Errorf("Task after Wait collected it: %v, want ErrUnknownTask", err)
	}
	// The second Manager's own session, and the first's kept open.
	ts.checkSessions(t, 2)
}

// (d) A server restart forgets the session and its tasks: the Manager
// connects a new session, and the first poll of the task after that (one
// poll interval at most) asks in the task's session, is told it is gone,
// asks in the new one, is told the task is not found, and loses it with
// ErrTaskLost.
func TestSessionTaskLostOnRestart(t *testing.T) {
	t.Parallel()
	ts := startTSSessionServer(t)
	e := newTaskEnvClock(t, store.NewMemoryTaskStore(), nil)
	e.add("ts", ts.spec())
	task, err := e.m.StartTask(e.ctx, "ts", "delay", map[string]any{"duration": 60000})
	if err != nil {
		t.Fatal(err)
	}
	ts.node.Restart(t)
	e.rec.waitStates(t, "ts", "Connecting", "Connected", "Reconnecting", "Connected")
	e.awaitPoll(task) // the first poll to end on the new runtime
	if st := task.Status(); st != TaskLost {
		t.Fatalf("after the first poll on the new session: %s (%s)", st, task.Info().Message)
	}
	_, err = task.Wait(e.ctx)
	if !errors.Is(err, ErrTaskLost) || !strings.Contains(err.Error(), "Task not found") {
		t.Fatalf("Wait: %v, want ErrTaskLost with the server's answer", err)
	}
	if got := ts.proxy.Sessions(); len(got) != 2 {
		t.Errorf("sessions %v, want the first and the one after the restart", got)
	}
	if d := ts.proxy.Deletes(); len(d) != 0 {
		t.Errorf("DELETEs %v, want none", d)
	}
}
