package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// A server that runs as a child process and speaks MCP on its stdio: the
// usual "command" of a config file. The Manager owns the child from spawn
// to reap, and starts it again if it dies.
func ExampleManager_Add_stdio() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Any command that speaks MCP on its stdio will do, such as
	// {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}};
	// here this test program plays one, so that the example needs nothing.
	notes := faultserver.Command(faultserver.ModeNormal)

	m := client.New()
	defer m.Close() // ends the child, and reaps it
	err := m.Add(ctx, "notes", client.ServerSpec{Stdio: &stdio.Spec{
		Command: notes.Path, Args: notes.Args, Env: notes.Env}})
	if err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "notes", lifecycle.Connected); err != nil {
		panic(err) // says why: a command not found, a server that exits at start...
	}
	res, err := m.CallTool(ctx, "notes", "echo", map[string]any{"text": "over stdio"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// over stdio
}

// A remote server over streamable HTTP (both protocol generations; Kind
// mcphttp.SSE for the legacy transport). Headers carry static
// credentials; ServerSpec.OAuth does the MCP authorization flow.
func ExampleManager_Add_http() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := httpserver.Listen(httpserver.MCPGo, "127.0.0.1:0") // any MCP endpoint
	if err != nil {
		panic(err)
	}
	defer srv.Stop()

	m := client.New()
	defer m.Close()
	err = m.Add(ctx, "search", client.ServerSpec{HTTP: &mcphttp.Spec{
		URL:     srv.URL(), // http://127.0.0.1:port/mcp
		Headers: map[string]string{"X-Api-Key": "secret, never logged"},
	}})
	if err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "search", lifecycle.Connected); err != nil {
		panic(err)
	}
	res, err := m.Call(ctx, "search__echo", map[string]any{"message": "over HTTP"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// over HTTP
}

// The config file a host already has, applied: Apply adds, removes and
// restarts only what changed, and says what it did; a required server is
// waited for. Call reaches a tool by its qualified name.
func ExampleManager_Apply() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	notes := faultserver.Command(faultserver.ModeNormal)
	file, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"notes":  map[string]any{"command": notes.Path, "args": notes.Args, "env": notes.Env, "required": true},
		"remote": map[string]any{"url": "https://mcp.example.com/mcp", "disabled": true},
	}})
	if err != nil {
		panic(err)
	}
	cfg, err := client.ParseConfig(file) // or client.LoadConfig("mcp.json")
	if err != nil {
		panic(err) // names the server and the field; a syntax error, the line and column
	}

	m := client.New()
	defer m.Close()
	res, err := m.Apply(ctx, cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("apply:", res)
	out, err := m.Call(ctx, "notes__echo", map[string]any{"text": "from the config"})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Content[0].(mcp.TextContent).Text)
	res, err = m.Apply(ctx, cfg) // the same file again: nothing to do
	if err != nil {
		panic(err)
	}
	fmt.Println("again:", res)
	// Output:
	// apply: added notes, remote
	// from the config
	// again: no changes
}

// Watch lists every server's status, then delivers only the events after
// that list, in order: a dashboard built from both is never off by one.
// Here a server is switched off and on while the host watches.
func ExampleManager_Watch() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	notes := faultserver.Command(faultserver.ModeNormal)
	m := client.New()
	defer m.Close()
	spec := client.ServerSpec{Stdio: &stdio.Spec{Command: notes.Path, Args: notes.Args, Env: notes.Env}}
	if err := m.Add(ctx, "notes", spec); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "notes", lifecycle.Connected); err != nil {
		panic(err)
	}

	statuses, _, events, stop := m.Watch(0)
	defer stop()
	for _, st := range statuses {
		fmt.Printf("%s is %s, generation %d\n", st.Name, st.State, st.Generation)
	}
	if err := m.Disable(ctx, "notes"); err != nil {
		panic(err)
	}
	if err := m.Enable(ctx, "notes"); err != nil {
		panic(err)
	}
	for e := range events {
		if e.Kind != client.EventState {
			continue // catalog events, too, come in order
		}
		fmt.Printf("%s: %s -> %s\n", e.Server, e.From, e.To)
		if e.To == lifecycle.Connected {
			break
		}
	}
	// Output:
	// notes is Connected, generation 1
	// notes: Connected -> Disabling
	// notes: Disabling -> Disabled
	// notes: Disabled -> Connecting
	// notes: Connecting -> Connected
}
