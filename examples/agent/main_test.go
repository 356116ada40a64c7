package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// The agent loop of each provider, against a stand-in of its API that
// replays a turn with two concurrent tool calls and a final answer.
func TestAgent(t *testing.T) {
	for _, tc := range []struct{ provider, base, answer string }{
		{"anthropic", "", "It is sunny in Oslo, and here is photo p1."},
		{"openai", "/v1", "It is sunny in Oslo; here is photo p1."},
		{"gemini", "", "It is sunny in Oslo; here is photo p1."},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			m := llmtest.Fleet(t)
			p := llmtest.NewProvider(t, llmtest.ReadFile(t, tc.provider+"-1.json"), llmtest.ReadFile(t, tc.provider+"-2.json"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			err := Run(ctx, m, Options{Provider: tc.provider, Prompt: "What is the weather in Oslo, and show me photo p1",
				Tools: "budget", Max: 5, Turns: 4, BaseURL: p.URL + tc.base, APIKey: "test"}, &out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.answer) || len(p.Requests()) != 2 {
				t.Fatalf("output %q after %d requests", out.String(), len(p.Requests()))
			}
			if strings.Contains(string(p.Requests()[1].Body), "not called concurrently") {
				t.Fatal("the tool calls did not run at once")
			}
		})
	}
}

// calculator is an in-process MCP server named like the Go SDK's
// everything example: add among n tools whose words are not a prompt's.
func calculator(t *testing.T, name string, n int) *client.Manager {
	t.Helper()
	s := server.NewMCPServer(name, "1.0.0")
	answer := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("5"), nil
	}
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Adds two numbers"), mcp.WithNumber("a"), mcp.WithNumber("b")), answer)
	for i := 1; i < n; i++ {
		letter := string(rune('a' + i))
		s.AddTool(mcp.NewTool("tool_"+letter, mcp.WithDescription("Does the thing called "+letter)), answer)
	}
	m := client.New()
	t.Cleanup(func() { m.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcess(s)}); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs the agent against a stand-in of provider that answers at once,
// and returns what it printed and the request the model got.
func run(t *testing.T, m *client.Manager, provider, base string, o Options) (string, string) {
	t.Helper()
	p := llmtest.NewProvider(t, llmtest.ReadFile(t, provider+"-2.json"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o.Provider, o.BaseURL, o.APIKey, o.Turns = provider, p.URL+base, "test", 2
	var out bytes.Buffer
	if err := Run(ctx, m, o, &out); err != nil {
		t.Fatal(err)
	}
	if len(p.Requests()) != 1 {
		t.Fatalf("%d requests", len(p.Requests()))
	}
	return out.String(), string(p.Requests()[0].Body)
}

// TestBudgetOffersWhatFits: the default budget offers the whole catalog
// when it fits (what is 2+3 names no tool, and add must be offered), and
// past it the prompt's matches, the rest filled one of each server in
// turn; what it printed is what the model got.
func TestBudgetOffersWhatFits(t *testing.T) {
	m := calculator(t, "goeverything", 15)
	out, body := run(t, m, "anthropic", "", Options{Prompt: "what is 2+3", Tools: "budget", Max: 20})
	if !strings.HasPrefix(out, "15 of 15 tools offered (budget of 20") || !strings.Contains(body, `"goeverything__add"`) {
		t.Fatalf("printed %q; the model got add: %v", out, strings.Contains(body, "goeverything__add"))
	}
	out, body = run(t, m, "anthropic", "", Options{Prompt: "what is 2+3", Tools: "budget", Max: 5})
	if !strings.HasPrefix(out, "5 of 15 tools offered (budget of 5: 0 found for the prompt)") || strings.Count(body, `"name":"goeverything__`) != 5 {
		t.Fatalf("over the budget: printed %q, %d tools sent", out, strings.Count(body, `"name":"goeverything__`))
	}
	out, body = run(t, m, "anthropic", "", Options{Prompt: "add two numbers", Tools: "budget", Max: 5})
	if !strings.HasPrefix(out, "5 of 15 tools offered (budget of 5: 1 found for the prompt)") || !strings.Contains(body, `"goeverything__add"`) {
		t.Fatalf("a prompt that finds add: printed %q", out)
	}
}

// TestFillSpreadsServers: what fills a budget comes one of each server in
// turn, so that one large server does not take it all.
func TestFillSpreadsServers(t *testing.T) {
	a, b := calculator(t, "a", 10), calculator(t, "b", 10)
	var all []snapshot.Tool
	for _, m := range []*client.Manager{a, b} {
		for tool := range m.View().Tools() {
			all = append(all, tool)
		}
	}
	got := fill(nil, all, 4)
	servers := map[string]int{}
	for _, tool := range got {
		servers[tool.Server()]++
	}
	if len(got) != 4 || servers["a"] != 2 || servers["b"] != 2 {
		t.Fatalf("filled %d: %v", len(got), servers)
	}
}

// TestMetaSaysWhatItOffers: -tools meta prints what the model was given,
// which is what its doc says for each provider: Gemini two meta-tools and
// nothing else; Anthropic search_tools with every tool deferred.
func TestMetaSaysWhatItOffers(t *testing.T) {
	m := calculator(t, "goeverything", 15)
	out, body := run(t, m, "gemini", "", Options{Prompt: "what is 2+3", Tools: "meta"})
	if !strings.HasPrefix(out, "2 tools offered in place of 15 (meta): search_tools, call_tool") ||
		!strings.Contains(body, `"search_tools"`) || strings.Contains(body, "goeverything__") {
		t.Fatalf("gemini: printed %q\n%s", out, body)
	}
	out, body = run(t, m, "anthropic", "", Options{Prompt: "what is 2+3", Tools: "meta"})
	if !strings.HasPrefix(out, "1 tool offered (search_tools) and 15 deferred") || strings.Count(body, `"defer_loading":true`) != 15 {
		t.Fatalf("anthropic: printed %q, %d deferred", out, strings.Count(body, `"defer_loading":true`))
	}
}
