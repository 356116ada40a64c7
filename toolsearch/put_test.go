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

// Search caps the hits per server, as Select does: with PerServer 1 the
// hits name K different servers, ServerCaps overrides the cap for the
// servers it names, and the caps hold in every mode.
func TestSearchPerServer(t *testing.T) {
	x := New()
	// Server a's tools match best, then b's, then c's.
	for _, p := range []struct {
		server string
		tools  []mcp.Tool
	}{
		{"a", []mcp.Tool{tool("read_file", "Read a file"), tool("read_file_lines", "Read lines of a file"), tool("read_file_head", "Read the head of a file")}},
		{"b", []mcp.Tool{tool("get_file", "Read a file from the disk, the whole of it at once"), tool("tail", "Read the tail of a file, the last lines of it")}},
		{"c", []mcp.Tool{tool("cat", "Read a file and print it on the terminal, as cat does")}},
	} {
		if err := x.Put(p.server, p.tools...); err != nil {
			t.Fatal(err)
		}
	}
	servers := func(hits []Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.Tool.Server())
		}
		return out
	}
	all := mustSearch(t, x, Query{Text: "read file", K: 3})
	if got := servers(all); !slices.Equal(got, []string{"a", "a", "a"}) {
		t.Fatalf("uncapped hits: %v", names(all))
	}
	capped := mustSearch(t, x, Query{Text: "read file", K: 3, PerServer: 1})
	if got := slices.Sorted(slices.Values(servers(capped))); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("PerServer 1: %v", names(capped))
	}
	// The best hit of each server, in score order.
	if got := servers(capped); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("PerServer 1, in score order: %v", names(capped))
	}
	over := mustSearch(t, x, Query{Text: "read file", K: 5, PerServer: 1, ServerCaps: map[string]int{"a": 2}})
	if got := servers(over); !slices.Equal(got, []string{"a", "a", "b", "c"}) {
		t.Errorf("ServerCaps a=2: %v", names(over))
	}
	// ServerCaps 0 lifts the cap for its server.
	if got := names(mustSearch(t, x, Query{Text: `file`, Mode: ModeRegexp, K: -1, PerServer: 1, ServerCaps: map[string]int{"a": 0}})); !slices.Equal(got,
		[]string{"a__read_file", "a__read_file_head", "a__read_file_lines", "b__get_file"}) {
		t.Errorf("regexp with caps: %v", got)
	}
}

// A request no tool does gets weak hits, and none with Abstain; one a
// tool does gets a strong first hit. Match stays within [0, 1], and a
// value the query carries (a name, a number) does not make it weaker.
func TestAbstain(t *testing.T) {
	x := New()
	if err := x.Put("memory",
		tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph"),
		tool("read_graph", "Read the entire knowledge graph"),
	); err != nil {
		t.Fatal(err)
	}
	if err := x.Put("fs", tool("read_file", "Read the complete contents of a file")); err != nil {
		t.Fatal(err)
	}
	weak := mustSearch(t, x, Query{Text: "order a large pepperoni pizza for delivery"})
	if len(weak) > 0 && !weak[0].Weak {
		t.Errorf("pizza: strong hit %+v", weak[0])
	}
	if got := mustSearch(t, x, Query{Text: "order a large pepperoni pizza for delivery", Abstain: true}); len(got) != 0 {
		t.Errorf("pizza with Abstain: %v", names(got))
	}
	for _, q := range []string{"delete the entity", "delete the entity Carol", "read file notes.txt", "read file 42"} {
		hits := mustSearch(t, x, Query{Text: q, Abstain: true})
		if len(hits) == 0 || hits[0].Weak || hits[0].Match <= 0 || hits[0].Match > 1 {
			t.Errorf("%q: %+v", q, hits)
		}
	}
	a := mustSearch(t, x, Query{Text: "delete the entity", K: 1})[0].Match
	b := mustSearch(t, x, Query{Text: "delete the entity Carol", K: 1})[0].Match
	if a != b {
		t.Errorf("a name changed Match: %v without, %v with", a, b)
	}
	if h := mustSearch(t, x, Query{Text: "fs__read_file", Mode: ModeExact}); len(h) != 1 || h[0].Match != 1 || h[0].Weak {
		t.Errorf("exact: %+v", h)
	}
}

// scan tells the values a query carries from the words of what it asks,
// and reads a file name, a URL or an email address as what it is.
func TestScanValues(t *testing.T) {
	for in, want := range map[string]string{
		"forget everything about Carol":     "forget carol*",
		"what's written in config.yaml":     "writ file configur* yaml*",
		"kill pid 4312":                     "kill pid 4312*",
		`repeat back "hello world" please`:  "repeat back hello* world*",
		"make a folder called backups":      "mak fold backup*",
		"fetch https://docs.stripe.com/api": "fetch url doc* strip*",
		"email bob@acme.com the invoice":    "email email bob* acm* com* invoic",
		"Show the PR list":                  "show pull request list",
	} {
		var got []string
		defaultVocab().scan(in, func(term string, arg bool) {
			if arg {
				term += "*"
			}
			got = append(got, term)
		})
		if g := strings.Join(got, " "); g != want {
			t.Errorf("scan(%q) = %q, want %q", in, g, want)
		}
	}
}
