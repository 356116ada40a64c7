package anthropic_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/llm/anthropic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tool params of real servers' tools, byte for byte.
func TestToolsGolden(t *testing.T) {
	f := llmtest.NewCorpusFleet(t, "filesystem", "memory", "mongodb", "notion", "thinking")
	tools, reports := anthropic.ViewTools(f.View())
	if len(tools) != f.View().NumTools() || len(reports) != 0 {
		t.Fatalf("%d tools of %d, reports %v", len(tools), f.View().NumTools(), reports)
	}
	llmtest.Golden(t, "tools.golden.json", llmtest.Indent(t, llmtest.Marshal(t, tools)))

	small := llmtest.NewCorpusFleet(t, "memory")
	deferred, _ := anthropic.DeferredTools(small.View(), anthropic.SearchRegex)
	llmtest.Golden(t, "deferred.golden.json", llmtest.Indent(t, llmtest.Marshal(t, deferred)))
}

// The same catalog gives the same bytes: whatever order the servers were
// published in, and across a reconnect of every server.
func TestToolsStable(t *testing.T) {
	a, _ := anthropic.ViewTools(llmtest.NewCorpusFleet(t, "github", "slack", "memory").View())
	b, _ := anthropic.ViewTools(llmtest.NewCorpusFleet(t, "memory", "slack", "github").View())
	if !bytes.Equal(llmtest.Marshal(t, a), llmtest.Marshal(t, b)) {
		t.Fatal("publish order changed the payload")
	}
	m := llmtest.Fleet(t)
	before, _ := anthropic.ViewTools(m.View())
	llmtest.Reconnect(t, m)
	after, _ := anthropic.ViewTools(m.View())
	if !bytes.Equal(llmtest.Marshal(t, before), llmtest.Marshal(t, after)) {
		t.Fatalf("reconnect changed the payload:\n%s\n%s", llmtest.Marshal(t, before), llmtest.Marshal(t, after))
	}
}

func newClient(p *llmtest.Provider) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(p.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

// list -> the model calls two tools at once (and a failing one and a
// gone one) -> the results go back, through the SDK's own client.
func TestRoundTrip(t *testing.T) {
	m := llmtest.Fleet(t)
	p := llmtest.NewProvider(t, llmtest.ReadFile(t, "response-tool-use.json"), llmtest.ReadFile(t, "response-end.json"))
	c := newClient(p)
	tools, _ := anthropic.ViewTools(m.View())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := anthropic.New(m, llm.WithRunOptions(llm.RunOptions{Now: func() time.Time { return time.Unix(0, 0) }}))
	last, conv, err := a.Converse(ctx, &c, sdk.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: tools,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Weather in Oslo, and photo p1?"))},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last.StopReason != "end_turn" || len(conv) != 4 {
		t.Fatalf("stop %s after %d messages", last.StopReason, len(conv))
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/messages" {
		t.Fatalf("requests %v", reqs)
	}
	llmtest.Golden(t, "roundtrip-request-1.golden.json", llmtest.Indent(t, reqs[0].Body))
	llmtest.Golden(t, "roundtrip-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	second := string(reqs[1].Body)
	for _, want := range []string{`"tool_use_id":"toolu_01"`, `Sunny in Oslo`, `{\"city\":\"Oslo\",\"tempC\":21}`,
		`"media_type":"image/png"`, `"is_error":true`, `quota exceeded`, `server off is turned off`} {
		if !strings.Contains(second, want) {
			t.Errorf("the results sent back lack %s", want)
		}
	}
	if strings.Contains(second, "not called concurrently") {
		t.Error("the two calls did not run at once")
	}
}

// The fleet's own search stands in for Anthropic's: the model searches,
// gets tool_reference blocks for deferred tools, and calls them.
func TestMetaToolsRoundTrip(t *testing.T) {
	m := llmtest.Fleet(t)
	ts := m.NewToolSearch()
	defer ts.Close()
	meta := llm.NewMetaTools(m, ts)
	p := llmtest.NewProvider(t, llmtest.ReadFile(t, "response-search.json"),
		llmtest.ReadFile(t, "response-tool-use.json"), llmtest.ReadFile(t, "response-end.json"))
	c := newClient(p)
	tools, _ := anthropic.MetaTools(m.View(), meta)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := anthropic.New(m, llm.WithMetaTools(meta), llm.WithRunOptions(llm.RunOptions{Now: func() time.Time { return time.Unix(0, 0) }}))
	if _, _, err := a.Converse(ctx, &c, sdk.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 1024, Tools: tools,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Weather in Oslo?"))},
	}, 0); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	llmtest.Golden(t, "meta-request-1.golden.json", llmtest.Indent(t, reqs[0].Body))
	llmtest.Golden(t, "meta-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	if !strings.Contains(string(reqs[1].Body), `{"tool_name":"weather__get_forecast","type":"tool_reference"}`) ||
		!strings.Contains(string(reqs[0].Body), `"defer_loading":true`) {
		t.Fatalf("no tool reference or deferred tool:\n%s", reqs[1].Body)
	}
}

// A host gives Claude every tool of its fleet and lets the adapter answer
// the tool calls.
func Example() {
	m := llmtest.ExampleFleet()
	defer m.Close()
	tools, reports := anthropic.ViewTools(m.View())
	fmt.Println(len(tools), "tools,", len(reports), "schema reports")
	// With a key: client := sdk.NewClient() (ANTHROPIC_API_KEY), then
	// anthropic.New(m).Converse(ctx, &client, params, 0).
	// Output: 0 tools, 0 schema reports
}
