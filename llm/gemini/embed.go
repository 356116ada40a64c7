package gemini

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// DefaultEmbeddingModel is the model of an Embedder that names none.
const DefaultEmbeddingModel = "gemini-embedding-001"

// Task types of the Gemini embedding API: a tool's text is a document to
// retrieve, a search is a query.
const (
	taskDocument = "RETRIEVAL_DOCUMENT"
	taskQuery    = "RETRIEVAL_QUERY"
)

// Embedder embeds texts with the Gemini API's embedding models, for a
// hybrid tool index (toolsearch.WithHybrid): one batchEmbedContents
// request per batch the index hands it (the API takes 100 texts at most,
// toolsearch.DefaultEmbedBatch), tools as retrieval documents and queries
// (EmbedQuery) as retrieval queries.
type Embedder struct {
	// Client is the SDK client to call.
	Client *genai.Client
	// Model is the embedding model. Defaults to DefaultEmbeddingModel.
	Model string
	// Dimensions shortens the vectors to this many; zero keeps the
	// model's own.
	Dimensions int
}

var _ toolsearch.QueryEmbedder = Embedder{}

// Embed returns one vector per text, in order, embedded as retrieval
// documents.
func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embed(ctx, texts, taskDocument)
}

// EmbedQuery embeds a search's text as a retrieval query.
func (e Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := e.embed(ctx, []string{text}, taskQuery)
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

func (e Embedder) embed(ctx context.Context, texts []string, task string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := e.Model
	if model == "" {
		model = DefaultEmbeddingModel
	}
	contents := make([]*genai.Content, len(texts))
	for i, t := range texts {
		contents[i] = genai.NewContentFromText(t, genai.RoleUser)
	}
	config := &genai.EmbedContentConfig{TaskType: task}
	if e.Dimensions > 0 {
		d := int32(e.Dimensions)
		config.OutputDimensionality = &d
	}
	res, err := e.Client.Models.EmbedContent(ctx, model, contents, config)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: gemini: embed (%s, %d texts): %w", model, len(texts), err)
	}
	if len(res.Embeddings) != len(texts) {
		return nil, fmt.Errorf("mcpfleet: gemini: embed (%s): %d embeddings for %d texts", model, len(res.Embeddings), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, emb := range res.Embeddings {
		if emb == nil || len(emb.Values) == 0 {
			return nil, fmt.Errorf("mcpfleet: gemini: embed (%s): no values for text %d of %d", model, i, len(texts))
		}
		out[i] = emb.Values
	}
	return out, nil
}
