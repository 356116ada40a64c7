// Package toolcorpus loads the tool-search corpus in testdata/toolcorpus:
// the tools/list of real MCP servers (corpus.json, written by the capture
// command beside this package) and sets of queries written by hand:
//
//   - queries.json, the project's first queries, written from what each
//     tool is for (often in the words of its description) and used to tune
//     the index since;
//   - users.json, requests written as users speak them (paraphrases with
//     arguments in them, not the descriptions' words), each labelled with
//     every tool of the corpus that does what it asks;
//   - noanswer.json, requests no tool of the corpus can carry out, for
//     measuring abstention;
//   - heldout.json and heldout-noanswer.json, the held-out set: requests
//     of both kinds written the same way, later, before the third pass of
//     tuning (issue 39), and never tuned on.
//
// The held-out set is the measure of how tuning carries: tuning reads
// queries.json, users.json and noanswer.json (and the MetaTool subset as
// a check), never HeldOut or HeldOutNoAnswer. users.json and
// noanswer.json were once split by Half (a hash of the text) into a
// tuning half and a held-out half; that held-out half was looked at too
// often to stay held out, and both halves are tuning data now. Tuning
// still reads the halves apart, choosing on the first and checking on
// the second. Tests and benchmarks build Views of the corpus, replicated
// across as many servers as they need.
package toolcorpus

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// Server is one captured server.
type Server struct {
	Name    string     `json:"name"`
	Package string     `json:"package"`
	Version string     `json:"version"`
	Tools   []mcp.Tool `json:"tools"`
}

// Query is one labelled query: Want are the qualified names (server__tool)
// of the tools that do what Text asks; finding any of them is right. In
// the files, want is one name or a list of names.
type Query struct {
	Text string   `json:"q"`
	Want []string `json:"want"`
}

// UnmarshalJSON reads want as one name or a list.
func (q *Query) UnmarshalJSON(b []byte) error {
	var raw struct {
		Text string          `json:"q"`
		Want json.RawMessage `json:"want"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	q.Text, q.Want = raw.Text, nil
	var one string
	if json.Unmarshal(raw.Want, &one) == nil {
		q.Want = []string{one}
		return nil
	}
	return json.Unmarshal(raw.Want, &q.Want)
}

// Right reports whether qualified is one of the tools q wants.
func (q Query) Right(qualified string) bool { return slices.Contains(q.Want, qualified) }

// Half is the half of the split a query of users.json or noanswer.json
// falls in.
type Half int

const (
	// Tuning queries are the ones tuning chooses by.
	Tuning Half = iota
	// HeldOut queries were the held-out half until the third pass; tuning
	// now checks on them (the held-out set is HeldOut's file, not this
	// half).
	HeldOut
)

func (h Half) String() string {
	if h == HeldOut {
		return "held-out"
	}
	return "tuning"
}

// HalfOf places a query by its text: the low bit of the FNV-1a hash of
// the text as written. The rule was fixed with the queries, before any
// tuning, and a query keeps its half whatever is added around it.
func HalfOf(text string) Half {
	h := fnv.New32a()
	h.Write([]byte(text))
	return Half(h.Sum32() & 1)
}

// Split returns the queries of one half.
func Split(queries []Query, half Half) []Query {
	var out []Query
	for _, q := range queries {
		if HalfOf(q.Text) == half {
			out = append(out, q)
		}
	}
	return out
}

// SplitTexts returns the texts of one half.
func SplitTexts(texts []string, half Half) []string {
	var out []string
	for _, t := range texts {
		if HalfOf(t) == half {
			out = append(out, t)
		}
	}
	return out
}

// Dir is testdata/toolcorpus of this repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "toolcorpus")
}

// Servers reads corpus.json.
func Servers() ([]Server, error) {
	var c struct {
		Servers []Server `json:"servers"`
	}
	if err := readJSON("corpus.json", &c); err != nil {
		return nil, err
	}
	return c.Servers, nil
}

// Queries reads queries.json, the project's first queries.
func Queries() ([]Query, error) {
	var q []Query
	return q, readJSON("queries.json", &q)
}

// Users reads users.json, the queries written as users speak.
func Users() ([]Query, error) {
	var q []Query
	return q, readJSON("users.json", &q)
}

// NoAnswer reads noanswer.json, the requests no tool of the corpus does.
func NoAnswer() ([]string, error) {
	var q []string
	return q, readJSON("noanswer.json", &q)
}

// HeldOutQueries reads heldout.json, the held-out set's labelled requests:
// measured, never tuned on.
func HeldOutQueries() ([]Query, error) {
	var q []Query
	return q, readJSON("heldout.json", &q)
}

// HeldOutNoAnswer reads heldout-noanswer.json, the held-out set's requests
// no tool of the corpus does.
func HeldOutNoAnswer() ([]string, error) {
	var q []string
	return q, readJSON("heldout-noanswer.json", &q)
}

func readJSON(name string, v any) error {
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("toolcorpus: %s: %w", name, err)
	}
	return nil
}

// Publisher returns a publisher holding the corpus copies times: copy 0
// under the servers' own names, copy i under name + "-" + i. Its View is
// what a Manager with those servers would publish.
func Publisher(servers []Server, copies int) *catalog.Publisher {
	p := catalog.NewPublisher(catalog.Naming{})
	for i := range copies {
		for _, s := range servers {
			p.Publish(Catalog(Name(s.Name, i), 1, s.Tools), "")
		}
	}
	return p
}

// Name is the server name of copy i of server.
func Name(server string, i int) string {
	if i == 0 {
		return server
	}
	return fmt.Sprintf("%s-%d", server, i)
}

// Catalog returns a sealed catalog of tools for server.
func Catalog(server string, gen uint64, tools []mcp.Tool) *catalog.Catalog {
	return (&catalog.Catalog{Server: server, Generation: gen, Tools: tools}).Seal()
}

// View returns the host's View of p.
func View(p *catalog.Publisher) *snapshot.View { return (*snapshot.View)(p.View()) }

// MetaToolServer is the server the MetaTool subset's tools are put under.
const MetaToolServer = "metatool"

// MetaTool reads the subset of the MetaTool benchmark kept in
// testdata/toolcorpus/metatool (see its README): its tools as plain
// definitions, its labelled queries (wanting MetaToolServer's tools by
// qualified name) and its queries that need no tool.
func MetaTool() (tools []mcp.Tool, queries []Query, noAnswer []string, err error) {
	var raw []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := readJSON(filepath.Join("metatool", "tools.json"), &raw); err != nil {
		return nil, nil, nil, err
	}
	for _, t := range raw {
		tools = append(tools, mcp.NewTool(t.Name, mcp.WithDescription(t.Description)))
	}
	if err := readJSON(filepath.Join("metatool", "queries.json"), &queries); err != nil {
		return nil, nil, nil, err
	}
	for i := range queries {
		for j, w := range queries[i].Want {
			queries[i].Want[j] = MetaToolServer + "__" + w
		}
	}
	if err := readJSON(filepath.Join("metatool", "noanswer.json"), &noAnswer); err != nil {
		return nil, nil, nil, err
	}
	return tools, queries, noAnswer, nil
}
