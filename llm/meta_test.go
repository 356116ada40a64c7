package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// notesFleet is a Manager with two in-process servers: notes
// (list_notes, read-only; delete_notes, destructive, counting its calls
// in deleted) and mail (send_mail, counting in sent).
func notesFleet(t *testing.T) (m *client.Manager, ts *client.ToolSearch, deleted, sent *atomic.Int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	deleted, sent = new(atomic.Int32), new(atomic.Int32)
	notes := server.NewMCPServer("notes", "1.0.0")
	notes.AddTool(mcp.NewTool("list_notes", mcp.WithDescription("List the user's notes"), mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("diary, merger plan"), nil
		})
	notes.AddTool(mcp.NewTool("delete_notes", mcp.WithDescription("Delete all of the user's notes"), mcp.WithDestructiveHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			deleted.Add(1)
			return mcp.NewToolResultText("deleted"), nil
		})
	mail := server.NewMCPServer("mail", "1.0.0")
	mail.AddTool(mcp.NewTool("send_mail", mcp.WithDescription("Send a mail about the notes"), mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sent.Add(1)
			return mcp.NewToolResultText("sent"), nil
		})
	m = client.New()
	t.Cleanup(func() { m.Close() })
	for name, srv := range map[string]*server.MCPServer{"notes": notes, "mail": mail} {
		if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
			t.Fatal(err)
		}
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	ts = m.NewToolSearch()
	t.Cleanup(ts.Close)
	return m, ts, deleted, sent
}

// TestCallToolKeepsToTheSearch: call_tool (and, through Run, a direct call
// of a tool the search handed the model) refuses every tool search_tools
// would never offer under its defaults, says why in words the model reads,
// and never reaches the server.
func TestCallToolKeepsToTheSearch(t *testing.T) {
	m, ts, deleted, sent := notesFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func(meta *llm.MetaTools, name string) string {
		t.Helper()
		res, err := meta.Handle(ctx, "call_tool", map[string]any{"name": name})
		if err != nil {
			t.Fatal(err)
		}
		text := llm.Text(llm.Parts(res))
		if !res.IsError {
			return "ok: " + text
		}
		return text
	}

	for _, tc := range []struct {
		name     string
		defaults toolsearch.Query
		tool     string
		why      string // "" when the call goes through
	}{
		{"read-only refuses a destructive tool", toolsearch.Query{Require: toolsearch.HintReadOnly}, "notes__delete_notes", "only tools that promise to be read-only"},
		{"read-only lets a read-only tool through", toolsearch.Query{Require: toolsearch.HintReadOnly}, "notes__list_notes", ""},
		{"servers refuse another server's tool", toolsearch.Query{Servers: []string{"notes"}}, "mail__send_mail", "only the tools of server notes"},
		{"servers let their own tools through", toolsearch.Query{Servers: []string{"notes"}}, "notes__delete_notes", ""},
		{"exclusions refuse the excluded tool", toolsearch.Query{Exclude: []string{"notes__delete_notes"}}, "notes__delete_notes", "excluded"},
		{"exclusions let the rest through", toolsearch.Query{Exclude: []string{"notes__delete_notes"}}, "mail__send_mail", ""},
		{"a name of another case is not the tool", toolsearch.Query{Require: toolsearch.HintReadOnly}, "NOTES__LIST_NOTES", "not a tool search_tools offers"},
		{"no defaults: every tool", toolsearch.Query{}, "notes__delete_notes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := deleted.Load() + sent.Load()
			meta := llm.NewMetaTools(m, ts, llm.WithSearchDefaults(tc.defaults))
			got := call(meta, tc.tool)
			ran := deleted.Load()+sent.Load() != before
			if tc.why == "" {
				if !strings.HasPrefix(got, "ok: ") || (strings.Contains(tc.tool, "delete") || strings.Contains(tc.tool, "send")) && !ran {
					t.Fatalf("call_tool %s: %q, ran %v", tc.tool, got, ran)
				}
				if err := meta.Allowed(tc.tool); err != nil {
					t.Fatalf("Allowed(%s): %v", tc.tool, err)
				}
				return
			}
			if ran || !strings.Contains(got, tc.tool+" is not allowed") || !strings.Contains(got, tc.why) {
				t.Fatalf("call_tool %s: %q (ran %v), want it refused because %q", tc.tool, got, ran, tc.why)
			}
			if err := meta.Allowed(tc.tool); !errors.Is(err, llm.ErrNotAllowed) {
				t.Fatalf("Allowed(%s) = %v, want ErrNotAllowed", tc.tool, err)
			}
			// A model that was handed tools by the search (tool references,
			// a client tool search) calls them by name, through Run: held to
			// the same rule.
			out := llm.Run(ctx, m, []llm.ToolCall{{Name: tc.tool, Arguments: json.RawMessage(`{}`)}}, llm.RunOptions{Meta: meta})
			if ran := deleted.Load()+sent.Load() != before; ran || !errors.Is(out[0].Err, llm.ErrNotAllowed) ||
				!strings.Contains(llm.Text(llm.Parts(out[0].Result)), tc.why) {
				t.Fatalf("direct call of %s through Run: ran %v, %v %+v", tc.tool, ran, out[0].Err, out[0].Result)
			}
		})
	}
	// Without Meta, Run calls what the host gave the model itself.
	before := deleted.Load()
	out := llm.Run(ctx, m, []llm.ToolCall{{Name: "notes__delete_notes"}}, llm.RunOptions{})
	if out[0].Err != nil || deleted.Load() != before+1 {
		t.Fatalf("plain Run: %+v", out[0])
	}
}
