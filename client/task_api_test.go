package client

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/store"
)

// Watch on one handle: what the task is now, then each change, the last
// one terminal, and the channel closed. A watcher that does not read
// still gets the latest (terminal) value, never a stale one, and never
// holds up the task. A handle that ended gives a closed channel.
func TestTaskWatch(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	task, err := e.m.StartTask(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "w"})
	if err != nil {
		t.Fatal(err)
	}
	now, changes, cancel := task.Watch(8)
	defer cancel()
	_, slow, cancelSlow := task.Watch(1) // never read until the end
	defer cancelSlow()
	_, dropped, cancelDropped := task.Watch(1)
	cancelDropped()
	cancelDropped() // twice is safe
	if _, ok := <-dropped; ok {
		t.Fatal("a cancelled watch's channel is open")
	}
	if now.ID != task.ID() || now.Status != TaskWorking {
		t.Fatalf("now %+v", now)
	}
	taskserver.Await(t, e.ctx, ts.Started(), "the job to start")
	ts.Release("w")
	var last TaskInfo
	for info := range changes {
		last = info
	}
	if last.Status != TaskCompleted {
		t.Fatalf("last change %+v, want completed", last)
	}
	var slowLast TaskInfo
	n := 0
	for info := range slow {
		slowLast = info
		n++
	}
	if n != 1 || slowLast.Status != TaskCompleted {
		t.Fatalf("the slow watcher got %d values, the last %+v; want the terminal one alone", n, slowLast)
	}
	ended, closed, cancelEnded := task.Watch(4)
	defer cancelEnded()
	if _, ok := <-closed; ok || ended.Status != TaskCompleted {
		t.Fatalf("Watch of an ended task: %+v, channel open %v", ended, ok)
	}
}

// A call run as a task hands its handle out while it waits
// (WithTaskStarted); the handle is the Manager's (Manager.Task finds it),
// and cancelling it ends the call with ErrTaskCancelled.
func TestTaskHandleOfACall(t *testing.T) {
	ts := taskserver.New()
	defer ts.Close()
	e := newTaskEnv(t, nil)
	e.add("jobs", ServerSpec{Dialer: ts.Dial})
	handles := make(chan *Task, 1)
	done := make(chan error, 1)
	go func() {
		_, err := e.m.CallTool(e.ctx, "jobs", taskserver.ToolWork, map[string]any{"job": "h"},
			WithTask(), WithTaskStarted(func(t *Task) { handles <- t }))
		done <- err
	}()
	var task *Task
	select {
	case task = <-handles:
	case <-e.ctx.Done():
		t.Fatal("no handle")
	}
	if got, err := e.m.Task("jobs", task.ID()); err != nil || got != task {
		t.Fatalf("Manager.Task = %v, %v", got, err)
	}
	if _, err := e.m.Task("jobs", "no-such-task"); !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), "no-such-task") {
		t.Fatalf("Manager.Task of an unknown id: %v", err)
	}
	if err := task.Cancel(e.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrTaskCancelled) {
			t.Fatalf("the call: %v, want ErrTaskCancelled", err)
		}
	case <-e.ctx.Done():
		t.Fatal("the call did not end")
	}
	ts.Release("h")
}

// The default task store (the user's cache directory, under the client
// name) is one Manager's at a time: a second Manager of the same name, in
// this process or another, keeps its tasks in memory and says so, naming
// the store; once the first closes, the next one gets it.
func TestDefaultTaskStoreLocked(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache) // Linux, the BSDs
	t.Setenv("HOME", cache)           // darwin: ~/Library/Caches
	t.Setenv("LocalAppData", cache)   // Windows
	info := WithClientInfo(mcp.Implementation{Name: "lock-test", Version: "1"})
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	first := New(info, WithTimeouts(Timeouts{IdleProbe: -1}))
	fs, ok := first.tasks.store.(*store.FileTaskStore)
	if !ok {
		t.Fatalf("first Manager's store is %T, want the file store", first.tasks.store)
	}
	second := New(info, WithTimeouts(Timeouts{IdleProbe: -1}), WithLogger(logger))
	if _, ok := second.tasks.store.(*store.MemoryTaskStore); !ok {
		t.Fatalf("second Manager's store is %T, want a memory store of its own", second.tasks.store)
	}
	if out := logs.String(); !strings.Contains(out, fs.Dir()) || !strings.Contains(out, store.ErrLocked.Error()) {
		t.Fatalf("the second Manager said %q, want the store's directory and why", out)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := New(info, WithTimeouts(Timeouts{IdleProbe: -1}))
	defer third.Close()
	if got, ok := third.tasks.store.(*store.FileTaskStore); !ok || got.Dir() != fs.Dir() {
		t.Fatalf("after the first closed, the next Manager's store is %T", third.tasks.store)
	}
	if _, err := os.Stat(filepath.Join(fs.Dir(), ".lock")); err != nil {
		t.Fatal(err)
	}
}
