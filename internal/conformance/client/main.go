// Command client is the client under test of the MCP conformance suite
// (@modelcontextprotocol/conformance, client scenarios), built on mcpfleet's
// Manager. The suite runs it once per scenario with the scenario's server URL
// as the last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO.
//
// Every request goes through the Manager: the handshake and catalog fetch of
// Add and WaitFor, CallTool, and the Manager's elicitation handler. Scenarios
// that need what the Manager does not offer (OAuth) run the same way and fail;
// internal/conformance/baseline.json lists them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// server is the name the scenario's server is added under.
const server = "conformance"

// timeout bounds a whole scenario; the suite kills the client after 30 s.
const timeout = 20 * time.Second

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client [flags...] <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(scenario, url, logger); err != nil {
		logger.Error("scenario failed", "scenario", scenario, "err", err)
		os.Exit(1)
	}
}

func run(scenario, url string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	m := client.New(
		client.WithLogger(logger),
		client.WithClientInfo(mcp.Implementation{Name: "mcpfleet-conformance", Version: "0.1.0"}),
		client.WithElicitationHandler(acceptDefaults),
		// One dial, no retries: a scenario server that refuses us should
		// fail the scenario at once, not after a backoff schedule.
		client.WithPolicy(lifecycle.Policy{MaxAttempts: 1}),
	)
	defer m.Close()

	if err := connect(ctx, m, url); err != nil {
		return err
	}

	switch scenario {
	case "initialize":
		// Add already ran initialize and tools/list; nothing more is asked.
		return nil
	case "tools_call":
		return call(ctx, m, "add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults":
		return call(ctx, m, "test_client_elicitation_defaults", nil)
	case "sse-retry":
		return call(ctx, m, "test_reconnection", nil)
	default:
		// Auth scenarios and any scenario this client does not know: connect
		// and list tools (done above), then call each tool without arguments.
		for t := range m.View().Tools() {
			if err := call(ctx, m, t.Name(), nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// connect adds the scenario's server and waits until it is Connected, or
// fails as soon as its one dial failed.
func connect(ctx context.Context, m *client.Manager, url string) error {
	events, stop := m.Subscribe(0)
	defer stop()
	if err := m.Add(ctx, server, client.ServerSpec{HTTP: &mcphttp.Spec{URL: url}}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect: %w", ctx.Err())
		case ev := <-events:
			switch ev.To {
			case lifecycle.Connected:
				return nil
			case lifecycle.PermanentlyFailed:
				return fmt.Errorf("connect: %w", ev.Err)
			}
		}
	}
}

// call calls tool on the scenario's server, failing when the server does not
// publish it or answers with a tool error.
//
// args is any, not a map: a nil map in an interface would be sent as
// "arguments": null, which the suite's TypeScript servers reject, while a nil
// interface leaves arguments out.
func call(ctx context.Context, m *client.Manager, tool string, args any) error {
	cat, ok := m.View().Catalog(server)
	if !ok {
		return errors.New("no published catalog")
	}
	found := false
	for _, t := range cat.Tools() {
		found = found || t.Name == tool
	}
	if !found {
		return fmt.Errorf("tool %q not in the catalog", tool)
	}
	res, err := m.CallTool(ctx, server, tool, args)
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	out, _ := json.Marshal(res)
	fmt.Printf("%s: %s\n", tool, out)
	if res.IsError {
		return fmt.Errorf("call %s: tool error", tool)
	}
	return nil
}

// acceptDefaults answers a form elicitation as a user who accepts every
// default the schema offers (SEP-1034): fields with a default get it, the
// others are left out.
func acceptDefaults(_ context.Context, _ string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	raw, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	content := map[string]any{}
	for name, p := range schema.Properties {
		if p.Default != nil {
			content[name] = p.Default
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: content,
	}}, nil
}
