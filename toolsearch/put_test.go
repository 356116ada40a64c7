package toolsearch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// An index filled by Put, without a Manager: its tools are found under the
// names a Manager would give them, a second Put of a server replaces its
// tools, RemoveServer takes them out, and the hits carry the definitions.
func TestPut(t *testing.T) {
	x := New()
	if err := x.Put("github",
		tool("create_issue", "Create a new issue in a GitHub repository"),
		tool("list_commits", "Get list of commits of a branch", mcp.WithReadOnlyHintAnnotation(true)),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Put("slack", tool("post_message", "Post a new message to a Slack channel")); err != nil {
		t.Fatal(err)
	}
	hits := mustSearch(t, x, Query{Text: "report a bug in the repo", K: 1})
	if len(hits) != 1 || hits[0].Qualified != "github__create_issue" || hits[0].Tool.Server() != "github" ||
		hits[0].Tool.Definition().Description != "Create a new issue in a GitHub repository" {
		t.Fatalf("hits %+v", hits)
	}
	if got := names(mustSearch(t, x, Query{Text: "commits", Require: HintReadOnly})); !slices.Equal(got, []string{"github__list_commits"}) {
		t.Errorf("read-only: %v", got)
	}

	// A second Put replaces the server's tools; the other server's stay.
	if err := x.Put("github", tool("create_pull_request", "Create a new pull request")); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 2 {
		t.Errorf("Len %d after the second Put, want 2", x.Len())
	}
	if got := names(mustSearch(t, x, Query{Text: "issue"})); len(got) != 0 {
		t.Errorf("replaced tool still found: %v", got)
	}
	if got := names(mustSearch(t, x, Query{Text: "open a pull request", K: 1})); !slices.Equal(got, []string{"github__create_pull_request"}) {
		t.Errorf("new tool: %v", got)
	}

	if err := x.RemoveServer("github"); err != nil {
		t.Fatal(err)
	}
	if err := x.RemoveServer("nothing"); err != nil {
		t.Fatal(err)
	}
	if got := names(mustSearch(t, x, Query{Text: "message slack pull request", K: -1})); !slices.Equal(got, []string{"slack__post_message"}) {
		t.Errorf("after RemoveServer: %v", got)
	}
	// A server removed and put again starts afresh.
	if err := x.Put("github", tool("create_issue", "Create a new issue")); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 2 {
		t.Errorf("Len %d, want 2", x.Len())
	}
}

// Bad tool lists are refused whole, naming the server and the tool, and
// leave the index as it was.
func TestPutRefusesBadTools(t *testing.T) {
	x := New()
	if err := x.Put("fs", tool("read_file", "Read a file")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		server string
		tools  []mcp.Tool
		want   string
	}{
		{"", []mcp.Tool{tool("a", "")}, "the server has no name"},
		{"fs", []mcp.Tool{tool("write_file", ""), {Description: "nameless"}}, "put fs: tool 1: no name"},
		{"fs", []mcp.Tool{tool("write_file", ""), tool("write_file", "again")}, `put fs: tool "write_file": listed twice`},
	} {
		err := x.Put(c.server, c.tools...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Put(%q): %v, want %q", c.server, err, c.want)
		}
	}
	if got := names(mustSearch(t, x, Query{Text: "file", K: -1})); !slices.Equal(got, []string{"fs__read_file"}) {
		t.Errorf("after refused Puts: %v", got)
	}
}

// An index follows either a View or its own Puts: Sync drops what Put
// gave, and Put on an index that follows a View is refused.
func TestPutOrView(t *testing.T) {
	x := New()
	if err := x.Put("fs", tool("read_file", "Read a file")); err != nil {
		t.Fatal(err)
	}
	f := newFleet()
	f.publish(t, "gh", tool("create_issue", "Create a new issue"))
	x.Sync(f.view())
	if got := names(mustSearch(t, x, Query{Text: "file issue", K: -1})); !slices.Equal(got, []string{"gh__create_issue"}) {
		t.Errorf("after Sync: %v", got)
	}
	if err := x.Put("fs", tool("read_file", "Read a file")); !errors.Is(err, ErrFollowsView) {
		t.Errorf("Put after Sync: %v", err)
	}
	if err := x.RemoveServer("gh"); !errors.Is(err, ErrFollowsView) {
		t.Errorf("RemoveServer after Sync: %v", err)
	}
}
