package client

// The state of a task handle: how what the server says of a task changes
// the handle (and makes its events), its outcome, and its record in the
// TaskStore.

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/store"
)

// defaultTaskStore is the store of a Manager made without TaskOptions.Store:
// a FileTaskStore in the user's cache directory, under the host's client
// name, locked for this Manager (store.FileTaskStore.Lock) until it
// closes; unlock releases it. Where there is no cache directory, or the
// store is locked by another Manager (another process of the host, or
// another Manager of this one, with the same client name), the Manager
// keeps its tasks in a MemoryTaskStore of its own, and says so: two
// Managers on one store would both poll, and both deliver, the same tasks.
func defaultTaskStore(m *Manager) (st store.TaskStore, unlock func() error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		m.opts.logger.Warn("mcpfleet: no user cache directory; open tasks are kept in memory only", "error", err)
		return store.NewMemoryTaskStore(), nil
	}
	fs := store.NewFileTaskStore(filepath.Join(dir, "mcpfleet", "tasks", safeName(m.opts.clientInfo.Name)))
	unlock, err = fs.Lock()
	if err != nil {
		m.opts.logger.Warn("mcpfleet: the default task store is not this Manager's; its open tasks are kept in memory only, and do not outlive it (give each Manager a store of its own with WithTasks, or a client name of its own)",
			"error", err)
		return store.NewMemoryTaskStore(), nil
	}
	return fs, unlock
}

// safeName makes name a file name: letters, digits, '.', '-' and '_' stay,
// anything else becomes '_'.
func safeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if s := string(b); s != "" && strings.Trim(s, ".") != "" {
		return s
	}
	return "mcpfleet"
}

// load makes the handles of the tasks in the store, from New. A record it
// cannot use is logged and left in the store.
func (r *taskRegistry) load() {
	ctx, cancel := context.WithTimeout(context.Background(), taskStoreTimeout)
	defer cancel()
	records, err := r.store.LoadTasks(ctx)
	if err != nil {
		r.m.opts.logger.Error("mcpfleet: task store: some records could not be used", "error", err)
	}
	for _, rec := range records {
		t, ok := r.m.taskFromRecord(rec)
		if !ok {
			r.m.opts.logger.Error("mcpfleet: task store: a record of an unknown form was left alone",
				"server", rec.Server, "task", rec.TaskID, "protocol", rec.Protocol, "status", rec.Status)
			continue
		}
		r.mu.Lock()
		r.tasks[taskKey{t.server, t.id}] = t
		if !t.finished {
			t.next = r.m.opts.clock.Now()
			heap.Push(&r.due, t)
			r.startLocked()
		}
		r.mu.Unlock()
	}
}

// collect removes t from the registry and its record from the store, once:
// its outcome was delivered (Wait) or it was forgotten. ctx bounds the
// store's delete, within taskStoreTimeout.
func (r *taskRegistry) collect(ctx context.Context, t *Task) error {
	t.mu.Lock()
	if t.collected {
		t.mu.Unlock()
		return nil
	}
	t.collected = true
	t.mu.Unlock()
	r.mu.Lock()
	if r.tasks[taskKey{t.server, t.id}] == t {
		delete(r.tasks, taskKey{t.server, t.id})
	}
	if t.index >= 0 {
		heap.Remove(&r.due, t.index)
	}
	r.mu.Unlock()
	if t.id == "" {
		return nil // answered at once: never stored
	}
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	t.deleted = true
	ctx, cancel := context.WithTimeout(ctx, taskStoreTimeout)
	defer cancel()
	err := r.store.DeleteTask(ctx, t.server, t.id)
	if err != nil {
		r.m.opts.logger.Error("mcpfleet: task store: could not delete a collected task", "server", t.server, "task", t.id, "error", err)
	}
	return err
}

// save writes what t is now to the store. Saves of one task are ordered:
// the last one writes the latest state.
func (r *taskRegistry) save(t *Task) error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	if t.deleted {
		return nil
	}
	t.mu.Lock()
	rec := t.recordLocked()
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), taskStoreTimeout)
	defer cancel()
	err := r.store.SaveTask(ctx, rec)
	if err != nil {
		r.m.opts.logger.Error("mcpfleet: task store: could not save a task; it is polled all the same, but would not outlive this Manager",
			"server", t.server, "task", t.id, "error", err)
	}
	return err
}

// saveLater saves t in the background: for changes seen where no I/O may
// be done (a notification, on the transport's goroutine).
func (r *taskRegistry) saveLater(t *Task) {
	r.goSafe(func() { _ = r.save(t) })
}

// update runs change on t under its lock (and its slot's, if the server
// is added, so that the event is in order with the slot's), and emits the
// event of t's status if it is one not emitted yet, or of kind force if it
// is not zero; err goes in the event. change reports whether it changed
// anything. A terminal status has its event only once the outcome is
// known.
func (r *taskRegistry) update(t *Task, change func() bool, force EventKind, err error) bool {
	r.m.mu.RLock()
	s := r.m.slots[t.server]
	r.m.mu.RUnlock()
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	t.mu.Lock()
	changed := change()
	if changed || t.finished {
		t.tellLocked()
	}
	kind, due := force, force != noEvent
	if !due && t.status != t.emitted && (!t.status.Terminal() || t.finished) {
		kind, due = taskEventKind(t.status), true
	}
	var e Event
	if due {
		t.emitted = t.status
		info := t.infoLocked()
		e = Event{Kind: kind, Task: &info, Err: err}
		if e.Err == nil && t.finished {
			e.Err = t.err
		}
	}
	t.mu.Unlock()
	if due {
		if s != nil {
			s.emitLocked(e)
		} else {
			e.Time, e.Server = r.m.opts.clock.Now(), t.server
			r.m.bus.publish(e)
		}
	}
	return changed
}

// observe takes in what the server says of t (a poll's answer or a
// notification). It reports whether the record changed.
func (r *taskRegistry) observe(t *Task, w *wireTask) bool {
	return r.update(t, func() bool {
		if t.finished {
			return false
		}
		changed := false
		// A status the server reported cannot go back from terminal: a
		// poll answered before a notification said the task ended must
		// not undo it.
		if w.Status != t.status && !t.status.Terminal() {
			t.status, changed = w.Status, true
		}
		if w.Message != t.message {
			t.message, changed = w.Message, true
		}
		if w.RequestState != t.requestState && (w.RequestState != "" || t.proto == protoExt) {
			t.requestState, changed = w.RequestState, true
		}
		if !w.Created.IsZero() && !w.Created.Equal(t.created) {
			t.created, changed = w.Created, true
		}
		if w.TTL != t.ttl && w.TTL > 0 {
			t.ttl, changed = w.TTL, true
		}
		if w.PollInterval > 0 && w.PollInterval != t.interval {
			t.interval, changed = w.PollInterval, true
		}
		return changed
	}, noEvent, nil)
}

// finish sets t's outcome, once: status st with res or err. It emits the
// terminal event and takes t off the schedule; it reports whether it set
// the outcome, which the caller then saves (end does both), so that the
// store keeps it until a Wait collects it.
func (r *taskRegistry) finish(t *Task, st TaskStatus, res *mcp.CallToolResult, err error, why string) bool {
	changed := r.update(t, func() bool {
		if t.finished {
			return false
		}
		t.finished = true
		t.status, t.result, t.err = st, res, err
		if why != "" {
			t.message = why
		}
		close(t.done)
		return true
	}, noEvent, nil)
	if !changed {
		return false
	}
	r.mu.Lock()
	if t.index >= 0 {
		heap.Remove(&r.due, t.index)
	}
	r.mu.Unlock()
	return true
}

// end is finish, and saves the outcome.
func (r *taskRegistry) end(t *Task, st TaskStatus, res *mcp.CallToolResult, err error, why string) {
	if r.finish(t, st, res, err, why) && t.id != "" {
		_ = r.save(t)
	}
}

// abandon cancels t on its server and forgets it, in the background: the
// call that ran it as a task gave up.
func (r *taskRegistry) abandon(t *Task) {
	r.goSafe(func() {
		ctx, cancel := context.WithTimeout(r.m.ctx, r.m.opts.closeTimeout)
		defer cancel()
		if err := t.Cancel(ctx); err != nil && r.m.ctx.Err() == nil {
			r.m.opts.logger.Info("mcpfleet: could not cancel the task of a call that gave up",
				"server", t.server, "task", t.id, "error", err)
		}
		_ = t.Forget(ctx)
	})
}

// taskError is the outcome error of t: sentinel, with why.
func (t *Task) taskError(sentinel error, cause error, why string) error {
	err := sentinel
	switch {
	case cause != nil && why != "":
		err = fmt.Errorf("%w: %s: %w", sentinel, why, cause)
	case cause != nil:
		err = fmt.Errorf("%w: %w", sentinel, cause)
	case why != "":
		err = fmt.Errorf("%w: %s", sentinel, why)
	}
	return &ServerError{Server: t.server, Op: t.op(), Err: err}
}

// record is what the store keeps of t. Called with t.mu held.
func (t *Task) recordLocked() store.TaskRecord {
	r := store.TaskRecord{
		Server: t.server, TaskID: t.id, Tool: t.tool, Protocol: t.proto.String(),
		Status: string(t.status), StatusMessage: t.message, Started: t.started, Created: t.created,
		TTL: t.ttl, PollInterval: t.interval, RequestState: t.requestState,
		SessionID: t.session, SessionProtocol: t.sessProto, ServerIdentity: t.identity,
	}
	for k := range t.answered {
		r.Answered = append(r.Answered, k)
	}
	slices.Sort(r.Answered)
	if t.finished {
		if t.result != nil {
			r.Result, _ = t.result.MarshalJSON()
		}
		if t.err != nil {
			r.Error = errors.Unwrap(t.err).Error()
		}
	}
	return r
}

// taskFromRecord makes the handle of a stored task. It reports false for a
// record that cannot be a task of this Manager's.
func (m *Manager) taskFromRecord(r store.TaskRecord) (*Task, bool) {
	proto, ok := parseTaskProto(r.Protocol)
	if !ok {
		return nil, false
	}
	st, ok := parseTaskStatus(r.Status)
	if !ok && r.Status != string(TaskLost) {
		return nil, false
	}
	if r.Status == string(TaskLost) {
		st = TaskLost
	}
	t := newTask(m, r.Server, r.Tool, r.TaskID, proto, r.Started)
	t.status, t.message, t.created = st, r.StatusMessage, r.Created
	t.ttl, t.interval, t.requestState = r.TTL, r.PollInterval, r.RequestState
	t.session, t.sessProto, t.identity = r.SessionID, r.SessionProtocol, r.ServerIdentity
	for _, k := range r.Answered {
		t.answered[k] = true
	}
	// A task the server said has ended, whose outcome was not collected
	// yet, is polled for it; one whose outcome was, waits for the host.
	switch {
	case !st.Terminal(),
		st == TaskCompleted && len(r.Result) == 0,
		st == TaskFailed && r.Error == "":
		t.emitted = st
		return t, true
	}
	// An error keeps its sentinel and its message.
	switch st {
	case TaskCompleted:
		res, err := parseToolResult(r.Result)
		if err != nil {
			return nil, false
		}
		t.result = res
	case TaskFailed:
		t.err = t.taskError(ErrTaskFailed, nil, storedWhy(r.Error, ErrTaskFailed))
	case TaskCancelled:
		t.err = t.taskError(ErrTaskCancelled, nil, storedWhy(r.Error, ErrTaskCancelled))
	case TaskLost:
		t.err = t.taskError(ErrTaskLost, nil, storedWhy(r.Error, ErrTaskLost))
	}
	t.finished, t.emitted = true, st
	close(t.done)
	return t, true
}

// storedWhy is what a stored error said after its sentinel.
func storedWhy(msg string, sentinel error) string {
	msg = strings.TrimPrefix(msg, sentinel.Error())
	return strings.TrimPrefix(msg, ": ")
}

func newTask(m *Manager, server, tool, id string, proto taskProto, started time.Time) *Task {
	return &Task{m: m, server: server, tool: tool, id: id, proto: proto, started: started,
		done: make(chan struct{}), status: TaskWorking, answered: map[string]bool{}, index: -1}
}
