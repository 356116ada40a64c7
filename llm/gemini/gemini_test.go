package gemini_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/llm/gemini"
)

// opencensus (a dependency of genai's Google auth) starts its worker at init.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func TestToolsGolden(t *testing.T) {
	f := llmtest.NewCorpusFleet(t, "filesystem", "memory", "mongodb", "notion", "thinking")
	tools, reports := gemini.Tools(gemini.ViewTools(f.View()))
	if len(tools.FunctionDeclarations) != f.View().NumTools() {
		t.Fatalf("%d declarations of %d tools", len(tools.FunctionDeclarations), f.View().NumTools())
	}
	llmtest.Golden(t, "tools.golden.json", llmtest.Indent(t, llmtest.Marshal(t, tools)))
	var b bytes.Buffer
	for _, r := range reports {
		fmt.Fprintf(&b, "%s: %s\n", r.Tool, r.Conversion)
	}
	llmtest.Golden(t, "conversion-report.golden.txt", b.Bytes())
	js, _ := gemini.Tools(gemini.ViewTools(llmtest.NewCorpusFleet(t, "memory").View()), gemini.WithJSONSchema())
	llmtest.Golden(t, "tools-jsonschema.golden.json", llmtest.Indent(t, llmtest.Marshal(t, js)))
}

func TestToolsStable(t *testing.T) {
	a, _ := gemini.Tools(gemini.ViewTools(llmtest.NewCorpusFleet(t, "github", "slack", "memory").View()))
	b, _ := gemini.Tools(gemini.ViewTools(llmtest.NewCorpusFleet(t, "memory", "slack", "github").View()))
	if !bytes.Equal(llmtest.Marshal(t, a), llmtest.Marshal(t, b)) {
		t.Fatal("publish order changed the payload")
	}
	m := llmtest.Fleet(t)
	before, _ := gemini.Tools(gemini.ViewTools(m.View()))
	llmtest.Reconnect(t, m)
	after, _ := gemini.Tools(gemini.ViewTools(m.View()))
	if !bytes.Equal(llmtest.Marshal(t, before), llmtest.Marshal(t, after)) {
		t.Fatal("reconnect changed the payload")
	}
}

func TestRoundTrip(t *testing.T) {
	m := llmtest.Fleet(t)
	p := llmtest.NewProvider(t, llmtest.ReadFile(t, "response-calls.json"), llmtest.ReadFile(t, "response-end.json"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "test", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: p.URL}})
	if err != nil {
		t.Fatal(err)
	}
	tools, _ := gemini.Tools(gemini.ViewTools(m.View()))
	a := gemini.New(m, llm.WithRunOptions(llm.RunOptions{Now: func() time.Time { return time.Unix(0, 0) }}))
	last, conv, err := a.Converse(ctx, c, "gemini-2.5-flash", genai.Text("Weather in Oslo, and photo p1?"),
		&genai.GenerateContentConfig{Tools: []*genai.Tool{tools}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last.Text() == "" || len(conv) != 4 {
		t.Fatalf("final %q after %d contents", last.Text(), len(conv))
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Fatalf("requests %v", reqs)
	}
	llmtest.Golden(t, "roundtrip-request-1.golden.json", llmtest.Indent(t, reqs[0].Body))
	llmtest.Golden(t, "roundtrip-request-2.golden.json", llmtest.Indent(t, reqs[1].Body))
	body := string(reqs[1].Body)
	for _, want := range []string{`"id":"fc1"`, `Sunny in Oslo`, `"structuredContent":{"city":"Oslo","tempC":21}`,
		`"inlineData":{"data":"iVBOR`, `"error":"quota exceeded"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the results sent back lack %s", want)
		}
	}
	if strings.Contains(body, "not called concurrently") {
		t.Error("the two calls did not run at once")
	}
}

// A host declares the fleet's tools for Gemini.
func Example() {
	m := llmtest.ExampleFleet()
	defer m.Close()
	tools, _ := gemini.Tools(gemini.ViewTools(m.View()))
	fmt.Println(len(tools.FunctionDeclarations), "declarations")
	// Output: 0 declarations
}
