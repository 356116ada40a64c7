package gateway_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// TestToolsPromptsResources lists and uses every kind of thing the fleet
// offers through the gateway, on both protocol generations: tools under
// qualified names, prompts under qualified names, resources and templates
// under their own URIs with their server named in _meta.
func TestToolsPromptsResources(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{
		"a": {Dialer: client.InProcess(upstream.New("a").MCPServer)},
		"b": {Dialer: client.InProcess(upstream.New("b").MCPServer)},
	})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := testCtx(t)
			c := dial(t, url, p.version)
			names := toolNames(t, c)
			for _, want := range []string{"a__echo", "a__sample", "b__echo", "b__slow"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools %v lack %s", names, want)
				}
			}
			if got := mustCall(t, c, "b__echo", map[string]any{"text": "hi"}); got != "hi" {
				t.Fatalf("b__echo = %q", got)
			}

			prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var pnames []string
			for _, pr := range prompts.Prompts {
				pnames = append(pnames, pr.Name)
				if pr.Meta == nil || pr.Meta.AdditionalFields[gateway.MetaServer] != strings.Split(pr.Name, "__")[0] {
					t.Errorf("prompt %s meta %+v does not name its server", pr.Name, pr.Meta)
				}
			}
			slices.Sort(pnames)
			if !slices.Equal(pnames, []string{"a__greet", "b__greet"}) {
				t.Fatalf("prompts %v", pnames)
			}
			preq := mcp.GetPromptRequest{}
			preq.Params.Name, preq.Params.Arguments = "b__greet", map[string]string{"name": "Ada"}
			pr, err := c.GetPrompt(ctx, preq)
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := pr.Messages[0].Content.(mcp.TextContent); !ok || tc.Text != "Hello, Ada" {
				t.Fatalf("prompt = %+v", pr.Messages)
			}

			resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(resources.Resources) != 2 {
				t.Fatalf("resources %+v", resources.Resources)
			}
			rreq := mcp.ReadResourceRequest{}
			rreq.Params.URI = "mem://b/a"
			rr, err := c.ReadResource(ctx, rreq)
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := rr.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != "A of b" {
				t.Fatalf("read = %+v", rr.Contents)
			}
			rreq.Params.URI = "mem://a/items/7"
			rr, err = c.ReadResource(ctx, rreq)
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := rr.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != "item 7" {
				t.Fatalf("template read = %+v", rr.Contents)
			}
		})
	}
}

// TestErrorsReachTheClient: a call to a server that went away and does
// not come back within the ready timeout is an isError result that says so
// in words a model acts on (llm.Explain); a prompts/get of it, which has
// no result to carry an error, is a JSON-RPC error naming the server.
func TestErrorsReachTheClient(t *testing.T) {
	dialer, up := inProcess(upstream.New("a").MCPServer)
	f := newFleetWith(t, map[string]client.ServerSpec{"a": {Dialer: dialer}},
		[]client.Option{client.WithTimeouts(client.Timeouts{Ready: 100 * time.Millisecond})})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	c := dial(t, url, "")
	ctx := testCtx(t)
	up.SetDialError(errors.New("down for the test"))
	up.Kill(nil)
	if err := f.m.WaitFor(ctx, "a", lifecycle.Reconnecting); err != nil {
		t.Fatal(err)
	}
	text, isErr, err := callText(ctx, c, "a__echo", map[string]any{"text": "x"})
	if err != nil || !isErr || !strings.Contains(text, "server a is reconnecting") {
		t.Fatalf("call of a server away: %q isError=%v err=%v", text, isErr, err)
	}
	preq := mcp.GetPromptRequest{}
	preq.Params.Name, preq.Params.Arguments = "a__greet", map[string]string{"name": "x"}
	if _, err := c.GetPrompt(ctx, preq); err == nil || !strings.Contains(err.Error(), `server "a"`) {
		t.Fatalf("GetPrompt of a server away: %v", err)
	}
	up.SetDialError(nil)
	if err := f.m.WaitFor(ctx, "a", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, c, "a__echo", map[string]any{"text": "back"}); got != "back" {
		t.Fatalf("after the server came back: %q", got)
	}
}
