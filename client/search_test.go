package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

func searchServer(name string, tools ...string) *server.MCPServer {
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
	for _, t := range tools {
		s.AddTool(mcp.NewTool(t, mcp.WithDescription("Does "+t+" things")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
	}
	return s
}

func found(name string) func(*toolsearch.Index) bool {
	return func(x *toolsearch.Index) bool {
		hits, _ := x.Search(toolsearch.Query{Text: name, Mode: toolsearch.ModeExact})
		return len(hits) == 1
	}
}

// The index follows the Manager: a server's tools appear when it
// publishes, change when its list changes, and go when it is disabled.
func TestToolSearchFollowsTheManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	ts := m.NewToolSearch()
	defer ts.Close()
	srv := searchServer("geo", "geocode", "route")
	if err := m.Add(ctx, "geo", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		t.Fatal(err)
	}
	if err := ts.WaitUntil(ctx, found("geo__route")); err != nil {
		t.Fatalf("added tool never indexed: %v", err)
	}
	if hits := ts.SearchTools("geocode things", 1); len(hits) != 1 || hits[0].Qualified != "geo__geocode" {
		t.Fatalf("SearchTools: %v", hits)
	}
	// list_changed: a new tool appears, without a walk of the fleet.
	srv.AddTool(mcp.NewTool("elevation", mcp.WithDescription("Height above sea level")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	if err := ts.WaitUntil(ctx, found("geo__elevation")); err != nil {
		t.Fatalf("tool added by list_changed never indexed: %v", err)
	}
	if err := m.Disable(ctx, "geo"); err != nil {
		t.Fatal(err)
	}
	if err := ts.WaitUntil(ctx, func(x *toolsearch.Index) bool { return x.Len() == 0 }); err != nil {
		t.Fatalf("disabled server's tools still indexed: %v", err)
	}
	sel, err := ts.Select(toolsearch.Budget{Max: 3, Query: toolsearch.Query{Text: "route"}})
	if err != nil || len(sel.Tools) != 0 {
		t.Fatalf("Select after disable: %+v %v", sel, err)
	}
	ts.Sync()
	if ts.Index().Version() != m.View().Version() {
		t.Fatalf("Sync: version %d, View %d", ts.Index().Version(), m.View().Version())
	}
	ts.Close()
	if err := ts.WaitUntil(ctx, found("geo__route")); err != client.ErrClosed {
		t.Fatalf("WaitUntil after Close: %v", err)
	}
}

// A host keeps a search index over its fleet and asks it for the tools of
// a task.
func ExampleManager_NewToolSearch() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	ts := m.NewToolSearch()
	defer ts.Close()
	_ = m.Add(ctx, "geo", client.ServerSpec{Dialer: client.InProcess(searchServer("geo", "geocode", "route"))})
	_ = ts.WaitUntil(ctx, func(x *toolsearch.Index) bool { return x.Len() == 2 })
	for _, h := range ts.SearchTools("plan a route", 1) {
		fmt.Println(h.Qualified)
	}
	// Output: geo__route
}

// countingEmbedder embeds a text as its length and counts the texts.
type countingEmbedder struct {
	mu    sync.Mutex
	texts []string
}

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.texts = append(e.texts, texts...)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

func (e *countingEmbedder) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.texts)
}

// A hybrid ToolSearch embeds the fleet's tools as they come, each text
// once: a reconnect that brings the same tools embeds nothing, a tool
// added by list_changed embeds its own text only.
func TestToolSearchEmbedsChangedTools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	e := &countingEmbedder{}
	ts := m.NewToolSearch(toolsearch.WithHybrid(toolsearch.Hybrid{Embedder: e}))
	defer ts.Close()
	srv := searchServer("geo", "geocode", "route")
	if err := m.Add(ctx, "geo", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		t.Fatal(err)
	}
	embedded := func(n int) func(*toolsearch.Index) bool {
		return func(x *toolsearch.Index) bool { return x.Len() == n && x.Pending() == 0 }
	}
	if err := ts.WaitUntil(ctx, embedded(2)); err != nil {
		t.Fatalf("tools never embedded: %v", err)
	}
	if n := e.count(); n != 2 {
		t.Fatalf("%d texts embedded for 2 tools", n)
	}
	if err := m.Reconnect(ctx, "geo"); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(ctx, "geo", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	srv.AddTool(mcp.NewTool("elevation", mcp.WithDescription("Height above sea level")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	if err := ts.WaitUntil(ctx, embedded(3)); err != nil {
		t.Fatalf("added tool never embedded: %v", err)
	}
	if n := e.count(); n != 3 {
		e.mu.Lock()
		t.Fatalf("%d texts embedded, want 3 (a reconnect embeds nothing, a new tool its own text): %q", n, e.texts)
	}
	if err := ts.EmbedErr(); err != nil {
		t.Fatal(err)
	}
	hits, err := ts.SearchContext(ctx, toolsearch.Query{Text: "elevation", K: 1})
	if err != nil || len(hits) != 1 || hits[0].Qualified != "geo__elevation" || hits[0].Similarity == 0 {
		t.Fatalf("SearchContext: %+v %v", hits, err)
	}
}
