package gemini_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"google.golang.org/genai"

	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
	"github.com/mcpfleet/mcpfleet/llm/gemini"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

func embedClient(t *testing.T, responses ...string) (*llmtest.Provider, *genai.Client, context.Context) {
	t.Helper()
	var bodies []string
	for _, r := range responses {
		bodies = append(bodies, llmtest.ReadFile(t, r))
	}
	p := llmtest.NewProvider(t, bodies...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "test", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: p.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return p, c, ctx
}

// embedRequest is what batchEmbedContents is sent.
type embedRequest struct {
	Requests []struct {
		Model   string `json:"model"`
		Content struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		TaskType             string `json:"taskType"`
		OutputDimensionality int    `json:"outputDimensionality"`
	} `json:"requests"`
}

// The Embedder sends a batch's texts in one batchEmbedContents request, as
// retrieval documents, and a search's text as a retrieval query; a hybrid
// index built on it finds a tool by meaning.
func TestEmbedder(t *testing.T) {
	p, c, ctx := embedClient(t, "embed-documents.json", "embed-query.json")
	x := toolsearch.New(toolsearch.WithHybrid(toolsearch.Hybrid{Embedder: gemini.Embedder{Client: c, Dimensions: 3}}))
	if err := x.Put("maps",
		mcp.NewTool("maps_elevation", mcp.WithDescription("Get elevation data for locations on the earth")),
		mcp.NewTool("maps_geocode", mcp.WithDescription("Convert an address into geographic coordinates")),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	hits, err := x.SearchContext(ctx, toolsearch.Query{Text: "how high above sea level is Denver", K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Qualified != "maps__maps_elevation" || hits[0].Similarity < 0.9 {
		t.Fatalf("hits: %+v", hits)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1beta/models/gemini-embedding-001:batchEmbedContents" {
		t.Fatalf("requests: %+v", reqs)
	}
	for i, want := range []struct {
		task  string
		texts []string
	}{{"RETRIEVAL_DOCUMENT", []string{"elevation", "geocode"}}, {"RETRIEVAL_QUERY", []string{"Denver"}}} {
		var body embedRequest
		if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Requests) != len(want.texts) {
			t.Fatalf("request %d: %s", i, reqs[i].Body)
		}
		for j, r := range body.Requests {
			if r.TaskType != want.task || r.OutputDimensionality != 3 || r.Model != "models/gemini-embedding-001" ||
				len(r.Content.Parts) != 1 || !strings.Contains(r.Content.Parts[0].Text, want.texts[j]) {
				t.Errorf("request %d, text %d: %s", i, j, reqs[i].Body)
			}
		}
	}
}

// An answer short of a vector, or an API error, is an error naming the
// model.
func TestEmbedderErrors(t *testing.T) {
	_, c, ctx := embedClient(t, "embed-short.json")
	e := gemini.Embedder{Client: c}
	if _, err := e.Embed(ctx, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "1 embeddings for 2 texts") {
		t.Errorf("short answer: %v", err)
	}
	if _, err := e.EmbedQuery(ctx, "a"); err == nil || !strings.Contains(err.Error(), "gemini-embedding-001") {
		t.Errorf("API error: %v", err)
	}
}
