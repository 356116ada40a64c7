package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// taskEnv is a Manager on a fake clock and a memory task store, with its
// events recorded and its task polls reported, for the task tests.
type taskEnv struct {
	t      *testing.T
	m      *Manager
	clock  *fakeclock.Clock
	store  store.TaskStore
	rec    *recorder
	polled chan string // the id of each task whose poll ended
	ctx    context.Context
}

func newTaskEnv(t *testing.T, st store.TaskStore, opts ...Option) *taskEnv {
	t.Helper()
	if st == nil {
		st = store.NewMemoryTaskStore()
	}
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	return newTaskEnvClock(t, st, clock, opts...)
}

// newTaskEnvClock makes a taskEnv on clock; on the system clock if clock
// is nil (then tick cannot be used).
func newTaskEnvClock(t *testing.T, st store.TaskStore, clock *fakeclock.Clock, opts ...Option) *taskEnv {
	t.Helper()
	if clock != nil {
		opts = append([]Option{WithClock(clock)}, opts...)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	e := &taskEnv{t: t, clock: clock, store: st, polled: make(chan string, 1<<14), ctx: ctx}
	polled := func(task *Task) {
		select {
		case e.polled <- task.ID():
		default:
		}
	}
	e.m = New(append([]Option{WithTasks(TaskOptions{Store: st}), WithTimeouts(Timeouts{IdleProbe: -1}),
		func(o *options) { o.taskPolled = polled }}, opts...)...)
	e.rec = record(e.m)
	t.Cleanup(func() {
		if err := e.m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		<-e.rec.done
	})
	return e
}

// add adds a server and waits for it to connect.
func (e *taskEnv) add(name string, spec ServerSpec) {
	e.t.Helper()
	if err := e.m.Add(e.ctx, name, spec); err != nil {
		e.t.Fatal(err)
	}
	if err := e.m.WaitFor(e.ctx, name, lifecycle.Connected); err != nil {
		e.t.Fatal(err)
	}
}

// event waits for the first task event of kind about task id ("" for
// any).
func (e *taskEnv) event(kind EventKind, id string) Event {
	e.t.Helper()
	return e.rec.wait(e.t, func(ev Event) bool {
		return ev.Kind == kind && ev.Task != nil && (id == "" || ev.Task.ID == id)
	})
}

// count counts the task events of kind about task id.
func (e *taskEnv) count(kind EventKind, id string) int {
	return e.rec.count(0, func(ev Event) bool { return ev.Kind == kind && ev.Task != nil && ev.Task.ID == id })
}

// tick advances the clock by d and waits for a poll of task to end, or
// for the task to end (a notification may end it first).
func (e *taskEnv) tick(task *Task, d time.Duration) {
	e.t.Helper()
	e.tickOr(task.ID(), d, task.Done())
}

// tickOr is tick, that stops waiting when stop is closed; it reports
// whether the poll ended.
func (e *taskEnv) tickOr(id string, d time.Duration, stop <-chan struct{}) bool {
	e.t.Helper()
	for drained := false; !drained; {
		select {
		case <-e.polled:
		default:
			drained = true
		}
	}
	e.clock.Advance(d)
	for {
		select {
		case got := <-e.polled:
			if got == id {
				return true
			}
		case <-stop:
			return false
		case <-e.ctx.Done():
			r := e.m.tasks
			r.mu.Lock()
			var dbg []string
			for _, x := range r.tasks {
				dbg = append(dbg, fmt.Sprintf("%s idx=%d next=%v polling=%v parked=%v again=%v", x.id, x.index, x.next, x.polling, x.parked, x.again))
			}
			for k, sp := range r.servers {
				dbg = append(dbg, fmt.Sprintf("server %s active=%d backlog=%d", k, sp.active, len(sp.backlog)))
			}
			dbg = append(dbg, fmt.Sprintf("due=%d now=%v running=%v", len(r.due), e.clock.Now(), r.running))
			r.mu.Unlock()
			e.t.Fatalf("waiting for a poll of task %s: %v\n%s", id, e.ctx.Err(), strings.Join(dbg, "\n"))
		}
	}
}

// pollUntil polls task, a tick of d at a time, until cond holds, at most
// rounds times.
func (e *taskEnv) pollUntil(task *Task, d time.Duration, rounds int, cond func() bool) {
	e.t.Helper()
	for range rounds {
		if cond() {
			return
		}
		e.tick(task, d)
	}
	if !cond() {
		var evs []string
		for _, ev := range e.rec.snapshot() {
			switch {
			case ev.Kind == EventState:
				evs = append(evs, fmt.Sprintf("%s %s->%s %v", ev.Server, ev.From, ev.To, ev.Err))
			case ev.Task != nil:
				evs = append(evs, fmt.Sprintf("%s %s %v", ev.Kind, ev.Task.Status, ev.Err))
			}
		}
		e.t.Fatalf("task %s: the condition did not hold after %d polls: %+v\nevents:\n%s",
			task.ID(), rounds, task.Info(), strings.Join(evs, "\n"))
	}
}

// records returns the store's records.
func (e *taskEnv) records() []store.TaskRecord {
	e.t.Helper()
	rs, err := e.store.LoadTasks(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return rs
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) != 1 {
		t.Fatalf("result %+v", res)
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

// A task on mcp-go's server in process: started, listed, saved; its
// completion notification brings the outcome without any poll coming due;
// Wait returns it, a second Wait the same, and the task leaves the list
// and the store.
func TestTaskStartWait(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	if st, _ := e.m.Status("jobs"); st.Protocol != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Fatalf("protocol %q", st.Protocol)
	}

	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if task.ID() == "" || task.Server() != "jobs" || task.Tool() != taskserver.ToolWork || task.Status() != TaskWorking {
		t.Fatalf("task %+v", task.Info())
	}
	if info := task.Info(); info.Protocol != TaskProtocolCore {
		t.Fatalf("info %+v", info)
	}
	created := e.event(EventTaskCreated, task.ID())
	if created.Server != "jobs" || created.Task.Tool != taskserver.ToolWork || created.Err != nil {
		t.Fatalf("created event %+v", created)
	}
	if tasks := e.m.Tasks(); len(tasks) != 1 || tasks[0] != task {
		t.Fatalf("Tasks() = %v", tasks)
	}
	if rs := e.records(); len(rs) != 1 || rs[0].TaskID != task.ID() || rs[0].Status != "working" || rs[0].Protocol != TaskProtocolCore {
		t.Fatalf("records %+v", rs)
	}
	taskserver.Await(t, e.ctx, ts.Started(), "the job to start")

	ts.Release("a") // no clock advance: the server's notification does it
	res, err := task.Wait(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "done a" {
		t.Fatalf("result %q", got)
	}
	if ev := e.event(EventTaskCompleted, task.ID()); ev.Err != nil || ev.Task.Status != TaskCompleted {
		t.Fatalf("completed event %+v", ev)
	}
	again, err := task.Wait(e.ctx)
	if err != nil || again != res {
		t.Fatalf("second Wait: %p %v, want %p", again, err, res)
	}
	if tasks := e.m.Tasks(); len(tasks) != 0 {
		t.Fatalf("Tasks() after Wait = %v", tasks)
	}
	if rs := e.records(); len(rs) != 0 {
		t.Fatalf("records after Wait %+v", rs)
	}
}

// The targets of issue 27: a task survives the TCP connection cut by a
// fault proxy while it runs, the Manager closed and a new one opened on
// the same store, and Disable/Enable; its result arrives once.
func TestTaskSurvivesConnectionCut(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	hs := taskserver.StartHTTP(t, ts)
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "cut"})
	if err != nil {
		t.Fatal(err)
	}
	taskserver.Await(t, e.ctx, ts.Started(), "the job to start")
	if n := hs.Cut(); n == 0 {
		t.Fatal("the proxy had no connection to cut")
	}
	e.tick(task, DefaultTaskPollInterval) // the poll after the cut
	if st := task.Status(); st != TaskWorking {
		t.Fatalf("after the cut: %s (%s)", st, task.Info().Message)
	}
	ts.Release("cut")
	taskserver.Await(t, e.ctx, ts.Ended(), "the task to end")
	e.pollUntil(task, DefaultTaskPollInterval, 5, func() bool { return task.Status().Terminal() })
	res, err := task.Wait(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "done cut" {
		t.Fatalf("result %q", got)
	}
	e.event(EventTaskCompleted, task.ID())
	if n := e.count(EventTaskCompleted, task.ID()); n != 1 {
		t.Fatalf("%d completed events", n)
	}
	select {
	case job := <-ts.Started():
		t.Fatalf("the job ran again: %q", job)
	default:
	}
}

func TestTaskSurvivesManagerRestart(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) store.TaskStore{
		"memory": func(*testing.T) store.TaskStore { return store.NewMemoryTaskStore() },
		"file":   func(t *testing.T) store.TaskStore { return store.NewFileTaskStore(t.TempDir()) },
	} {
		t.Run(name, func(t *testing.T) {
			ts := taskserver.New()
			defer ts.Close()
			hs := taskserver.StartHTTP(t, ts)
			st := mk(t)
			spec := ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}}

			first := newTaskEnv(t, st)
			first.add("jobs", spec)
			task, err := first.m.StartTask(first.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "restart"})
			if err != nil {
				t.Fatal(err)
			}
			taskserver.Await(t, first.ctx, ts.Started(), "the job to start")
			if err := first.m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := task.Wait(first.ctx); !errors.Is(err, ErrClosed) {
				t.Fatalf("Wait on a closed Manager: %v", err)
			}
			if rs := first.records(); len(rs) != 1 || rs[0].TaskID != task.ID() {
				t.Fatalf("records after Close: %+v", rs)
			}

			second := newTaskEnv(t, st)
			tasks := second.m.Tasks()
			if len(tasks) != 1 || tasks[0].ID() != task.ID() || tasks[0].Server() != "jobs" ||
				tasks[0].Tool() != taskserver.ToolWork || tasks[0].Status() != TaskWorking {
				t.Fatalf("the new Manager's tasks: %v", tasks)
			}
			again := tasks[0]
			second.add("jobs", spec) // its tasks are polled from now on
			second.tick(again, DefaultTaskPollInterval)
			ts.Release("restart")
			taskserver.Await(t, second.ctx, ts.Ended(), "the task to end")
			second.pollUntil(again, DefaultTaskPollInterval, 5, func() bool { return again.Status().Terminal() })
			res, err := again.Wait(second.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != "done restart" {
				t.Fatalf("result %q", got)
			}
			if rs := second.records(); len(rs) != 0 {
				t.Fatalf("records after Wait: %+v", rs)
			}
			second.event(EventTaskCompleted, again.ID())
			if n := second.count(EventTaskCompleted, again.ID()); n != 1 {
				t.Fatalf("%d completed events", n)
			}
		})
	}
}

func TestTaskSurvivesDisableEnable(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	hs := taskserver.StartHTTP(t, ts)
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "toggle"})
	if err != nil {
		t.Fatal(err)
	}
	taskserver.Await(t, e.ctx, ts.Started(), "the job to start")
	if err := e.m.Disable(e.ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	ts.Release("toggle")
	taskserver.Await(t, e.ctx, ts.Ended(), "the task to end")
	e.tick(task, DefaultTaskPollInterval) // a disabled server's tasks wait
	if st := task.Status(); st != TaskWorking {
		t.Fatalf("while disabled: %s", st)
	}
	if err := e.m.Enable(e.ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.WaitFor(e.ctx, "jobs", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	e.pollUntil(task, DefaultTaskPollInterval, 5, func() bool { return task.Status().Terminal() })
	res, err := task.Wait(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); got != "done toggle" {
		t.Fatalf("result %q", got)
	}
	e.event(EventTaskCompleted, task.ID())
	if n := e.count(EventTaskCompleted, task.ID()); n != 1 {
		t.Fatalf("%d completed events", n)
	}
}

// Cancel reaches the server at once, well within a poll interval (the
// clock does not move), and the handle is cancelled by the server's answer.
func TestTaskCancelReachesServer(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "cancel"})
	if err != nil {
		t.Fatal(err)
	}
	before := e.clock.Now()
	if err := task.Cancel(e.ctx); err != nil {
		t.Fatal(err)
	}
	if id := taskserver.Await(t, e.ctx, ts.Cancelled(), "the server's cancel"); id != task.ID() {
		t.Fatalf("the server cancelled %s", id)
	}
	if !e.clock.Now().Equal(before) {
		t.Fatal("the clock moved")
	}
	if st := task.Status(); st != TaskCancelled {
		t.Fatalf("status after Cancel: %s", st)
	}
	if _, err := task.Wait(e.ctx); !errors.Is(err, ErrTaskCancelled) {
		t.Fatalf("Wait: %v", err)
	}
	if err := task.Cancel(e.ctx); err != nil {
		t.Fatalf("a second Cancel: %v", err)
	}
	if n := ts.Cancels(); n != 1 {
		t.Fatalf("the server cancelled %d tasks", n)
	}
	e.event(EventTaskCancelled, task.ID())
	ts.Release("cancel")
}

// A restarted server has forgotten the task: the next poll, one interval
// on, loses it with ErrTaskLost.
func TestTaskServerRestartLosesTask(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	hs := taskserver.StartHTTP(t, ts)
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "gone"})
	if err != nil {
		t.Fatal(err)
	}
	taskserver.Await(t, e.ctx, ts.Started(), "the job to start")
	ts.Restart()
	hs.Cut() // a restarted process drops its connections
	e.tick(task, DefaultTaskPollInterval)
	if st := task.Status(); st != TaskLost {
		t.Fatalf("one interval after the restart: %s", st)
	}
	_, err = task.Wait(e.ctx)
	if !errors.Is(err, ErrTaskLost) || !strings.Contains(err.Error(), "no longer knows") {
		t.Fatalf("Wait: %v", err)
	}
	var se *ServerError
	if !errors.As(err, &se) || se.Server != "jobs" || !strings.Contains(se.Op, task.ID()) {
		t.Fatalf("error %#v", err)
	}
	if ev := e.event(EventTaskLost, task.ID()); !errors.Is(ev.Err, ErrTaskLost) {
		t.Fatalf("lost event %+v", ev)
	}
}

// In process, mcp-go's server binds a task to the connection's session: a
// new runtime does not see it, and the next poll loses it, typed, without
// hanging.
func TestTaskSessionBoundIsLost(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "session"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.m.Disable(e.ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Enable(e.ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.WaitFor(e.ctx, "jobs", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	e.tick(task, DefaultTaskPollInterval)
	if _, err := task.Wait(e.ctx); !errors.Is(err, ErrTaskLost) {
		t.Fatalf("Wait: %v", err)
	}
	ts.Release("session")
}

// A task whose ttl passed is lost, and the error says it expired.
func TestTaskExpired(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "ttl"}, WithTaskTTL(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if info := task.Info(); info.TTL != time.Millisecond {
		t.Fatalf("ttl %v", info.TTL)
	}
	// The server's ttl runs on its own clock, and it forgets the task on a
	// goroutine of its own: wait until it says the task expired (to a
	// session of its own, which mcp-go answers so before it checks whose
	// the task is), then one poll loses it.
	awaitExpired(t, e.ctx, ts, task.ID())
	e.tick(task, DefaultTaskPollInterval)
	_, err = task.Wait(e.ctx)
	if !errors.Is(err, ErrTaskLost) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("Wait: %v", err)
	}
	ts.Release("ttl")
}

// awaitExpired waits until ts says task id expired.
func awaitExpired(t *testing.T, ctx context.Context, ts *taskserver.Server, id string) {
	t.Helper()
	conn, err := ts.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(conn.Transport())
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		_, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
		if err != nil && strings.Contains(err.Error(), "expired") {
			return
		}
	}
	t.Fatalf("the server did not expire task %s: %v", id, ctx.Err())
}

// A call that cannot be a task says why, with ErrTaskUnsupported.
func TestTaskUnsupported(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	// mcp-go's server in process speaks 2026-07-28 to a client that does,
	// where it declares the 2025-11-25 tasks but has no tasks/result.
	e.add("modern", ServerSpec{Dialer: InProcess(taskserver.New().MCPServer())})
	for _, c := range []struct{ server, tool, want string }{
		{"jobs", taskserver.ToolForbidden, `declares execution.taskSupport "forbidden"`},
		{"jobs", taskserver.ToolPlain, "does not declare execution.taskSupport"},
		{"jobs", "nonesuch", "not in the server's catalog"},
		{"modern", taskserver.ToolWork, "not the tasks extension"},
	} {
		_, err := e.m.StartTask(e.ctx, c.server, c.tool, nil)
		if !errors.Is(err, ErrTaskUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v", c.server, c.tool, err)
		}
		var se *ServerError
		if !errors.As(err, &se) || se.Server != c.server || se.Op != "start task "+c.tool {
			t.Errorf("%s %s: %#v", c.server, c.tool, err)
		}
	}
	if _, err := e.m.CallTool(e.ctx, "modern", taskserver.ToolWorkRequired, nil); !errors.Is(err, ErrTaskUnsupported) {
		t.Errorf("CallTool of a required tool on a server with no tasks: %v", err)
	}
	if len(e.m.Tasks()) != 0 {
		t.Fatal("tasks were made")
	}
}

// CallTool of a tool that requires a task runs it as one, transparently:
// interceptors see a tools/call and its final result; WithTask does the
// same for an optional tool, which without it is a plain call.
func TestTaskCallToolRequired(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	var seen []string
	e := newTaskEnv(t, nil, WithInterceptor(func(ctx context.Context, c *Call, next Invoker) (any, error) {
		res, err := next(ctx, c)
		seen = append(seen, fmt.Sprintf("%s %s %T", c.Method(), c.Name(), res))
		return res, err
	}))
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	call := func(tool, job string, opts ...CallOption) <-chan string {
		out := make(chan string, 1)
		go func() {
			res, err := e.m.CallTool(e.ctx, "jobs", tool, map[string]any{"job": job}, opts...)
			if err != nil {
				out <- err.Error()
				return
			}
			out <- resultText(t, res)
		}()
		return out
	}
	for _, c := range []struct {
		tool string
		opts []CallOption
		task bool
	}{
		{taskserver.ToolWorkRequired, nil, true},
		{taskserver.ToolWork, []CallOption{WithTask()}, true},
		{taskserver.ToolWork, nil, false},
	} {
		job := fmt.Sprintf("%s-%v", c.tool, c.task)
		done := call(c.tool, job, c.opts...)
		taskserver.Await(t, e.ctx, ts.Started(), "the job to start")
		if c.task {
			// Released once the Manager holds the handle: a notification
			// of the end of a task it does not hold yet is not its own.
			e.event(EventTaskCreated, taskserver.Await(t, e.ctx, ts.Created(), "the task"))
		} else {
			select {
			case id := <-ts.Created():
				t.Fatalf("a plain call made task %s", id)
			default:
			}
		}
		ts.Release(job)
		select {
		case got := <-done:
			if got != "done "+job {
				t.Fatalf("%s: %s", c.tool, got)
			}
		case <-e.ctx.Done():
			t.Fatal(e.ctx.Err())
		}
	}
	want := []string{"tools/call work-required *mcp.CallToolResult", "tools/call work *mcp.CallToolResult", "tools/call work *mcp.CallToolResult"}
	if !slices.Equal(seen, want) {
		t.Fatalf("interceptors saw %q", seen)
	}
	if len(e.m.Tasks()) != 0 || len(e.records()) != 0 {
		t.Fatal("a call left its task behind")
	}
}

// A call run as a task whose caller gives up cancels the task on the
// server and forgets it.
func TestTaskCallToolGivesUp(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.m.CallTool(ctx, "jobs", taskserver.ToolWorkRequired, map[string]any{"job": "give-up"})
		done <- err
	}()
	id := taskserver.Await(t, e.ctx, ts.Created(), "the task")
	e.event(EventTaskCreated, id)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool: %v", err)
	}
	if got := taskserver.Await(t, e.ctx, ts.Cancelled(), "the cancel"); got != id {
		t.Fatalf("cancelled %s, want %s", got, id)
	}
	e.event(EventTaskCancelled, id)
	ts.Release("give-up")
}

// A task that fails is ErrTaskFailed with the server's error; a tool that
// answers with isError completes.
func TestTaskFailedAndToolError(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	failed, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "f", "fail": true})
	if err != nil {
		t.Fatal(err)
	}
	toolErr, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "f", "toolError": true})
	if err != nil {
		t.Fatal(err)
	}
	ts.Release("f")
	_, err = failed.Wait(e.ctx)
	if !errors.Is(err, ErrTaskFailed) || !strings.Contains(err.Error(), "job f failed") {
		t.Fatalf("failed task: %v", err)
	}
	if ev := e.event(EventTaskFailed, failed.ID()); !errors.Is(ev.Err, ErrTaskFailed) {
		t.Fatalf("failed event %+v", ev)
	}
	res, err := toolErr.Wait(e.ctx)
	if err != nil || !res.IsError {
		t.Fatalf("isError task: %+v %v", res, err)
	}
}

// Polls of one server's tasks run at most TaskOptions.PollConcurrency at a
// time; the rest wait their turn.
func TestTaskPollConcurrency(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	gate := make(chan struct{})
	arrived := make(chan struct{}, 64)
	var blocking atomic.Bool
	hs := taskserver.StartHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if blocking.Load() && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tasks/get"`)) {
				arrived <- struct{}{}
				<-gate
			}
		}
		ts.ServeHTTP(w, r)
	}))
	e := newTaskEnv(t, nil, WithTasks(TaskOptions{PollConcurrency: 2}))
	e.add("jobs", ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}})
	var tasks []*Task
	for i := range 6 {
		task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": fmt.Sprint("c", i)})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	blocking.Store(true)
	e.clock.Advance(DefaultTaskPollInterval)
	for range 2 {
		select {
		case <-arrived:
		case <-e.ctx.Done():
			t.Fatal(e.ctx.Err())
		}
	}
	r := e.m.tasks
	r.mu.Lock()
	active, waiting := r.servers["jobs"].active, len(r.servers["jobs"].backlog)
	r.mu.Unlock()
	if active != 2 || waiting != 4 {
		t.Fatalf("%d polls under way, %d waiting; want 2 and 4", active, waiting)
	}
	close(gate)
	for _, task := range tasks {
		ts.Release(task.Info().Tool) // no job of that name: the tasks go on
	}
	for range 6 {
		select {
		case <-e.polled:
		case <-e.ctx.Done():
			t.Fatal(e.ctx.Err())
		}
	}
	for i := range 6 {
		ts.Release(fmt.Sprint("c", i))
	}
}

// A corrupt record in the store is reported and left alone; the good ones
// load.
func TestTaskStoreCorruptRecord(t *testing.T) {
	dir := t.TempDir()
	st := store.NewFileTaskStore(dir)
	good := store.TaskRecord{Server: "jobs", TaskID: "good", Tool: "work", Protocol: TaskProtocolCore, Status: "working"}
	if err := st.SaveTask(t.Context(), good); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0000000000000000000000000000000000000000.json"), []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e := newTaskEnv(t, st, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	tasks := e.m.Tasks()
	if len(tasks) != 1 || tasks[0].ID() != "good" {
		t.Fatalf("tasks %v", tasks)
	}
	if !strings.Contains(logs.String(), "corrupt record") {
		t.Fatalf("the corrupt record was not reported: %s", logs.String())
	}
	if err := tasks[0].Forget(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tasks[0].Wait(e.ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Forget: %v", err)
	}
	if rs, _ := st.LoadTasks(e.ctx); len(rs) != 0 {
		t.Fatalf("records %+v", rs)
	}
}

// The tasks extension of 2026-07-28 (SEP-2663), against a server of it: a
// task polled with tasks/get carries its outcome inline; its input
// requests go to the host's handlers and back with tasks/update; the
// server may answer at once; cancel, failure and a restart; requestState
// always sent back as last given, across a new Manager on the same store.
func TestTaskExtension(t *testing.T) {
	const interval = 200 * time.Millisecond
	ext := taskserver.NewExt(interval)
	defer ext.Close()
	hs := taskserver.StartHTTP(t, ext)
	var asked atomic.Int32
	elicit := func(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked.Add(1)
		if server != "ext" || req.Params.Message != "Your name?" {
			return nil, fmt.Errorf("unexpected elicitation from %s: %+v", server, req.Params)
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
	}
	st := store.NewMemoryTaskStore()
	spec := ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}}
	e := newTaskEnv(t, st, WithElicitationHandler(elicit))
	e.add("ext", spec)
	if s, _ := e.m.Status("ext"); s.Protocol != mcp.LATEST_PROTOCOL_VERSION {
		t.Fatalf("protocol %q", s.Protocol)
	}
	start := func(tool string, args map[string]any) *Task {
		t.Helper()
		task, err := e.m.StartTask(e.ctx, "ext", tool, args)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	wait := func(task *Task) (*mcp.CallToolResult, error) {
		t.Helper()
		e.pollUntil(task, interval, 10, func() bool { return task.Status().Terminal() })
		return task.Wait(e.ctx)
	}

	// work
	{
		task := start(taskserver.ExtWork, map[string]any{"job": "w"})
		if info := task.Info(); info.Protocol != TaskProtocolExtension || info.PollInterval != interval || info.TTL != time.Hour {
			t.Fatalf("info %+v", info)
		}
		taskserver.Await(t, e.ctx, ext.Started(), "the task")
		e.tick(task, interval)
		if s := task.Status(); s != TaskWorking {
			t.Fatalf("status %s", s)
		}
		ext.Release("w")
		res, err := wait(task)
		if err != nil || resultText(t, res) != "done w" {
			t.Fatalf("%+v %v", res, err)
		}
	}
	// input
	{
		task := start(taskserver.ExtAsk, nil)
		res, err := wait(task)
		if err != nil || resultText(t, res) != "hello Ada" {
			t.Fatalf("%+v %v", res, err)
		}
		if n := asked.Load(); n != 1 {
			t.Fatalf("the host was asked %d times", n)
		}
		if ev := e.event(EventTaskCreated, task.ID()); ev.Task.Status != TaskInputRequired {
			t.Fatalf("created event %+v", ev.Task)
		}
	}
	// at once
	{
		task := start(taskserver.ExtQuick, map[string]any{"text": "now"})
		select {
		case <-task.Done():
		default:
			t.Fatal("a task the server answered at once is not done")
		}
		res, err := task.Wait(e.ctx)
		if err != nil || resultText(t, res) != "quick now" || task.ID() != "" {
			t.Fatalf("%+v %v %q", res, err, task.ID())
		}
	}
	// cancel
	{
		task := start(taskserver.ExtWork, map[string]any{"job": "never"})
		if err := task.Cancel(e.ctx); err != nil {
			t.Fatal(err)
		}
		if id := taskserver.Await(t, e.ctx, ext.Cancelled(), "the cancel"); id != task.ID() {
			t.Fatalf("cancelled %s", id)
		}
		if _, err := wait(task); !errors.Is(err, ErrTaskCancelled) {
			t.Fatalf("Wait: %v", err)
		}
	}
	// failed
	{
		task := start(taskserver.ExtWork, map[string]any{"job": "bad", "fail": true})
		ext.Release("bad")
		_, err := wait(task)
		if !errors.Is(err, ErrTaskFailed) || !errors.Is(err, mcp.ErrInternalError) || !strings.Contains(err.Error(), "job bad failed") {
			t.Fatalf("Wait: %v", err)
		}
	}
	// plain call
	{
		// Without the extension declared, the server must answer plainly.
		ext.Release("plain")
		res, err := e.m.CallTool(e.ctx, "ext", taskserver.ExtWork, map[string]any{"job": "plain"})
		if err != nil || resultText(t, res) != "done plain" {
			t.Fatalf("%+v %v", res, err)
		}
	}
	// new manager
	{
		task := start(taskserver.ExtWork, map[string]any{"job": "durable"})
		e.tick(task, interval) // a new requestState
		if err := e.m.Close(); err != nil {
			t.Fatal(err)
		}
		e2 := newTaskEnv(t, st, WithElicitationHandler(elicit))
		e2.add("ext", spec)
		tasks := e2.m.Tasks()
		if len(tasks) != 1 || tasks[0].ID() != task.ID() {
			t.Fatalf("tasks %v", tasks)
		}
		ext.Release("durable")
		e2.pollUntil(tasks[0], interval, 10, func() bool { return tasks[0].Status().Terminal() })
		res, err := tasks[0].Wait(e2.ctx)
		if err != nil || resultText(t, res) != "done durable" {
			t.Fatalf("%+v %v", res, err)
		}
		if n := ext.BadRequestStates(); n != 0 {
			t.Fatalf("%d requests sent back a stale requestState", n)
		}
		e = e2
	}
	// expired
	{
		task := start(taskserver.ExtWork, map[string]any{"job": "expired"})
		ext.Expire(task.ID())
		e.tick(task, interval)
		if _, err := task.Wait(e.ctx); !errors.Is(err, ErrTaskLost) || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("Wait: %v", err)
		}
	}
	// restart
	{
		task := start(taskserver.ExtWork, map[string]any{"job": "lost"})
		ext.Restart()
		e.tick(task, interval)
		if _, err := task.Wait(e.ctx); !errors.Is(err, ErrTaskLost) {
			t.Fatalf("Wait: %v", err)
		}
	}
}

// A new Manager collects the tasks of its store once Apply adds their
// server, as Add does.
func TestTaskCollectedAfterApply(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	hs := taskserver.StartHTTP(t, ts)
	st := store.NewMemoryTaskStore()
	first := newTaskEnv(t, st)
	first.add("jobs", ServerSpec{HTTP: &mcphttp.Spec{URL: hs.URL()}})
	task, err := first.m.StartTask(first.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "apply"})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.m.Close(); err != nil {
		t.Fatal(err)
	}
	second := newTaskEnv(t, st)
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"jobs": {"type": "http", "url": "` + hs.URL() + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.m.Apply(second.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := second.m.WaitFor(second.ctx, "jobs", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	ts.Release("apply")
	taskserver.Await(t, second.ctx, ts.Ended(), "the task to end")
	again := second.m.Tasks()[0]
	if again.ID() != task.ID() {
		t.Fatalf("the new Manager holds task %s, want %s", again.ID(), task.ID())
	}
	second.pollUntil(again, DefaultTaskPollInterval, 5, func() bool { return again.Status().Terminal() })
	res, err := again.Wait(second.ctx)
	if err != nil || resultText(t, res) != "done apply" {
		t.Fatalf("%+v %v", res, err)
	}
}

// A call to a tool that requires a task, made while its server has no
// catalog published (lazy, so not yet connected; likewise one enabled
// again), runs as a task: the runtime's catalog decides once it is up,
// not the empty View of when the call began. (Found by the soak: a call
// just after Enable went out plain, and the server refused it.)
func TestTaskRequiredBeforeTheCatalog(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	if err := e.m.Add(e.ctx, "jobs", ServerSpec{Dialer: ts.Dial, Lazy: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.m.View().Catalog("jobs"); ok {
		t.Fatal("a lazy server has a catalog before it connected")
	}
	done := make(chan error, 1)
	go func() {
		res, err := e.m.CallTool(e.ctx, "jobs", taskserver.ToolWorkRequired, map[string]any{"job": "lazy"})
		if err == nil && resultText(t, res) != "done lazy" {
			err = fmt.Errorf("result %q", resultText(t, res))
		}
		done <- err
	}()
	select {
	case <-ts.Started():
	case err := <-done: // a plain call: the server refuses it
		t.Fatalf("the call ended before its job started: %v", err)
	case <-e.ctx.Done():
		t.Fatal(e.ctx.Err())
	}
	e.event(EventTaskCreated, taskserver.Await(t, e.ctx, ts.Created(), "the task"))
	ts.Release("lazy")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-e.ctx.Done():
		t.Fatal(e.ctx.Err())
	}
}
