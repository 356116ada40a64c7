package stdio

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
)

// TestThirdPartyServers runs servers we did not write, from the pinned npm
// packages and one on the official Go SDK: connect, list, call a tool,
// close, and nothing of theirs is left running.
func TestThirdPartyServers(t *testing.T) {
	tests := []struct {
		name string
		spec func(t *testing.T) Spec
		tool string
		args map[string]any
		want string // a substring of the tool's text output
	}{{
		name: "everything",
		spec: func(t *testing.T) Spec { return Spec{Command: npmtest.Bin(t, "mcp-server-everything")} },
		tool: "echo", args: map[string]any{"message": "hi from mcpfleet"}, want: "hi from mcpfleet",
	}, {
		name: "memory",
		spec: func(t *testing.T) Spec {
			// Its default store is inside node_modules; keep tests out of it.
			return Spec{Command: npmtest.Bin(t, "mcp-server-memory"),
				Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
		},
		tool: "read_graph", args: map[string]any{}, want: "entities",
	}, {
		name: "filesystem",
		spec: func(t *testing.T) Spec {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return Spec{Command: npmtest.Bin(t, "mcp-server-filesystem"), Args: []string{dir}}
		},
		tool: "list_allowed_directories", args: map[string]any{}, want: "/",
	}, {
		name: "sequential-thinking",
		spec: func(t *testing.T) Spec { return Spec{Command: npmtest.Bin(t, "mcp-server-sequential-thinking")} },
		tool: "sequentialthinking",
		args: map[string]any{"thought": "one step", "nextThoughtNeeded": false, "thoughtNumber": 1, "totalThoughts": 1},
		want: "thoughtNumber",
	}, {
		name: "go-sdk",
		spec: func(*testing.T) Spec {
			inv := gosdkserver.Command()
			return Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}
		},
		tool: "echo", args: map[string]any{"text": "hi from mcpfleet"}, want: "hi from mcpfleet",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A real grace: these exit on stdin EOF, but Node takes its time.
			c := dial(t, tt.spec(t), WithCloseGrace(waitBound))
			cl := mustConnect(t, c)
			ctx := testCtx(t, waitBound)
			tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			found := false
			for _, tool := range tools.Tools {
				found = found || tool.Name == tt.tool
			}
			if !found {
				t.Fatalf("ListTools has no %q (%d tools)", tt.tool, len(tools.Tools))
			}
			out, err := callTool(ctx, cl, tt.tool, tt.args)
			if err != nil || !strings.Contains(out, tt.want) {
				t.Fatalf("%s = %q, %v; want it to contain %q", tt.tool, out, err, tt.want)
			}
			start := time.Now()
			if err := c.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			t.Logf("Close took %v", time.Since(start))
			// Each of them exits on stdin EOF, without signals.
			if got := how(c.Err()); got != "exit 0" {
				t.Errorf("ended by %s, want exit 0; Err: %v", got, c.Err())
			}
		})
	}
}
