package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// greeter is an MCP server in this process, for the examples.
func greeter() *server.MCPServer {
	srv := server.NewMCPServer("greeter", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("greet", mcp.WithString("name")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("hello, " + r.GetString("name", "")), nil
		})
	return srv
}

// An mcp-go server in the host's own process is a server like any other:
// the same states, calls and catalog, with no process or socket.
func ExampleInProcess() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	if err := m.Add(ctx, "greeter", client.ServerSpec{Dialer: client.InProcess(greeter())}); err != nil {
		panic(err)
	}
	res, err := m.CallTool(ctx, "greeter", "greet", map[string]any{"name": "fleet"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output: hello, fleet
}

// Events come in order, one goroutine delivering them; a subscriber that
// falls behind loses events (Event.Dropped says how many) instead of
// stalling the Manager.
func ExampleManager_Events() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	events, unsubscribe := m.Events(64)
	defer unsubscribe()
	if err := m.Add(ctx, "greeter", client.ServerSpec{Dialer: client.InProcess(greeter())}); err != nil {
		panic(err)
	}
	for e := range events {
		if e.Kind != client.EventState {
			continue
		}
		fmt.Printf("%s: %s -> %s (generation %d)\n", e.Server, e.From, e.To, e.Generation)
		if e.To == lifecycle.Connected {
			break
		}
	}
	// Output:
	// greeter: Disabled -> Connecting (generation 0)
	// greeter: Connecting -> Connected (generation 1)
}

// A server reports progress on a long call if the call asks for it;
// WithProgress asks, and hands this call's reports to a callback, in order,
// every one of them before the call returns.
func ExampleWithProgress() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	srv := server.NewMCPServer("indexer", "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("index"),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			const files = 3
			for i := 1; i <= files; i++ {
				// A server reports progress only to a call that sent a token.
				if r.Params.Meta != nil && r.Params.Meta.ProgressToken != nil {
					err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
						"progressToken": r.Params.Meta.ProgressToken,
						"progress":      i,
						"total":         files,
						"message":       fmt.Sprintf("file %d", i),
					})
					if err != nil {
						return nil, err
					}
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("indexed %d files", files)), nil
		})

	m := client.New()
	defer m.Close()
	if err := m.Add(ctx, "indexer", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		panic(err)
	}
	res, err := m.CallTool(ctx, "indexer", "index", nil,
		client.WithProgress(func(n mcp.ProgressNotification) {
			fmt.Printf("%v/%v %s\n", n.Params.Progress, n.Params.Total, n.Params.Message)
		}))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// 1/3 file 1
	// 2/3 file 2
	// 3/3 file 3
	// indexed 3 files
}

// A call that waited for a server in vain says why: the state it was in,
// when the next attempt is due, and the last failure.
func ExampleUnavailableError() {
	m := client.New(
		client.WithTimeouts(client.Timeouts{Ready: 50 * time.Millisecond}),
		client.WithPolicy(lifecycle.Policy{InitialInterval: time.Hour, MaxInterval: time.Hour}),
	)
	defer m.Close()
	down := errors.New("connection refused")
	m.Add(context.Background(), "flaky", client.ServerSpec{
		Dialer: func(context.Context) (transport.Conn, error) { return nil, down },
	})

	_, err := m.CallTool(context.Background(), "flaky", "anything", nil)
	var ue *client.UnavailableError
	if errors.As(err, &ue) {
		fmt.Println("server:", ue.Server)
		fmt.Println("state:", ue.State)
		fmt.Println("is ErrUnavailable:", errors.Is(err, client.ErrUnavailable))
		fmt.Println("cause is ours:", errors.Is(err, down))
	}
	// Output:
	// server: flaky
	// state: Connecting
	// is ErrUnavailable: true
	// cause is ours: true
}

// A host reads the config file it already has, and applies it; applying a
// changed file later touches only the servers whose entries changed.
func ExampleLoadConfig() {
	dir, err := os.MkdirTemp("", "mcpfleet-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mcp.json")
	err = os.WriteFile(path, []byte(`{"mcpServers": {
		"docs": {"url": "http://127.0.0.1:1/mcp", "disabled": true}
	}}`), 0o600)
	if err != nil {
		panic(err)
	}

	cfg, err := client.LoadConfig(path)
	if err != nil {
		panic(err)
	}
	m := client.New()
	defer m.Close()
	res, err := m.Apply(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("apply:", res)
	for _, st := range m.Statuses() {
		fmt.Println(st.Name, st.State)
	}
	// Output:
	// apply: added docs
	// docs Disabled
}

// A server that sends more notifications than its budget allows has the
// rest dropped before they cost the host anything: the host is told in an
// event (at once, then at most once a second), and the server's status
// counts them.
func ExampleLimits_notificationRate() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := server.NewMCPServer("chatty", "1.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("chatter"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for range 50 {
			_ = srv.SendNotificationToClient(ctx, "notifications/resources/updated", map[string]any{"uri": "file:///chatter"})
		}
		return mcp.NewToolResultText("done"), nil
	})
	m := client.New(client.WithLimits(client.Limits{NotificationRate: 5}))
	defer m.Close()
	events, unsubscribe := m.Events(256)
	defer unsubscribe()
	if err := m.Add(ctx, "chatty", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		panic(err)
	}
	if _, err := m.CallTool(ctx, "chatty", "chatter", nil); err != nil {
		panic(err)
	}
	for e := range events {
		if e.Kind == client.EventNotificationsDropped {
			fmt.Println(errors.Is(e.Err, client.ErrNotificationRate))
			fmt.Println(e.Err)
			break
		}
	}
	// Output:
	// true
	// mcpfleet: server "chatty": notifications: over the notification rate: 5 a second (limits.notificationRate = 5, in bursts of 10)
}

// A host that names a state file gets its stdio children ended by the next
// Manager on that file if it is ever killed before it can close them. The
// file lists the children only while they run.
func ExampleWithStateFile() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "mcpfleet-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "children.json")

	// New first ends whatever a crashed predecessor left in the file.
	m := client.New(client.WithStateFile(state))
	fmt.Printf("left by a crashed host: %+v\n", m.OrphanSweep())

	// The server: this test binary, re-executed as an MCP server.
	inv := faultserver.Command(faultserver.ModeNormal)
	if err := m.Add(ctx, "s", client.ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}}); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
		panic(err)
	}
	_, err = os.Stat(state)
	fmt.Println("state file while the child runs:", err == nil)

	if err := m.Close(); err != nil {
		panic(err)
	}
	_, err = os.Stat(state)
	fmt.Println("state file after Close:", errors.Is(err, os.ErrNotExist))
	// Output:
	// left by a crashed host: {Listed:0 Killed:0 Failed:0}
	// state file while the child runs: true
	// state file after Close: true
}
