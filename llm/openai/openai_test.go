package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func reportText(reports []llm.Report) []byte {
	var b bytes.Buffer
	for _, r := range reports {
		fmt.Fprintf(&b, "%s: strict=%v: %s\n", r.Tool, r.Strict, r.Conversion)
	}
	return b.Bytes()
}

// The tool params of real servers' tools, byte for byte, and what strict
// mode could not take, tool by tool.
func TestToolsGolden(t *testing.T) {
	f := llmtest.NewCorpusFleet(t, "filesystem", "memory", "mongodb", "notion", "thinking")
	tools := openai.ViewTools(f.View())
	chat, reports := openai.ChatTools(tools)
	if len(chat) != len(tools) {
		t.Fatalf("%d chat tools of %d", len(chat), len(tools))
	}
	llmtest.Golden(t, "chat-tools.golden.json", llmtest.Indent(t, llmtest.Marshal(t, chat)))
	llmtest.Golden(t, "conversion-report.golden.txt", reportText(reports))
	resp, _ := openai.ResponsesTools(tools)
	llmtest.Golden(t, "responses-tools.golden.json", llmtest.Indent(t, llmtest.Marshal(t, resp)))
	deferred, _ := openai.ResponsesDeferredTools(llmtest.NewCorpusFleet(t, "memory", "thinking").View())
	llmtest.Golden(t, "responses-deferred.golden.json", llmtest.Indent(t, llmtest.Marshal(t, deferred)))
}

func TestToolsStable(t *testing.T) {
	a, _ := openai.ChatTools(openai.ViewTools(llmtest.NewCorpusFleet(t, "github", "slack", "memory").View()))
	b, _ := openai.ChatTools(openai.ViewTools(llmtest.NewCorpusFleet(t, "memory", "slack", "github").View()))
	if !bytes.Equal(llmtest.Marshal(t, a), llmtest.Marshal(t, b)) {
		t.Fatal("publish order changed the payload")
	}
	m := llmtest.Fleet(t)
	before, _ := openai.ResponsesDeferredTools(m.View())
	llmtest.Reconnect(t, m)
	after, _ := openai.ResponsesDeferredTools(m.View())
	if !bytes.Equal(llmtest.Marshal(t, before), llmtest.Marshal(t, after)) {
		t.Fatal("reconnect changed the payload")
	}
}

func setup(t *testing.T, responses ...string) (*llmtest.Provider, sdk.Client, context.Context) {
	var bodies []string
	for _, r := range responses {
		bodies = append(bodies, llmtest.ReadFile(t, r))
	}
	p := llmtest.NewProvider(t, bodies...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return p, sdk.NewClient(option.WithBaseURL(p.URL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0)), ctx
}

func clock() llm.RunOptions { return llm.RunOptions{Now: func() time.Time { return time.Unix(0, 0) }} }

func checkSent(t *testing.T, body []byte, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("the request lacks %s", w)
		}
	}
	if strings.Contains(string(body), "not called concurrently") {
		t.Error("the two calls did not run at once")
	}
}

func TestChatRoundTrip(t *testing.T) {
	m := llmtest.Fleet(t)
	p, c, ctx := setup(t, "chat-tool-calls.json", "chat-end.json")
	tools, _ := openai.ChatTools(openai.ViewTools(m.View()))
	last, conv, err := openai.New(m, llm.WithRunOptions(clock())).ConverseChat(ctx, &c, sdk.ChatCompletionNewParams{
		Model: "gpt-5", Tools: tools, Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("Weather in Oslo, and photo p1?")},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last.Choices[0].FinishReason != "stop" || len(conv) != 7 {
		t.Fatalf("finish %s after %d messages", last.Choices[0].FinishReason, len(conv))
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("requests %v", reqs)
	}
	llmtest.Golden(t, "chat-request-1.golden.json", llmtest.Indent(t, reqs[0].Body))
	llmtest.Golden(t, "chat-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	checkSent(t, reqs[1].Body, `"tool_call_id":"call_1"`, `Sunny in Oslo`, `[image image/png, 70 bytes, not shown]`,
		`"url":"data:image/png;base64,`, `Error: quota exceeded`, `"strict":true`)
}

func TestResponsesDeferredRoundTrip(t *testing.T) {
	m := llmtest.Fleet(t)
	p, c, ctx := setup(t, "responses-namespaced-calls.json", "responses-end.json")
	tools, _ := openai.ResponsesDeferredTools(m.View())
	last, err := openai.New(m, llm.WithRunOptions(clock())).ConverseResponses(ctx, &c, responses.ResponseNewParams{
		Model: "gpt-5", Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("Weather in Oslo, and photo p1?")},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last.OutputText() == "" {
		t.Fatal("no final text")
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/responses" {
		t.Fatalf("requests %v", reqs)
	}
	llmtest.Golden(t, "responses-deferred-request-1.golden.json", llmtest.Indent(t, reqs[0].Body))
	llmtest.Golden(t, "responses-deferred-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	checkSent(t, reqs[1].Body, `"previous_response_id":"resp_1"`, `"call_id":"call_1"`, `Sunny in Oslo`, `"type":"input_image"`)
	checkSent(t, reqs[0].Body, `"type":"namespace"`, `"defer_loading":true`, `"type":"tool_search"`)
}

func TestResponsesRoundTrip(t *testing.T) {
	m := llmtest.Fleet(t)
	p, c, ctx := setup(t, "responses-calls.json", "responses-end.json")
	tools, _ := openai.ResponsesTools(openai.ViewTools(m.View()))
	if _, err := openai.New(m, llm.WithRunOptions(clock())).ConverseResponses(ctx, &c, responses.ResponseNewParams{
		Model: "gpt-5", Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("Weather in Oslo, and photo p1?")},
	}, 0); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	llmtest.Golden(t, "responses-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	checkSent(t, reqs[1].Body, `Error: server off is turned off`, `"type":"input_image"`, `{\"city\":\"Oslo\",\"tempC\":21}`)
}

// The client-executed tool search: the fleet's index answers it with the
// found tools, which the model then calls.
func TestResponsesClientSearch(t *testing.T) {
	m := llmtest.Fleet(t)
	ts := m.NewToolSearch()
	defer ts.Close()
	meta := llm.NewMetaTools(m, ts)
	p, c, ctx := setup(t, "responses-client-search.json", "responses-end.json")
	if _, err := openai.New(m, llm.WithMetaTools(meta)).ConverseResponses(ctx, &c, responses.ResponseNewParams{
		Model: "gpt-5", Tools: openai.ResponsesClientSearch(meta), Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("Weather in Oslo?")},
	}, 0); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	llmtest.Golden(t, "responses-client-search-request-1.golden.json", llmtest.Indent(t, reqs[0].Body))
	llmtest.Golden(t, "responses-client-search-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	checkSent(t, reqs[1].Body, `"type":"tool_search_output"`, `"call_id":"call_s"`, `"name":"weather__get_forecast"`)
}

// A host gives an OpenAI model the meta-tools instead of the catalog.
func Example() {
	m := llmtest.ExampleFleet()
	defer m.Close()
	ts := m.NewToolSearch()
	defer ts.Close()
	for _, t := range openai.ChatMetaTools(llm.NewMetaTools(m, ts)) {
		fmt.Println(t.GetFunction().Name)
	}
	// Output:
	// search_tools
	// call_tool
}
