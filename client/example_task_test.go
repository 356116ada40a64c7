package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
)

// A long tool call as an MCP task: StartTask returns the task's handle as
// soon as the server accepted it, and Wait returns the result once it is
// there. The handle is polled across reconnects and, kept in a TaskStore,
// outlives the Manager: a new Manager on the same store lists it (Tasks)
// and collects it once its server is added.
func ExampleManager_StartTask() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Any server with tasks will do; this one runs in process, and its
	// "work" tool works until its job is released.
	builds := taskserver.New()
	defer builds.Close()
	dir, _ := os.MkdirTemp("", "tasks")
	defer os.RemoveAll(dir)

	m := client.New(client.WithTasks(client.TaskOptions{Store: store.NewFileTaskStore(dir)}))
	defer m.Close()
	_ = m.Add(ctx, "builds", client.ServerSpec{Dialer: builds.Dial})
	if err := m.WaitFor(ctx, "builds", lifecycle.Connected); err != nil {
		fmt.Println(err)
		return
	}

	task, err := m.StartTask(ctx, "builds", "work", map[string]any{"job": "release"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Tool(), task.Status(), len(m.Tasks()))

	builds.Release("release") // the work is done
	res, err := task.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text, len(m.Tasks()))

	// A tool that forbids tasks says so.
	_, err = m.StartTask(ctx, "builds", "forbidden", nil)
	fmt.Println(errors.Is(err, client.ErrTaskUnsupported))
	// Output:
	// work working 1
	// done release 0
	// true
}

// A call run as a task hands its handle out while it waits
// (WithTaskStarted): the host can watch it (Task.Watch), cancel it, or keep
// its id to find it again (Manager.Task), in this Manager or the next one
// on the same store.
func ExampleWithTaskStarted() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	builds := taskserver.New()
	defer builds.Close()

	m := client.New(client.WithTasks(client.TaskOptions{Store: store.NewMemoryTaskStore()}))
	defer m.Close()
	_ = m.Add(ctx, "builds", client.ServerSpec{Dialer: builds.Dial})
	if err := m.WaitFor(ctx, "builds", lifecycle.Connected); err != nil {
		fmt.Println(err)
		return
	}

	watched := make(chan string, 1)
	started := func(t *client.Task) {
		now, changes, _ := t.Watch(4)
		go func() {
			last := now
			for info := range changes { // closed once the outcome is known
				last = info
			}
			watched <- fmt.Sprint(now.Status, " → ", last.Status)
		}()
		same, _ := m.Task("builds", t.ID())
		fmt.Println("started:", same == t)
		builds.Release("nightly")
	}
	res, err := m.CallTool(ctx, "builds", "work", map[string]any{"job": "nightly"},
		client.WithTask(), client.WithTaskStarted(started))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	fmt.Println(<-watched)
	// Output:
	// started: true
	// done nightly
	// working → completed
}
