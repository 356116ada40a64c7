// Package gosdkserver is an MCP server built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) instead of mcp-go, served over
// stdio by the re-executed test binary. It shows that our transports work
// with a second, independent server implementation, not only with the
// library we also use as a client.
package gosdkserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvServe, when set to any value, makes Main run the server.
const EnvServe = "MCPFLEET_GOSDKSERVER"

// EnvListenDelay, a duration (time.ParseDuration), makes the server take
// that long before it sets up a subscriptions/listen stream: a server slow
// to listen, with which a change made right after a client's Connected
// would be announced to no one if the client did not wait for the
// stream's acknowledgement.
const EnvListenDelay = "MCPFLEET_GOSDKSERVER_LISTEN_DELAY"

// Invocation is how to start the server: the test binary re-executed with
// EnvServe set. Env holds only the variables to set on top of the host
// environment.
type Invocation struct {
	Path string
	Args []string
	Env  map[string]string
}

// Command returns the invocation of the Go SDK server.
func Command() Invocation {
	// -test.run=^$ makes a binary whose TestMain forgot to call Main run no
	// test and exit, instead of recursing into the suite.
	return Invocation{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: map[string]string{
		EnvServe: "1",
		// A -race binary sleeps a second at exit unless told not to.
		"GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0"),
	}}
}

// Build builds the server as a program of its own (cmd/gosdkserver) into
// dir and returns how to start it. The build leaves out the race detector
// even when the test binary has it, which is what a test that starts
// hundreds of servers needs: a child that is the race-enabled test binary
// takes four times the memory (39 MiB resident against 9.5 MiB) and several
// times as long to start. It runs the go command, from the build cache
// after the first time.
func Build(dir string) (Invocation, error) {
	bin := filepath.Join(dir, "gosdkserver")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver/cmd/gosdkserver").CombinedOutput()
	if err != nil {
		return Invocation{}, fmt.Errorf("gosdkserver: go build: %v\n%s", err, out)
	}
	return Invocation{Path: bin}, nil
}

// EchoInput is the argument of the echo tool.
type EchoInput struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

// Main runs the server over stdio and exits if EnvServe is set; otherwise it
// returns at once. Call it first thing in TestMain.
func Main() {
	if _, ok := os.LookupEnv(EnvServe); !ok {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpfleet-gosdkserver", Version: "test"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "echo",
		Description: "Returns its text argument.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	// add_tool adds an echo tool of the given name, which makes the server
	// announce notifications/tools/list_changed: on 2026-07-28 only to a
	// client that listens for it (subscriptions/listen).
	mcp.AddTool(s, &mcp.Tool{
		Name:        "add_tool",
		Description: "Adds an echo tool named by its text argument.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
		mcp.AddTool(s, &mcp.Tool{Name: in.Text, Description: "Returns its text argument."},
			func(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
			})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Text}}}, nil, nil
	})
	if d, err := time.ParseDuration(os.Getenv(EnvListenDelay)); err == nil && d > 0 {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "subscriptions/listen" {
					time.Sleep(d) // the fault: a server slow to set up the stream
				}
				return next(ctx, method, req)
			}
		})
	}
	// Run returns when stdin reaches EOF, which is how a client closes us.
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(os.Stderr, "gosdkserver: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
