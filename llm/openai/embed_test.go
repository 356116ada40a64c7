package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/llm/openai"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// The Embedder sends the texts of one batch in one request (model,
// dimensions, float encoding) and returns the vectors in the order of the
// texts, whatever order the answer lists them in; a hybrid index built on
// it finds a tool by meaning.
func TestEmbedder(t *testing.T) {
	p, client, ctx := setup(t, "embeddings.json", "embeddings-query.json")
	e := openai.Embedder{Client: client, Dimensions: 3}
	x := toolsearch.New(toolsearch.WithHybrid(toolsearch.Hybrid{Embedder: e}))
	if err := x.Put("maps",
		mcp.NewTool("maps_elevation", mcp.WithDescription("Get elevation data for locations on the earth")),
		mcp.NewTool("maps_geocode", mcp.WithDescription("Convert an address into geographic coordinates")),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Embed(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/embeddings" {
		t.Fatalf("requests: %+v", reqs)
	}
	var body struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		Dimensions     int      `json:"dimensions"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "text-embedding-3-small" || body.Dimensions != 3 || body.EncodingFormat != "float" || len(body.Input) != 2 ||
		!strings.Contains(body.Input[0], "elevation") || !strings.Contains(body.Input[1], "geocode") {
		t.Fatalf("request: %+v", body)
	}
	// The answer listed geocode's vector first: it must land on geocode.
	hits, err := x.SearchContext(ctx, toolsearch.Query{Text: "where on earth is this address", K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Qualified != "maps__maps_geocode" || hits[0].Similarity < 0.9 {
		t.Fatalf("hits: %+v", hits)
	}
}

// An answer short of a vector, or an API error, is an error naming the
// model; nothing is made of it.
func TestEmbedderErrors(t *testing.T) {
	_, client, ctx := setup(t, "embeddings-short.json")
	e := openai.Embedder{Client: client}
	if _, err := e.Embed(ctx, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "no embedding for text 1 of 2") {
		t.Errorf("short answer: %v", err)
	}
	// The stand-in has no more answers: it says so with a 500.
	if _, err := e.Embed(ctx, []string{"a"}); err == nil || !strings.Contains(err.Error(), "text-embedding-3-small") {
		t.Errorf("API error: %v", err)
	}
	if v, err := e.Embed(ctx, nil); err != nil || v != nil {
		t.Errorf("no texts: %v %v", v, err)
	}
}
