package client

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/store"
)

// taskRegistry holds a Manager's task handles and polls them: one
// goroutine (run) keeps a heap of the open tasks by when each is due and
// queues each poll when it is, at most concurrency at a time per server
// (the others wait in the server's backlog). Workers, started as polls
// queue up and ended when none is left, run them: a poll sends through the
// request pipeline (do), on whatever runtime the server has then, and acts
// on the answer (this file). The handle's state and its record are
// taskstate.go's; the requests, in both wire forms, taskwire.go's.
//
// Locking: mu and each Task's mu are leaves, never held together. A task's
// state changes under its server's slot lock, when the server is added, so
// that its events are numbered in order with the slot's (slot.mu →
// Task.mu).
type taskRegistry struct {
	// Set at creation, read-only.
	m           *Manager
	store       store.TaskStore
	interval    time.Duration // when the server gives none
	concurrency int           // polls per server at once
	unlock      func() error  // releases the default store's lock; nil if none was taken

	mu      sync.Mutex // guards the fields below and the Tasks' registry fields
	tasks   map[taskKey]*Task
	due     taskHeap
	servers map[string]*serverPolls
	// ready are the polls due and within their server's concurrency,
	// which the workers take in order; busy counts the workers that run a
	// poll, workers all of them.
	ready         []*Task
	busy, workers int
	running       bool // run was started
	closed        bool // the Manager is closing: no goroutine starts any more
	wake          chan struct{}
}

type taskKey struct{ server, id string }

// serverPolls are the polls of one server's tasks under way and waiting.
type serverPolls struct {
	active  int
	backlog []*Task
}

func newTaskRegistry(m *Manager) *taskRegistry {
	r := &taskRegistry{m: m, store: m.opts.taskStore, interval: m.opts.taskPollInterval,
		concurrency: m.opts.taskPollConcurrency,
		tasks:       map[taskKey]*Task{}, servers: map[string]*serverPolls{}, wake: make(chan struct{}, 1)}
	if r.store == nil {
		r.store, r.unlock = defaultTaskStore(m)
	}
	return r
}

// release gives up the default task store's lock, once nothing of the
// Manager's writes to the store any more.
func (r *taskRegistry) release() {
	if r.unlock == nil {
		return
	}
	if err := r.unlock(); err != nil {
		r.m.opts.logger.Warn("mcpfleet: task store: could not release its lock", "error", err)
	}
}

// startLocked starts the polling goroutine if it is not running. r.mu is
// held.
func (r *taskRegistry) startLocked() {
	if r.running || r.closed {
		return
	}
	r.running = true
	r.m.wg.Go(r.run)
}

// goSafe runs f in a goroutine of the Manager's, unless the Manager is
// closing.
func (r *taskRegistry) goSafe(f func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.m.wg.Go(f)
	return true
}

// close starts no more goroutines; run ends with the Manager's context.
func (r *taskRegistry) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}

// kick wakes run, to look at the schedule again.
func (r *taskRegistry) kick() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run starts each task's poll when it is due, until the Manager closes.
func (r *taskRegistry) run() {
	ctx := r.m.ctx
	clock := r.m.opts.clock
	var (
		timer <-chan time.Time
		stop  func() bool
	)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		r.mu.Lock()
		now := clock.Now()
		for len(r.due) > 0 && !r.due[0].next.After(now) {
			t := heap.Pop(&r.due).(*Task)
			r.dispatchLocked(t)
		}
		var deadline time.Time
		if len(r.due) > 0 {
			deadline = r.due[0].next
		}
		r.mu.Unlock()
		if stop != nil {
			stop()
			timer, stop = nil, nil
		}
		if !deadline.IsZero() {
			timer, stop = clock.NewTimer(deadline.Sub(clock.Now()))
			// The clock may have moved on between reading it and arming
			// the timer (a test's clock jumps): the timer would then fire
			// late, or never.
			if !clock.Now().Before(deadline) {
				continue
			}
		}
		select {
		case <-timer:
			timer, stop = nil, nil
		case <-r.wake:
		case <-ctx.Done():
			return
		}
	}
}

// dispatchLocked queues t's poll for a worker, or puts it in its server's
// backlog when the server has its fill of polls under way. r.mu is held.
func (r *taskRegistry) dispatchLocked(t *Task) {
	sp := r.servers[t.server]
	if sp == nil {
		sp = &serverPolls{}
		r.servers[t.server] = sp
	}
	if sp.active >= r.concurrency {
		sp.backlog = append(sp.backlog, t)
		return
	}
	r.readyLocked(sp, t)
}

// readyLocked queues t's poll, and starts a worker if every worker is
// busy. r.mu is held.
func (r *taskRegistry) readyLocked(sp *serverPolls, t *Task) {
	sp.active++
	t.polling = true
	r.ready = append(r.ready, t)
	if r.workers < len(r.ready)+r.busy && !r.closed {
		r.workers++
		r.m.wg.Go(r.work)
	}
}

// work runs queued polls until none is left. A worker runs many polls in a
// row, so that the deep stack a poll needs (the request pipeline, JSON,
// the transport) is grown once per worker, not once per poll.
func (r *taskRegistry) work() {
	ctx := r.m.ctx
	r.mu.Lock()
	for len(r.ready) > 0 {
		t := r.ready[0]
		r.ready[0] = nil
		r.ready = r.ready[1:]
		r.busy++
		r.mu.Unlock()
		r.poll(ctx, t)
		r.mu.Lock()
		r.busy--
	}
	r.workers--
	r.mu.Unlock()
}

// polled ends t's poll: the next one is due after the interval (at once
// if one was asked for meanwhile), unless t ended or waits for its server;
// and the next task of the server's backlog gets the turn.
func (r *taskRegistry) polled(t *Task) {
	if f := r.m.opts.taskPolled; f != nil {
		defer f(t)
	}
	t.mu.Lock()
	finished := t.finished
	interval := r.pollInterval(t.interval)
	t.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	t.polling = false
	sp := r.servers[t.server]
	sp.active--
	if len(sp.backlog) > 0 && !r.closed {
		next := sp.backlog[0]
		sp.backlog[0] = nil
		sp.backlog = sp.backlog[1:]
		r.readyLocked(sp, next)
	}
	if finished || t.parked || r.tasks[taskKey{t.server, t.id}] != t {
		return
	}
	at := r.m.opts.clock.Now().Add(interval)
	if t.again {
		t.again = false
		at = r.m.opts.clock.Now()
	}
	r.scheduleLocked(t, at)
}

// scheduleLocked makes t due at at. r.mu is held; t's poll is not under
// way.
func (r *taskRegistry) scheduleLocked(t *Task, at time.Time) {
	t.next = at
	if t.index >= 0 {
		heap.Fix(&r.due, t.index)
	} else {
		heap.Push(&r.due, t)
	}
	r.startLocked()
	r.kick()
}

// reschedule makes t due at at (or, with now, at once), if it is open and
// no poll of it is under way; one under way polls again at once when now.
func (r *taskRegistry) reschedule(t *Task, now bool, after time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tasks[taskKey{t.server, t.id}] != t || t.parked {
		return
	}
	if t.polling {
		t.again = t.again || now
		return
	}
	at := r.m.opts.clock.Now()
	if !now {
		at = at.Add(after)
	}
	r.scheduleLocked(t, at)
}

// pollSoon polls t at once.
func (r *taskRegistry) pollSoon(t *Task) { r.reschedule(t, true, 0) }

// pollInterval is the interval between polls of a task whose server asked
// for d (0: it did not).
func (r *taskRegistry) pollInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return r.interval
	}
	return min(max(d, MinTaskPollInterval), MaxTaskPollInterval)
}

// serverAdded polls at once the tasks that waited for server to be added.
func (r *taskRegistry) serverAdded(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.m.opts.clock.Now()
	for k, t := range r.tasks {
		switch {
		case k.server != server:
		case t.parked:
			t.parked = false
			r.scheduleLocked(t, now)
		case t.polling:
			// A poll that did not find the server yet must not park
			// the task now that it is here.
			t.again = true
		}
	}
}

// park leaves t unpolled until its server is added, unless it was added
// while t's poll looked for it.
func (r *taskRegistry) park(t *Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.again {
		return
	}
	t.parked = true
	if t.index >= 0 {
		heap.Remove(&r.due, t.index)
	}
}

// add registers a task the server just created, saves it, and schedules
// its first poll.
func (r *taskRegistry) add(t *Task) {
	r.mu.Lock()
	r.tasks[taskKey{t.server, t.id}] = t
	r.mu.Unlock()
	saveErr := r.save(t)
	r.update(t, func() bool { return true }, EventTaskCreated, saveErr)
	t.mu.Lock()
	interval := r.pollInterval(t.interval)
	t.mu.Unlock()
	r.reschedule(t, false, interval)
}

// list returns the handles, oldest first.
func (r *taskRegistry) list() []*Task {
	r.mu.Lock()
	out := make([]*Task, 0, len(r.tasks))
	for _, t := range r.tasks {
		out = append(out, t)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].started.Equal(out[j].started) {
			return out[i].started.Before(out[j].started)
		}
		if out[i].server != out[j].server {
			return out[i].server < out[j].server
		}
		return out[i].id < out[j].id
	})
	return out
}

// boundTo reports whether an open task of server is bound to session id:
// its session must outlive the runtime's close.
func (r *taskRegistry) boundTo(server, id string) bool {
	r.mu.Lock()
	var mine []*Task
	for k, t := range r.tasks {
		if k.server == server {
			mine = append(mine, t)
		}
	}
	r.mu.Unlock()
	for _, t := range mine {
		t.mu.Lock()
		bound := !t.finished && t.session == id
		t.mu.Unlock()
		if bound {
			return true
		}
	}
	return false
}

// pollServerSoon polls server's open tasks at once: what the server told
// of them may have been lost (its notification stream broke).
func (r *taskRegistry) pollServerSoon(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.m.opts.clock.Now()
	for k, t := range r.tasks {
		switch {
		case k.server != server || t.parked:
		case t.polling:
			t.again = true
		default:
			r.scheduleLocked(t, now)
		}
	}
}

// lookup returns the open handle of server's task id.
func (r *taskRegistry) lookup(server, id string) *Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tasks[taskKey{server, id}]
}

// poll asks the server where t is, and does what its answer asks for.
func (r *taskRegistry) poll(ctx context.Context, t *Task) {
	defer r.polled(t)
	r.m.mu.RLock()
	s := r.m.slots[t.server]
	r.m.mu.RUnlock()
	if s == nil {
		r.park(t)
		return
	}
	s.mu.Lock()
	accepting := s.state.Accepting()
	s.mu.Unlock()
	if !accepting {
		return // Disabled, failed, waiting for authorization: not now
	}
	t.mu.Lock()
	finished, st := t.finished, t.status
	t.mu.Unlock()
	if finished {
		return
	}
	var w *wireTask
	// A 2025-11-25 task a notification said has ended only needs its
	// outcome collected.
	if t.proto == protoExt || !st.Terminal() {
		var err error
		w, err = r.get(ctx, s, t)
		if err != nil {
			r.pollFailed(ctx, t, err)
			return
		}
		t.mu.Lock()
		t.pollErrs = 0
		t.mu.Unlock()
		if r.observe(t, w) {
			_ = r.save(t)
		}
		st = w.Status
	}
	r.act(ctx, s, t, st, w)
}

// act does what t's status st asks for; w is the server's answer that
// said so, or nil (a 2025-11-25 task a notification said has ended).
func (r *taskRegistry) act(ctx context.Context, s *slot, t *Task, st TaskStatus, w *wireTask) {
	switch {
	case st == TaskCancelled:
		why := ""
		if w != nil {
			why = w.Message
		}
		r.end(t, TaskCancelled, nil, t.taskError(ErrTaskCancelled, nil, why), "")
	case t.proto == protoExt:
		r.actExt(ctx, s, t, w)
	case st == TaskCompleted || st == TaskFailed:
		r.collectResult(ctx, s, t, st)
	case st == TaskInputRequired:
		r.startWaiter(s, t)
	}
}

// actExt does what a task of the extension asks for: its outcome is in
// the answer, and so are the input requests it waits for.
func (r *taskRegistry) actExt(ctx context.Context, s *slot, t *Task, w *wireTask) {
	switch w.Status {
	case TaskCompleted:
		res, err := parseToolResult(w.Result)
		if err != nil {
			r.pollFailed(ctx, t, serverError(ErrServerError, t.server, fmt.Errorf("the completed task's result: %w", err)))
			return
		}
		r.end(t, TaskCompleted, res, nil, "")
	case TaskFailed:
		var cause error
		if w.Error != nil {
			cause = w.Error.AsError()
		}
		r.end(t, TaskFailed, nil, t.taskError(ErrTaskFailed, cause, w.Message), "")
	case TaskInputRequired:
		r.answer(ctx, s, t, w.InputRequests)
	}
}

// pollFailed decides what a failed poll of t means: the server's answer
// that it no longer knows the task (or a run of error answers) loses it;
// a server that was removed parks it until it is added again; anything
// else (a server reconnecting, disabled, a lost exchange, a timeout) is
// tried again at the next poll.
func (r *taskRegistry) pollFailed(ctx context.Context, t *Task, err error) {
	switch {
	case ctx.Err() != nil:
	case errors.Is(err, ErrUnknownServer) || errors.Is(err, ErrClosed):
		r.park(t)
	case errors.Is(err, errWrongProtocol):
		r.lose(t, err, "")
	case errors.Is(err, ErrServerError):
		if taskGone(err) {
			r.lose(t, err, "")
			return
		}
		t.mu.Lock()
		t.pollErrs++
		n := t.pollErrs
		t.mu.Unlock()
		if n >= maxTaskPollErrors {
			r.lose(t, err, fmt.Sprintf("the server answered %d polls in a row with an error", n))
		}
	}
}

// lose ends t as lost, saying why: its ttl passed, or the server no
// longer knows it.
func (r *taskRegistry) lose(t *Task, cause error, why string) {
	if why == "" {
		why = "the server no longer knows the task"
		t.mu.Lock()
		switch {
		case cause != nil && strings.Contains(strings.ToLower(cause.Error()), "expired"):
			why = "the task expired"
			if t.ttl > 0 {
				why = fmt.Sprintf("the task expired (ttl %v)", t.ttl)
			}
		case t.ttl > 0 && !t.created.IsZero() && r.m.opts.clock.Now().After(t.created.Add(t.ttl)):
			why = fmt.Sprintf("the task expired (ttl %v from %s)", t.ttl, t.created.Format(time.RFC3339))
		}
		t.mu.Unlock()
	}
	r.end(t, TaskLost, nil, t.taskError(ErrTaskLost, cause, why), why)
}

// taskGone reports whether a server's error answer about a task says the
// server does not know it: invalid params, the protocols' answer for an
// unknown or expired task id; a method not found, from a server that no
// longer does tasks; or, from servers that answer with another code, a
// message that says not found or expired.
func taskGone(err error) bool {
	if errors.Is(err, mcp.ErrInvalidParams) || errors.Is(err, mcp.ErrMethodNotFound) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "not found") || strings.Contains(msg, "expired")
}

// collectResult fetches the outcome of a 2025-11-25 task that ended
// (tasks/result).
func (r *taskRegistry) collectResult(ctx context.Context, s *slot, t *Task, st TaskStatus) {
	res, err := r.result(ctx, s, t, false)
	switch {
	case err == nil && st == TaskFailed:
		r.end(t, TaskFailed, nil, t.taskError(ErrTaskFailed, nil, t.Info().Message), "")
	case err == nil:
		r.end(t, TaskCompleted, res, nil, "")
	case st == TaskFailed && errors.Is(err, ErrServerError) && !taskGone(err):
		r.end(t, TaskFailed, nil, t.taskError(ErrTaskFailed, errors.Unwrap(err), ""), "")
	default:
		r.pollFailed(ctx, t, err)
	}
}

// startWaiter sends a patient tasks/result for a 2025-11-25 task that
// waits for input: that is where such a server asks the host for it (the
// requests reach the host's handlers as any of the server's requests do),
// and the answer is the task's outcome. Polls go on meanwhile.
func (r *taskRegistry) startWaiter(s *slot, t *Task) {
	t.mu.Lock()
	if t.waiting {
		t.mu.Unlock()
		return
	}
	t.waiting = true
	t.mu.Unlock()
	started := r.goSafe(func() {
		defer func() {
			t.mu.Lock()
			t.waiting = false
			t.mu.Unlock()
		}()
		res, err := r.result(r.m.ctx, s, t, true)
		if err != nil {
			if r.m.ctx.Err() == nil && errors.Is(err, ErrServerError) && taskGone(err) {
				r.lose(t, err, "")
			}
			return // the next poll sees where the task is
		}
		// mcp-go's server answers tasks/result of a cancelled task with an
		// empty result: the status says which it was.
		w, err := r.get(r.m.ctx, s, t)
		if err == nil && r.observe(t, w) {
			_ = r.save(t)
		}
		if err == nil && w.Status == TaskCancelled {
			r.end(t, TaskCancelled, nil, t.taskError(ErrTaskCancelled, nil, w.Message), "")
			return
		}
		r.end(t, TaskCompleted, res, nil, "")
	})
	if !started {
		t.mu.Lock()
		t.waiting = false
		t.mu.Unlock()
	}
}

// answer answers, with the host's handlers, the input requests a task of
// the extension waits for that were not answered yet, and sends the
// answers (tasks/update). A request the host cannot answer (no handler for
// it, or the handler failed) fails the task, which the server is asked to
// cancel.
func (r *taskRegistry) answer(ctx context.Context, s *slot, t *Task, inputs mcp.InputRequests) {
	t.mu.Lock()
	todo := mcp.InputRequests{}
	for k, in := range inputs {
		if !t.answered[k] {
			todo[k] = in
		}
	}
	rs := t.requestState
	t.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	_, err := do(ctx, s, request[struct{}]{
		method: methodTasksUpdate, name: t.id, op: "answer task", replay: alwaysReplayable,
		send: func(ctx context.Context, s *slot, c *mcpclient.Client, id string, _ any) (struct{}, error) {
			if err := checkProto(t.proto, c); err != nil {
				return struct{}{}, err
			}
			responses, err := r.fulfil(ctx, s, c, todo)
			if err != nil {
				return struct{}{}, &inputError{err}
			}
			p := taskParams(id, rs)
			p["inputResponses"] = responses
			_, err = r.m.rawCall(ctx, s, c, methodTasksUpdate, p, id, true)
			return struct{}{}, err
		},
	}, nil, r.pollOptions(s), nil)
	var ie *inputError
	switch {
	case errors.As(err, &ie):
		r.end(t, TaskFailed, nil, t.taskError(ErrTaskFailed, ie.err, "the host could not answer the server's request for input"), "")
		r.goSafe(func() {
			cctx, cancel := context.WithTimeout(r.m.ctx, r.m.opts.closeTimeout)
			defer cancel()
			_, _ = do(cctx, s, request[struct{}]{method: string(mcp.MethodTasksCancel), name: t.id,
				op: "cancel " + t.tool + " task", replay: alwaysReplayable, send: t.sendCancel}, nil, nil, nil)
		})
	case err != nil:
		r.pollFailed(ctx, t, err)
	default:
		r.update(t, func() bool {
			for k := range todo {
				t.answered[k] = true
			}
			return true
		}, noEvent, nil)
		_ = r.save(t)
		r.pollSoon(t)
	}
}

// inputError is the failure to answer a server's input request.
type inputError struct{ err error }

func (e *inputError) Error() string { return "answering the server's input request: " + e.err.Error() }

func (e *inputError) Unwrap() error { return e.err }

// onStatus takes in a notifications/tasks/status from l's server: the
// handle is updated at once, its next poll comes an interval from now, or
// at once when the status asks for a request (an outcome to collect, input
// to give). It runs on the transport's goroutine and does no I/O.
func (r *taskRegistry) onStatus(l *lease, n mcp.JSONRPCNotification) {
	if l.ctx.Err() != nil {
		return // from a detached runtime
	}
	raw, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	var probe struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.TaskID == "" {
		return
	}
	t := r.lookup(l.slot.name, probe.TaskID)
	if t == nil {
		return // not a task of this Manager's
	}
	w, err := parseWireTask(t.proto, raw)
	if err != nil {
		r.m.opts.logger.Debug("mcpfleet: a task status notification that does not parse was ignored",
			"server", t.server, "task", t.id, "error", err)
		return
	}
	if r.observe(t, w) {
		r.saveLater(t)
	}
	switch {
	case w.Status == TaskCancelled:
		r.finish(t, TaskCancelled, nil, t.taskError(ErrTaskCancelled, nil, w.Message), "")
		r.saveLater(t)
	case t.proto == protoExt && w.Status == TaskCompleted && len(w.Result) > 0:
		if res, err := parseToolResult(w.Result); err == nil {
			r.finish(t, TaskCompleted, res, nil, "")
			r.saveLater(t)
			return
		}
		r.pollSoon(t)
	case t.proto == protoExt && w.Status == TaskFailed && w.Error != nil:
		r.finish(t, TaskFailed, nil, t.taskError(ErrTaskFailed, w.Error.AsError(), w.Message), "")
		r.saveLater(t)
	case w.Status == TaskWorking:
		t.mu.Lock()
		interval := r.pollInterval(t.interval)
		t.mu.Unlock()
		r.reschedule(t, false, interval)
	default:
		r.pollSoon(t)
	}
}

// taskHeap orders tasks by when their next poll is due.
type taskHeap []*Task

func (h taskHeap) Len() int { return len(h) }

func (h taskHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }

func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *taskHeap) Push(x any) {
	t := x.(*Task)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
