package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
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
