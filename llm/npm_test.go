package llm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/toolsearch"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// The meta-tools over the reference TypeScript servers (filesystem and
// memory, pinned in testdata/npm): the model searches in words, gets the
// right tool with its schema, and calls it and another server's tool in
// one turn.
func TestMetaToolsOverNpmServers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := client.New()
	defer m.Close()
	ts := m.NewToolSearch()
	defer ts.Close()
	specs := map[string]*stdio.Spec{
		"fs":     {Command: npmtest.Bin(t, "mcp-server-filesystem"), Args: []string{dir}},
		"memory": {Command: npmtest.Bin(t, "mcp-server-memory"), Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.json")}},
	}
	for name, spec := range specs {
		if err := m.Add(ctx, name, client.ServerSpec{Stdio: spec}); err != nil {
			t.Fatal(err)
		}
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.WaitUntil(ctx, func(x *toolsearch.Index) bool { return x.Len() == m.View().NumTools() && x.Len() > 20 }); err != nil {
		t.Fatal(err)
	}
	meta := llm.NewMetaTools(m, ts)
	out := llm.Run(ctx, m, []llm.ToolCall{{ID: "s", Name: "search_tools", Arguments: json.RawMessage(`{"query":"show me what a text file on disk says","limit":3}`)}},
		llm.RunOptions{Meta: meta})
	found, _ := out[0].Result.StructuredContent.(map[string]any)["tools"].([]llm.FoundTool)
	i := slices.IndexFunc(found, func(f llm.FoundTool) bool { return f.Name == "fs__read_text_file" })
	if i < 0 || found[i].InputSchema["properties"].(map[string]any)["path"] == nil {
		t.Fatalf("search found %+v", found)
	}
	path, _ := json.Marshal(filepath.Join(dir, "notes.txt"))
	out = llm.Run(ctx, m, []llm.ToolCall{
		{ID: "1", Name: "call_tool", Arguments: json.RawMessage(`{"name":"fs__read_text_file","arguments":{"path":` + string(path) + `}}`)},
		{ID: "2", Name: "memory__create_entities", Arguments: json.RawMessage(`{"entities":[{"name":"milk","entityType":"item","observations":["to buy"]}]}`)},
		{ID: "3", Name: "fs__read_text_file", Arguments: json.RawMessage(`{"path":"/etc/passwd"}`)},
	}, llm.RunOptions{Meta: meta})
	if got := llm.Text(llm.Parts(out[0].Result)); out[0].Result.IsError || !strings.Contains(got, "buy milk") {
		t.Fatalf("read through call_tool: %q", got)
	}
	if out[1].Result.IsError || out[1].Err != nil {
		t.Fatalf("create_entities: %v %+v", out[1].Err, out[1].Result)
	}
	// Outside the allowed directory: the server's own error, as a result.
	if !out[2].Result.IsError || out[2].Err != nil {
		t.Fatalf("read outside the allowed directory: %v %+v", out[2].Err, out[2].Result)
	}
}
