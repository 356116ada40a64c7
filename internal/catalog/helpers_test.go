package catalog

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// tool builds a tool with a string parameter per name in params.
func tool(name, desc string, params ...string) mcp.Tool {
	opts := []mcp.ToolOption{mcp.WithDescription(desc)}
	for _, p := range params {
		opts = append(opts, mcp.WithString(p))
	}
	return mcp.NewTool(name, opts...)
}

// cat builds a sealed catalog of server at gen with tools named names.
func cat(server string, gen uint64, names ...string) *Catalog {
	c := &Catalog{Server: server, Generation: gen, ServerInfo: mcp.Implementation{Name: server, Version: "1"}}
	for _, n := range names {
		c.Tools = append(c.Tools, tool(n, "does "+n, "x"))
	}
	return c.Seal()
}

// qualifiedNames lists the qualified names of v's tools in order.
func qualifiedNames(v *View) []string {
	var out []string
	for _, t := range v.Tools() {
		out = append(out, t.Qualified)
	}
	return out
}

func mustPublish(t *testing.T, p *Publisher, c *Catalog, prefix string) Diff {
	t.Helper()
	d, ok := p.Publish(c, prefix)
	if !ok {
		t.Fatalf("Publish(%s gen %d) ignored", c.Server, c.Generation)
	}
	return d
}
