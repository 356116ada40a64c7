package client

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TaskStatus is where a task is. The first five are the protocol's; lost
// is the Manager's own.
type TaskStatus string

// The statuses of a task.
const (
	// TaskWorking: the server is running the tool.
	TaskWorking TaskStatus = "working"
	// TaskInputRequired: the server waits for the host: an elicitation,
	// a sampling request or the roots, which go to the host's handlers
	// (WithElicitationHandler, WithSamplingHandler, WithRoots) as any of
	// the server's requests do.
	TaskInputRequired TaskStatus = "input_required"
	// TaskCompleted: the tool ran to its end; Wait returns its result (a
	// result with IsError set is a completed task too).
	TaskCompleted TaskStatus = "completed"
	// TaskFailed: the request failed at the protocol level; Wait's error
	// wraps ErrTaskFailed and the server's error.
	TaskFailed TaskStatus = "failed"
	// TaskCancelled: the task was cancelled (Cancel, or by the server);
	// Wait's error wraps ErrTaskCancelled.
	TaskCancelled TaskStatus = "cancelled"
	// TaskLost: the server no longer knows the task: it restarted, or the
	// task expired (its ttl), or it kept answering polls with errors.
	// Wait's error wraps ErrTaskLost.
	TaskLost TaskStatus = "lost"
)

// Terminal reports whether a task in status s has ended.
func (s TaskStatus) Terminal() bool {
	switch s {
	case TaskCompleted, TaskFailed, TaskCancelled, TaskLost:
		return true
	}
	return false
}

// Defaults of task polling.
const (
	// DefaultTaskPollInterval is how often a task is polled when its
	// server does not say (TaskOptions.PollInterval).
	DefaultTaskPollInterval = time.Second
	// MinTaskPollInterval and MaxTaskPollInterval bound the interval a
	// server asks for: one that asks for less is polled this often, and a
	// task is polled at least once every MaxTaskPollInterval, so that its
	// loss shows within that.
	MinTaskPollInterval = 100 * time.Millisecond
	MaxTaskPollInterval = time.Minute
	// DefaultTaskPollConcurrency is how many polls of one server's tasks
	// run at once (TaskOptions.PollConcurrency); the others wait their turn.
	DefaultTaskPollConcurrency = 4
)

// maxTaskPollErrors is how many polls in a row a server may answer with
// errors that do not say the task is gone before the task counts as lost:
// a task is never polled forever.
const maxTaskPollErrors = 5

// taskStoreTimeout bounds one operation on the TaskStore.
const taskStoreTimeout = 10 * time.Second

// Task is the handle of a tool call that runs on its server as an MCP
// task (StartTask). It names the server, the tool and the task's id, and
// is independent of the server's runtime: polling goes on on whatever
// runtime the server has, across reconnects, Disable and Enable, and,
// with the TaskStore (TaskOptions.Store), across a restart of the host. A
// Task is safe for concurrent use.
//
// The Manager polls every open task from one goroutine, at the interval
// the server asks for, and a notifications/tasks/status from the server
// updates the handle at once. Each change of status is an event (see
// EventTaskCreated and the kinds after it).
type Task struct {
	// Set at creation, read-only.
	m       *Manager
	server  string
	tool    string
	id      string
	proto   taskProto
	started time.Time
	done    chan struct{} // closed once the outcome is known

	// saveMu orders the task's records in the store: a save or the delete
	// takes it, and writes what the task is at that moment.
	saveMu  sync.Mutex
	deleted bool // guarded by saveMu: the record is gone for good

	// Guarded by mu, a leaf lock (see slot for the package's order). The
	// fields change as the server tells the Manager about the task, from
	// the polling goroutine or a notification.
	mu           sync.Mutex
	status       TaskStatus
	message      string
	created      time.Time
	ttl          time.Duration
	interval     time.Duration // the server's; 0 if it gave none
	requestState string
	answered     map[string]bool // input requests answered (the extension)
	result       *mcp.CallToolResult
	err          error      // the outcome's error; nil for a completed task
	finished     bool       // the outcome is known (result, err) and done closed
	emitted      TaskStatus // the status of the last event
	collected    bool       // a Wait returned the outcome, or Forget dropped the task
	pollErrs     int        // polls in a row that failed with the server's error
	waiting      bool       // a tasks/result waits on the server (2025-11-25, input_required)
	// session is the session the task is bound to (the one it was started
	// in, on a server with sessions), sessProto its protocol version and
	// identity its endpoint's (sessionIdentity); session is "" for a task
	// with none, and once the server no longer knew it (the task is then
	// asked about in the runtime's own session).
	session, sessProto, identity string

	// watchers are the channels of Watch, guarded by mu; each gets what
	// the task is after every change, and is closed with the outcome.
	watchers map[*taskWatch]struct{}

	// Guarded by the registry's mu (taskpoll.go).
	next    time.Time // when the next poll is due
	index   int       // in the registry's heap; -1 when not in it
	polling bool      // a poll is under way
	again   bool      // poll again as soon as the one under way ends
	parked  bool      // waits for its server to be added
}

// TaskInfo is what a Task says of itself at one moment, as Info and the
// task events give it.
type TaskInfo struct {
	Server string
	Tool   string
	ID     string
	Status TaskStatus
	// Message is the server's statusMessage, if any, or why the task was
	// lost.
	Message string
	// Protocol is the task's wire form: TaskProtocolCore or
	// TaskProtocolExtension.
	Protocol string
	// Started is when the host started the task; Created when the server
	// says it created it (zero if it did not say).
	Started, Created time.Time
	// TTL is how long after Created the server keeps the task (0: it did
	// not say); PollInterval is the interval it asked for (0: none).
	TTL, PollInterval time.Duration
}

// ID is the task's id, as the server gave it.
func (t *Task) ID() string { return t.id }

// Server is the name of the task's server.
func (t *Task) Server() string { return t.server }

// Tool is the tool that runs as the task.
func (t *Task) Tool() string { return t.tool }

// Status returns the task's last known status.
func (t *Task) Status() TaskStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// Info returns what the handle knows of the task now.
func (t *Task) Info() TaskInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.infoLocked()
}

func (t *Task) infoLocked() TaskInfo {
	return TaskInfo{Server: t.server, Tool: t.tool, ID: t.id, Status: t.status, Message: t.message,
		Protocol: t.proto.String(), Started: t.started, Created: t.created, TTL: t.ttl, PollInterval: t.interval}
}

// Done returns a channel that is closed once the task's outcome is known.
func (t *Task) Done() <-chan struct{} { return t.done }

// op names the task in its errors: "task build 786512e2".
func (t *Task) op() string { return "task " + t.tool + " " + t.id }

// Wait waits for the task's outcome and returns it: the tool's result for
// a completed task (a result with IsError set included), or an error, a
// *ServerError wrapping ErrTaskFailed (with the server's error),
// ErrTaskCancelled or ErrTaskLost.
//
// The outcome arrives once: the first Wait to return it collects it, which
// removes the task from the TaskStore and from Tasks; every later Wait
// returns the same result (the same *mcp.CallToolResult, which the caller
// must not change) or error at once. A Wait whose ctx ends first returns
// ctx's error and leaves the task open. When the Manager is closed, Wait
// returns an error wrapping ErrClosed, and the task stays in the store
// for the next Manager.
func (t *Task) Wait(ctx context.Context) (*mcp.CallToolResult, error) {
	select {
	case <-t.done:
	default:
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, &ServerError{Server: t.server, Op: "wait for " + t.op(), Err: ctx.Err()}
		case <-t.m.ctx.Done():
			select {
			case <-t.done:
			default:
				return nil, &ServerError{Server: t.server, Op: "wait for " + t.op(), Err: ErrClosed}
			}
		}
	}
	// Delivered: the store forgets it even if the caller's ctx ends now.
	_ = t.m.tasks.collect(context.WithoutCancel(ctx), t)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.result, t.err
}

// Cancel asks the server to cancel the task (tasks/cancel), and returns
// once the server acknowledged it; the task is then polled at once, and
// Wait gives its outcome: cancelled, or another if it ended first (the
// server decides, and a server whose task already ended may answer Cancel
// with an error). It waits for a server that is reconnecting, as any
// request does. Interceptors (WithInterceptor) see it as a request of
// method "tasks/cancel" named by the task's id, with no result. Cancelling
// a task that has ended does nothing.
func (t *Task) Cancel(ctx context.Context) error {
	if t.Status().Terminal() {
		return nil
	}
	_, err := run(ctx, t.m, t.server, request[struct{}]{
		method: string(mcp.MethodTasksCancel), name: t.id, op: "cancel " + t.tool + " task", replay: alwaysReplayable,
		send: t.sendCancel,
	}, nil)
	if err != nil {
		return err
	}
	t.m.tasks.pollSoon(t)
	return nil
}

// Forget drops the handle without asking the server anything: the task
// leaves Tasks and the TaskStore, and a Wait under way returns an error
// wrapping ErrClosed (a task that had ended keeps its outcome for Wait).
// It is for a task whose server is gone for good; the server, if it still
// runs the task, is not told. ctx bounds the store's delete, whose error it
// returns.
func (t *Task) Forget(ctx context.Context) error {
	const why = "forgotten by the host"
	t.m.tasks.finish(t, TaskLost, nil, t.taskError(ErrClosed, nil, why), why)
	return withOp("forget "+t.op(), t.server, t.m.tasks.collect(ctx, t))
}

// StartTask calls tool on server with args as an MCP task, and returns its
// handle as soon as the server accepted it; Wait returns the tool's
// result. The call is a task of protocol 2025-11-25 where the server's
// runtime speaks that protocol (the tool must declare execution.taskSupport
// optional or required, and the server capabilities.tasks), or of the
// tasks extension of 2026-07-28 (SEP-2663) where the server declares it. A
// server of the extension may answer at once instead: the handle is then
// complete already. Otherwise StartTask fails with an error wrapping
// ErrTaskUnsupported, which says why.
//
// Like CallTool, it waits for a server that is connecting, and a request
// lost in flight is replayed only for a read-only or idempotent tool (a
// lost start is a task the Manager cannot know the id of). Interceptors see
// a tools/call, whose result is the *Task. WithCallTimeout bounds the start
// alone; WithTaskTTL asks the server to keep the task that long.
//
// The handle is saved in the TaskStore before StartTask returns.
func (m *Manager) StartTask(ctx context.Context, server, tool string, args any, opts ...CallOption) (*Task, error) {
	op := "start task " + tool
	if err := m.filteredTool(server, tool); err != nil {
		return nil, withOp(op, server, err)
	}
	s, err := m.slot(server)
	if err != nil {
		return nil, withOp(op, server, err)
	}
	proto, err := s.taskProto(ctx, tool)
	if err != nil {
		return nil, withOp(op, server, err)
	}
	o := applyCallOptions(opts)
	return run(ctx, m, server, request[*Task]{
		method: string(mcp.MethodToolsCall), name: tool, op: "start task", args: args,
		replay: toolReplayable, send: m.tasks.startSend(proto, o.taskTTL),
	}, opts)
}

// taskProto waits for s's runtime, and returns how tool runs as a task on
// it (see taskProtoFor).
func (s *slot) taskProto(ctx context.Context, tool string) (taskProto, error) {
	l, err := s.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer l.release()
	p, err := taskProtoFor(l, tool)
	if err != nil {
		return 0, &ServerError{Server: s.name, Err: err}
	}
	return p, nil
}

// WithTaskTTL asks the server to keep the task StartTask (or a call run as
// a task) starts for d after it created it. Defaults to the server's
// choice.
func WithTaskTTL(d time.Duration) CallOption {
	return func(o *callOptions) { o.taskTTL = d }
}

// WithTask makes CallTool (or Call) run the tool as a task and wait for
// it: the call then survives a lost connection, a reconnect, Disable and
// Enable, as a task handle does, and its outcome is as Wait's. Without it
// only a tool that declares execution.taskSupport "required" runs as a
// task (transparently); others run as plain calls.
func WithTask() CallOption {
	return func(o *callOptions) { o.task = true }
}

// WithTaskStarted hands the caller the handle of the task a call runs as
// (WithTask, or a tool that requires a task) while the call waits for its
// outcome: f is called once, on the calling goroutine, as soon as the
// server accepted the task, before the call waits. With the handle the
// host can watch the task (Task.Watch), cancel it (Task.Cancel), or keep
// its id to find it again (Manager.Task), in this Manager or, with a
// durable TaskStore, in the next one. f must not block: the call waits
// for it. A call that does not run as a task never calls f; neither does a
// task the server answered at once.
func WithTaskStarted(f func(*Task)) CallOption {
	return func(o *callOptions) { o.started = f }
}

// Task returns the handle of server's task id: one this Manager started,
// or one its TaskStore held when it was made (a task of the Manager before
// it). It fails with an error wrapping ErrUnknownTask when there is none:
// the Manager never had it, or its outcome was collected (Task.Wait), or
// it was forgotten.
func (m *Manager) Task(server, id string) (*Task, error) {
	if t := m.tasks.lookup(server, id); t != nil {
		return t, nil
	}
	return nil, &ServerError{Server: server, Op: "task " + id, Err: ErrUnknownTask}
}

// Watch returns what the task is now, and a channel that receives what it
// is after each change the Manager learns of (its status, its message, the
// server's poll interval ...), in order, until its outcome is known: the
// last value is then the terminal one, and the channel is closed. It is
// the task's own view of what the Manager's event stream carries
// (EventTaskCreated and the kinds after it).
//
// A watcher that falls behind loses intermediate values, never the
// latest: the channel holds at most buffer values (at least 1), and the
// oldest is dropped to make room, so a slow watcher never holds up the
// task's polling. cancel stops the watch and closes the channel; it is
// safe to call more than once. For a task that has ended, the channel is
// closed at once.
func (t *Task) Watch(buffer int) (now TaskInfo, changes <-chan TaskInfo, cancel func()) {
	w := &taskWatch{ch: make(chan TaskInfo, max(buffer, 1))}
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.infoLocked()
	if t.finished {
		close(w.ch)
		return now, w.ch, func() {}
	}
	if t.watchers == nil {
		t.watchers = map[*taskWatch]struct{}{}
	}
	t.watchers[w] = struct{}{}
	return now, w.ch, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if _, ok := t.watchers[w]; ok {
			delete(t.watchers, w)
			close(w.ch)
		}
	}
}

// taskWatch is one Watch of a task.
type taskWatch struct{ ch chan TaskInfo }

// tellLocked hands every watcher what t is now, and closes them once t's
// outcome is known. t.mu is held: the sends are ordered, and never meet a
// close. Every watcher has the outcome before any channel closes, so a
// watcher that reads on once another's channel closed (the task ended)
// finds the outcome in its channel, last, after at most the values it left
// unread.
func (t *Task) tellLocked() {
	if len(t.watchers) == 0 {
		return
	}
	info := t.infoLocked()
	for w := range t.watchers {
		for sent := false; !sent; {
			select {
			case w.ch <- info:
				sent = true
			default:
				select {
				case <-w.ch: // the oldest goes
				default:
				}
			}
		}
	}
	if t.finished {
		for w := range t.watchers {
			close(w.ch)
		}
		t.watchers = nil
	}
}

// Tasks returns the handles the Manager holds, oldest first: the tasks
// still running, and the ended ones whose outcome no Wait has collected
// yet. A Manager made on a TaskStore holds the open tasks of the Manager
// before it from the start, and polls each once its server is added.
func (m *Manager) Tasks() []*Task {
	return m.tasks.list()
}

// callAsTask runs tool on s as a task and waits for its result: the
// request pipeline's way (do) of a CallTool of a tool that requires a task,
// or of one made WithTask. The start is sent as any request; the wait is
// the handle's. If ctx ends first, the server is asked to cancel the task,
// in the background.
func (m *Manager) callAsTask(ctx context.Context, s *slot, req *Request, tool string, args any, opts []CallOption) (*mcp.CallToolResult, error) {
	o := applyCallOptions(opts)
	if timeout := callTimeout(s.config(), &o); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	proto, err := s.taskProto(ctx, tool)
	if err != nil {
		return nil, err
	}
	start := request[*Task]{
		method: string(mcp.MethodToolsCall), name: tool, op: "start task",
		replay: toolReplayable, send: m.tasks.startSend(proto, o.taskTTL),
	}
	// The call's own timeout bounds the whole; the start gets what is left.
	t, err := doOn(ctx, s, req, start, args, withoutTimeout(opts))
	if err != nil {
		return nil, err
	}
	if o.started != nil && t.id != "" {
		o.started(t)
	}
	res, err := t.Wait(ctx)
	if err != nil && ctx.Err() != nil && !t.Status().Terminal() {
		m.tasks.abandon(t)
		return nil, canceledError(ctx, s.name, nil)
	}
	return res, err
}

// withoutTimeout returns opts with no call timeout, so that a request made
// within a call that applied it already is bounded by the call's context
// alone.
func withoutTimeout(opts []CallOption) []CallOption {
	if len(opts) == 0 {
		return nil
	}
	return append(slices.Clip(opts), func(o *callOptions) { o.timeout = 0 })
}

// taskCall reports whether CallTool of tool on server runs as a task:
// asked for with WithTask, or required by the tool in the published
// catalog. known is false when no catalog is published (a server still
// connecting, or enabled again): the runtime's catalog decides (do).
func (m *Manager) taskCall(server, tool string, opts []CallOption) (task, known bool) {
	if len(opts) > 0 && applyCallOptions(opts).task {
		return true, true
	}
	c, ok := m.pub.View().Catalog(server)
	if !ok {
		return false, false
	}
	return requiresTask(c.Capabilities, c.Tools, tool), true
}

// taskRequired waits for s's runtime, as a request does (acquire), and
// reports whether its catalog says tool requires a task: for a call that
// began while no catalog was published.
func (s *slot) taskRequired(ctx context.Context, tool string) (bool, error) {
	l, err := s.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer l.release()
	return l.catalog != nil && requiresTask(l.catalog.Capabilities, l.catalog.Tools, tool), nil
}

// requiresTask reports whether a server of caps that lists tools runs tool
// only as a task.
func requiresTask(caps mcp.ServerCapabilities, tools []mcp.Tool, tool string) bool {
	if caps.Tasks == nil && caps.Extensions == nil {
		return false
	}
	for i := range tools {
		if t := &tools[i]; t.Name == tool {
			return t.Execution != nil && t.Execution.TaskSupport == mcp.TaskSupportRequired
		}
	}
	return false
}
