package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A server unused for its IdleTimeout has its runtime closed: the slot goes
// Disconnected, saying why, and keeps its tools in the View; the next call
// starts the server again, on the next generation.
func ExampleServerSpec_idleTimeout() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	events, unsubscribe := m.Events(64)
	defer unsubscribe()
	spec := client.ServerSpec{Dialer: client.InProcess(greeter()), IdleTimeout: 50 * time.Millisecond}
	if err := m.Add(ctx, "greeter", spec); err != nil {
		panic(err)
	}
	for e := range events {
		if e.Kind == client.EventState && e.To == lifecycle.Disconnected {
			fmt.Printf("%s: %s -> %s, idle: %v\n", e.Server, e.From, e.To, errors.Is(e.Err, client.ErrIdleTimeout))
			break
		}
	}
	_, listed := m.View().Tool("greeter__greet")
	fmt.Println("still listed:", listed)

	res, err := m.CallTool(ctx, "greeter", "greet", map[string]any{"name": "again"})
	if err != nil {
		panic(err)
	}
	st, _ := m.Status("greeter")
	fmt.Printf("%s (generation %d)\n", res.Content[0].(mcp.TextContent).Text, st.Generation)
	// Output:
	// greeter: Connected -> Disconnected, idle: true
	// still listed: true
	// hello, again (generation 2)
}
