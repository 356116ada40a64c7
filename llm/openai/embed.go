package openai

import (
	"context"
	"fmt"

	sdk "github.com/openai/openai-go/v3"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// DefaultEmbeddingModel is the model of an Embedder that names none.
const DefaultEmbeddingModel = sdk.EmbeddingModelTextEmbedding3Small

// Embedder embeds texts with OpenAI's embeddings API, for a hybrid tool
// index (toolsearch.WithHybrid): one request per batch the index hands
// it, the vectors in the order of the texts.
type Embedder struct {
	// Client is the SDK client to call; its options (API key, base URL,
	// retries) apply.
	Client sdk.Client
	// Model is the embedding model. Defaults to DefaultEmbeddingModel.
	Model string
	// Dimensions shortens the vectors to this many (text-embedding-3 and
	// later); zero keeps the model's own.
	Dimensions int
}

var _ toolsearch.Embedder = Embedder{}

// Embed returns one vector per text, in order.
func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := e.Model
	if model == "" {
		model = DefaultEmbeddingModel
	}
	params := sdk.EmbeddingNewParams{
		Model:          model,
		Input:          sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: sdk.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.Dimensions > 0 {
		params.Dimensions = sdk.Int(int64(e.Dimensions))
	}
	res, err := e.Client.Embeddings.New(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: openai: embeddings (%s, %d texts): %w", model, len(texts), err)
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("mcpfleet: openai: embeddings (%s): an embedding for index %d of %d texts", model, d.Index, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			v[i] = float32(f)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("mcpfleet: openai: embeddings (%s): no embedding for text %d of %d", model, i, len(texts))
		}
	}
	return out, nil
}
