// Package toolcorpus loads the tool-search corpus in testdata/toolcorpus:
// the tools/list of real MCP servers (corpus.json, written by the capture
// command beside this package) and natural-language queries labelled with
// the tool that answers them (queries.json, written by hand from what each
// tool is for). Tests and benchmarks build Views of it, replicated across
// as many servers as they need.
package toolcorpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

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

// Query is one labelled query: Want is the qualified name (server__tool)
// of the tool that does what Text asks.
type Query struct {
	Text string `json:"q"`
	Want string `json:"want"`
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

// Queries reads queries.json.
func Queries() ([]Query, error) {
	var q []Query
	return q, readJSON("queries.json", &q)
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
