package toolsearch

import (
	"bufio"
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// wordVecs is an Embedder of averaged word vectors, for an experiment.
type wordVecs struct {
	vec  map[string][]float32
	rank map[string]int
	stop map[string]bool
	a    float64
}

func loadWordVecs(t testing.TB, path string) *wordVecs {
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no vectors at %s: go run ./internal/testkit/embeddings -common 50000 -dump %s", path, path)
	}
	defer f.Close()
	w := &wordVecs{vec: map[string][]float32{}, rank: map[string]int{}, stop: DefaultVocabulary().stop, a: 1e-3}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		v := make([]float32, len(fs)-1)
		for i, s := range fs[1:] {
			x, _ := strconv.ParseFloat(s, 32)
			v[i] = float32(x)
		}
		w.rank[fs[0]] = len(w.rank)
		w.vec[fs[0]] = v
	}
	return w
}

func splitWords(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		rs := []rune(f)
		start := 0
		for i := 1; i < len(rs); i++ {
			if unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]) {
				out = append(out, strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		out = append(out, strings.ToLower(string(rs[start:])))
	}
	return out
}

func (w *wordVecs) one(text string) []float32 {
	sum := make([]float32, 100)
	for _, word := range splitWords(text) {
		if w.stop[word] {
			continue
		}
		v, ok := w.vec[word]
		if !ok {
			continue
		}
		p := 1 / (float64(w.rank[word]+1) * 11.4)
		wt := float32(w.a / (w.a + p))
		for i := range sum {
			sum[i] += wt * v[i]
		}
	}
	var n float64
	for _, x := range sum {
		n += float64(x * x)
	}
	if n == 0 {
		sum[0] = 1e-6
	} else {
		for i := range sum {
			sum[i] /= float32(math.Sqrt(n))
		}
	}
	return sum
}

func (w *wordVecs) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = w.one(t)
	}
	return out, nil
}

func (b *third) evalHybrid(w *wordVecs, h Hybrid) (q quality) {
	h.Embedder = w
	x := New(WithHybrid(h))
	x.Sync(b.v)
	if err := x.Embed(context.Background()); err != nil {
		panic(err)
	}
	m := New(WithHybrid(h))
	if err := m.Put("metatool", b.mtTools...); err != nil {
		panic(err)
	}
	if err := m.Embed(context.Background()); err != nil {
		panic(err)
	}
	q[0], q[1], q[2] = scoreSetCtx(x, b.users), scoreSetCtx(x, b.check), scoreSetCtx(x, b.project)
	q[3] = scoreSetCtx(m, b.mtQueries)
	return q
}

func scoreSetCtx(x *Index, queries []toolcorpus.Query) (r [3]float64) {
	for _, q := range queries {
		hits, _ := x.SearchContext(context.Background(), Query{Text: q.Text, K: 10})
		rank := slices.IndexFunc(hits, func(h Hit) bool { return q.Right(h.Qualified) }) + 1
		if rank > 0 {
			r[2] += 1 / float64(rank)
			if rank <= 5 {
				r[1]++
			}
			if rank == 1 {
				r[0]++
			}
		}
	}
	n := float64(len(queries))
	return [3]float64{r[0] / n, r[1] / n, r[2] / n}
}

// TestTuneWordVectors measures averaged word vectors fused with the words.
//
//	TOOLSEARCH_TUNE=1 TOOLSEARCH_VECTORS=/tmp/vecs50k.txt go test -run TestTuneWordVectors -v ./toolsearch/
func TestTuneWordVectors(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	w := loadWordVecs(t, os.Getenv("TOOLSEARCH_VECTORS"))
	b := newThird(t)
	t.Logf("%-24s %s", "words alone", b.eval(nil, nil))
	for _, depth := range []int{20, 50} {
		for _, k := range []float64{10, 60} {
			t.Logf("depth %d rrf k %.0f %-8s %s", depth, k, "", b.evalHybrid(w, Hybrid{Depth: depth, RRFK: k}))
		}
	}
}

// rerankSet reranks the lexical top depth by Match + lambda * similarity.
func rerankSet(x *Index, w *wordVecs, queries []toolcorpus.Query, depth int, lambda float64) (r [3]float64) {
	for _, q := range queries {
		hits, _ := x.Search(Query{Text: q.Text, K: depth})
		qv := w.one(q.Text)
		type c struct {
			name string
			s    float64
		}
		var cs []c
		for _, h := range hits {
			d := &x.docs[x.byName[h.Qualified]]
			tv := w.one(embedText(d.server, d.tool.Definition()))
			cs = append(cs, c{h.Qualified, h.Match + lambda*float64(dot(qv, tv))})
		}
		slices.SortStableFunc(cs, func(a, b c) int {
			if a.s > b.s {
				return -1
			}
			if a.s < b.s {
				return 1
			}
			return 0
		})
		rank := slices.IndexFunc(cs, func(h c) bool { return q.Right(h.name) }) + 1
		if rank > 10 {
			rank = 0
		}
		if rank > 0 {
			r[2] += 1 / float64(rank)
			if rank <= 5 {
				r[1]++
			}
			if rank == 1 {
				r[0]++
			}
		}
	}
	n := float64(len(queries))
	return [3]float64{r[0] / n, r[1] / n, r[2] / n}
}

func TestTuneWordVectorRerank(t *testing.T) {
	if os.Getenv("TOOLSEARCH_TUNE") == "" {
		t.Skip("TOOLSEARCH_TUNE=1 runs the search")
	}
	w := loadWordVecs(t, os.Getenv("TOOLSEARCH_VECTORS"))
	b := newThird(t)
	x := New()
	x.Sync(b.v)
	m := New()
	if err := m.Put("metatool", b.mtTools...); err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{10, 30} {
		for _, l := range []float64{0, 0.05, 0.1, 0.2, 0.4} {
			q := quality{rerankSet(x, w, b.users, depth, l), rerankSet(x, w, b.check, depth, l), rerankSet(x, w, b.project, depth, l), rerankSet(m, w, b.mtQueries, depth, l)}
			t.Logf("depth %d lambda %.2f %s", depth, l, q)
		}
	}
}
