package toolsearch

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
)

// feats are what an abstention rule may read of one query's search.
type feats struct {
	match     float64 // the top hit's Match
	seenShare float64 // share of the query's words (not values) some tool holds as a word
	topShare  float64 // share of the query's words (not values) the top hit holds (word or related)
	topWord   float64 // share of the query's words (not values) the top hit holds as the word itself
	words     int
	foreign   int // words no tool holds, nor any related word
	unseen    int // words no tool holds
	gap       float64 // top1 score over top2
}

func featsOf(x *Index, text string) (f feats, hits []Hit) {
	hits, _ = x.Search(Query{Text: text, K: 10})
	if len(hits) > 0 {
		f.match = hits[0].Match
		if len(hits) > 1 {
			f.gap = hits[0].Score / hits[1].Score
		}
	}
	terms := x.voc.queryTerms(text, x.synonymWeight, &x.lexWeights, nil, nil, nil)
	var top map[int32]bool
	if len(hits) > 0 {
		d := &x.docs[x.byName[hits[0].Qualified]]
		top = map[int32]bool{}
		for _, dt := range d.terms {
			top[dt.term] = true
		}
	}
	for start := 0; start < len(terms); {
		c := terms[start].concept
		end := start + 1
		for end < len(terms) && terms[end].concept == c {
			end++
		}
		if !terms[start].arg && !terms[start].phrase {
			f.words++
			seen, inTop, wordTop, any := false, false, false, false
			for _, qt := range terms[start:end] {
				tid, ok := x.termID[qt.term]
				if !ok {
					continue
				}
				any = true
				if !qt.synonym {
					seen = true
				}
				if top[tid] {
					inTop = true
					if !qt.synonym {
						wordTop = true
					}
				}
			}
			if seen {
				f.seenShare++
			} else {
				f.unseen++
			}
			if !any {
				f.foreign++
			}
			if inTop {
				f.topShare++
			}
			if wordTop {
				f.topWord++
			}
		}
		start = end
	}
	if f.words > 0 {
		n := float64(f.words)
		f.seenShare /= n
		f.topShare /= n
		f.topWord /= n
	}
	return f, hits
}

func TestDumpAbstention(t *testing.T) {
	out := os.Getenv("TOOLSEARCH_DUMP")
	if out == "" {
		t.Skip()
	}
	b := newThird(t)
	x := New()
	x.Sync(b.v)
	noAnswer, _ := toolcorpus.NoAnswer()
	fh, _ := os.Create(out)
	defer fh.Close()
	write := func(set, text string, right bool, f feats) {
		fmt.Fprintf(fh, "%s\t%v\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%.4f\t%s\t%d\t%d\n", set, right, f.match, f.seenShare, f.topShare, f.topWord, f.words, f.gap, strings.ReplaceAll(text, "\n", " "), f.foreign, f.unseen)
	}
	for name, qs := range map[string][]toolcorpus.Query{"tuning": b.users, "check": b.check} {
		for _, q := range qs {
			f, hits := featsOf(x, q.Text)
			in5 := slices.IndexFunc(hits[:min(5, len(hits))], func(h Hit) bool { return q.Right(h.Qualified) }) >= 0
			write(name, q.Text, in5, f)
		}
	}
	for _, q := range noAnswer {
		f, _ := featsOf(x, q)
		write("none-"+toolcorpus.HalfOf(q).String(), q, false, f)
	}
	m := New()
	if err := m.Put(toolcorpus.MetaToolServer, b.mtTools...); err != nil {
		t.Fatal(err)
	}
	for _, q := range b.mtQueries {
		f, hits := featsOf(m, q.Text)
		in5 := slices.IndexFunc(hits[:min(5, len(hits))], func(h Hit) bool { return q.Right(h.Qualified) }) >= 0
		write("mt", q.Text, in5, f)
	}
	for _, q := range b.mtNone {
		f, _ := featsOf(m, q)
		write("mt-none", q, false, f)
	}
}
