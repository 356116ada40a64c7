package toolsearch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

func tool(name, desc string, opts ...mcp.ToolOption) mcp.Tool {
	return mcp.NewTool(name, append([]mcp.ToolOption{mcp.WithDescription(desc)}, opts...)...)
}

// fleet is a publisher and the host's view of it.
type fleet struct {
	p    *catalog.Publisher
	gens map[string]uint64
}

func newFleet() *fleet {
	return &fleet{p: catalog.NewPublisher(catalog.Naming{}), gens: map[string]uint64{}}
}

func (f *fleet) publish(t testing.TB, server string, tools ...mcp.Tool) snapshot.Diff {
	t.Helper()
	f.gens[server]++
	d, ok := f.p.Publish((&catalog.Catalog{Server: server, Generation: f.gens[server], Tools: tools}).Seal(), "")
	if !ok {
		t.Fatalf("publish %s ignored", server)
	}
	return snapshot.Diff{Server: d.Server, Added: d.Added, Removed: d.Removed, Changed: d.Changed, Promoted: quarantines(d.Promoted)}
}

func (f *fleet) unpublish(t testing.TB, server string) snapshot.Diff {
	t.Helper()
	d, ok := f.p.Unpublish(server, f.gens[server])
	if !ok {
		t.Fatalf("unpublish %s ignored", server)
	}
	return snapshot.Diff{Server: d.Server, Removed: d.Removed, Promoted: quarantines(d.Promoted)}
}

func quarantines(in []catalog.Quarantine) []snapshot.Quarantine {
	var out []snapshot.Quarantine
	for _, q := range in {
		out = append(out, snapshot.Quarantine(q))
	}
	return out
}

func (f *fleet) view() *snapshot.View { return (*snapshot.View)(f.p.View()) }

func names(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Qualified)
	}
	return out
}

func mustSearch(t testing.TB, x *Index, q Query) []Hit {
	t.Helper()
	hits, err := x.Search(q)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func TestTokens(t *testing.T) {
	for in, want := range map[string]string{
		"github__create_pullRequest": "github creat pull request",
		"list-files.v2":              "list fil 2",
		"HTTPServer getURLs":         "http serv get url",
		"Creates a new repository":   "creat new repositor",
		"Deleted the repos":          "delet repositor",
		"searching for issues":       "search issu",
		"k8s pods in a namespace":    "kubernet pod namespac",
	} {
		var got []string
		defaultVocab().tokens(in, func(s string) { got = append(got, s) })
		if g := strings.Join(got, " "); g != want {
			t.Errorf("tokens(%q) = %q, want %q", in, g, want)
		}
	}
	// The forms of a word meet in one term.
	for _, forms := range [][]string{{"create", "creates", "created", "creating"}, {"file", "files"},
		{"stop", "stopped", "stopping", "stops"}, {"query", "queries"}} {
		for _, f := range forms[1:] {
			if stem(f) != stem(forms[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q", f, stem(f), forms[0], stem(forms[0]))
			}
		}
	}
}

func TestSearchRanksByPurpose(t *testing.T) {
	f := newFleet()
	f.publish(t, "gh",
		tool("create_issue", "Create a new issue in a GitHub repository", mcp.WithString("title", mcp.Description("Issue title"))),
		tool("list_issues", "List issues in a GitHub repository with filtering options"),
		tool("create_pull_request", "Create a new pull request in a GitHub repository"),
	)
	f.publish(t, "fs",
		tool("read_file", "Read the complete contents of a file from the file system", mcp.WithReadOnlyHintAnnotation(true)),
		tool("write_file", "Create a new file or completely overwrite an existing file with new content"),
		tool("move_file", "Move or rename files and directories", mcp.WithDestructiveHintAnnotation(false)),
	)
	x := New()
	x.Sync(f.view())
	if x.Len() != 6 {
		t.Fatalf("Len = %d, want 6", x.Len())
	}
	for q, want := range map[string]string{
		"open a PR":                       "gh__create_pull_request",
		"show me the contents of a file":  "fs__read_file",
		"rename a directory":              "fs__move_file",
		"report a bug in the repo":        "gh__create_issue",
		"list the open issues":            "gh__list_issues",
		"overwrite config with new stuff": "fs__write_file",
	} {
		hits := mustSearch(t, x, Query{Text: q, K: 1})
		if len(hits) != 1 || hits[0].Qualified != want {
			t.Errorf("%q: got %v, want %s", q, names(hits), want)
		}
	}
	// Filters.
	if got := names(mustSearch(t, x, Query{Text: "file", K: -1, Require: HintReadOnly})); !slices.Equal(got, []string{"fs__read_file"}) {
		t.Errorf("read-only file tools: %v", got)
	}
	if got := names(mustSearch(t, x, Query{Text: "file", K: -1, Require: HintNonDestructive})); !slices.Equal(got, []string{"fs__move_file", "fs__read_file"}) &&
		!slices.Equal(got, []string{"fs__read_file", "fs__move_file"}) {
		t.Errorf("non-destructive file tools: %v", got)
	}
	// The lexicon relates "create" to "move" (a general verb above one
	// of its senses), so move_file matches too, below write_file.
	if got := mustSearch(t, x, Query{Text: "create", K: -1, Servers: []string{"fs"}}); len(got) == 0 || got[0].Qualified != "fs__write_file" ||
		slices.ContainsFunc(got, func(h Hit) bool { return h.Tool.Server() != "fs" }) {
		t.Errorf("create on fs: %v", names(got))
	}
	if got := names(mustSearch(t, x, Query{Text: "create", K: -1, Exclude: []string{"fs__write_file"}, Servers: []string{"fs"}})); slices.Contains(got, "fs__write_file") {
		t.Errorf("excluded tool found: %v", got)
	}
	// Name modes.
	if got := names(mustSearch(t, x, Query{Text: "GH__LIST_ISSUES", Mode: ModeExact})); !slices.Equal(got, []string{"gh__list_issues"}) {
		t.Errorf("exact qualified: %v", got)
	}
	if got := names(mustSearch(t, x, Query{Text: "read_file", Mode: ModeExact})); !slices.Equal(got, []string{"fs__read_file"}) {
		t.Errorf("exact wire name: %v", got)
	}
	if got := names(mustSearch(t, x, Query{Text: `__create_`, Mode: ModeRegexp, K: -1})); !slices.Equal(got, []string{"gh__create_issue", "gh__create_pull_request"}) {
		t.Errorf("regexp: %v", got)
	}
	if _, err := x.Search(Query{Text: "(", Mode: ModeRegexp}); err == nil {
		t.Error("bad regexp: no error")
	}
	if hits := mustSearch(t, x, Query{Text: "the of and"}); len(hits) != 0 {
		t.Errorf("stop words matched %v", names(hits))
	}
}

// The values of a small enum are words of its parameter: they name the
// modes a tool has. A long enum lists data, and its values are not read.
func TestEnumValues(t *testing.T) {
	x := New()
	if err := x.Put("k8s",
		mcp.NewTool("node_management", mcp.WithDescription("Manage nodes"),
			mcp.WithString("operation", mcp.Enum("cordon", "drain", "uncordon"))),
		mcp.NewTool("set_agent", mcp.WithDescription("Set the agent string"),
			mcp.WithString("device", mcp.Enum("pixel", "iphone", "ipad", "galaxy", "kindle"))),
		mcp.NewTool("list_nodes", mcp.WithDescription("List the nodes")),
	); err != nil {
		t.Fatal(err)
	}
	if hits := mustSearch(t, x, Query{Text: "drain worker-3", K: 1}); len(hits) != 1 || hits[0].Qualified != "k8s__node_management" {
		t.Errorf("drain: %v, want k8s__node_management", names(hits))
	}
	if hits := mustSearch(t, x, Query{Text: "kindle", K: -1}); len(hits) != 0 {
		t.Errorf("kindle: %v, want nothing (a long enum is not read)", names(hits))
	}
}

// A host's vocabulary changes what a query finds: its synonyms, its
// abbreviations and its stop words, in the index it gives them to and in
// no other; SetVocabulary indexes the tools again with new words.
func TestHostVocabulary(t *testing.T) {
	f := newFleet()
	f.publish(t, "gh",
		tool("create_issue", "Create a new issue in a GitHub repository"),
		tool("list_issues", "List issues in a GitHub repository with filtering options"),
	)
	f.publish(t, "infra", tool("plan", "Show the changes Terraform would make to the infrastructure"))
	top := func(x *Index, q string) string {
		t.Helper()
		hits := mustSearch(t, x, Query{Text: q, K: 1})
		if len(hits) == 0 {
			return ""
		}
		return hits[0].Qualified
	}
	plain := New()
	plain.Sync(f.view())
	if got := top(plain, "display the open issues"); got == "gh__list_issues" {
		t.Fatalf("the built-in vocabulary already reads display as list")
	}

	v := DefaultVocabulary()
	if err := v.AddSynonyms("list", "display"); err != nil {
		t.Fatal(err)
	}
	if err := v.AddAbbreviation("TF", "terraform"); err != nil {
		t.Fatal(err)
	}
	if err := v.AddStopWords("issues"); err != nil {
		t.Fatal(err)
	}
	host := New(WithVocabulary(v))
	host.Sync(f.view())
	// The index took a copy: changing v now changes nothing.
	v.RemoveSynonyms("display")
	if got := top(host, "display the open issues"); got != "gh__list_issues" {
		t.Errorf("with list = display: %q", got)
	}
	if got := top(host, "tf"); got != "infra__plan" {
		t.Errorf("with tf = terraform: %q", got)
	}
	if got := top(host, "issues"); got != "" {
		t.Errorf("issues is a stop word and found %q", got)
	}
	if got := top(plain, "display the open issues"); got == "gh__list_issues" {
		t.Errorf("another index's vocabulary changed this one")
	}

	// Words back out, and every tool is read again.
	v.RemoveStopWords("issues")
	v.RemoveAbbreviation("tf")
	host.SetVocabulary(v)
	if got := top(host, "issues"); got == "" {
		t.Errorf("issues is a stop word again after SetVocabulary")
	}
	if got := top(host, "display the open issues"); got == "gh__list_issues" {
		t.Errorf("display is still a synonym after SetVocabulary")
	}
	if got := top(host, "tf"); got != "" {
		t.Errorf("tf is still terraform after SetVocabulary: %q", got)
	}
	if host.Len() != 3 {
		t.Errorf("after SetVocabulary: %d tools, want 3", host.Len())
	}

	// Words that are not one word are refused, naming the word.
	for _, err := range []error{v.AddSynonyms("sea level", "elevation"), v.AddSynonyms("alone"),
		v.AddAbbreviation("k 8", "kubernetes"), v.AddAbbreviation("k8s", " "), v.AddStopWords("")} {
		if !errors.Is(err, ErrVocabulary) {
			t.Errorf("got %v, want ErrVocabulary", err)
		}
	}
}

// Equal scores go by qualified name, whatever order the tools arrived in.
func TestTiesGoByName(t *testing.T) {
	var want []string
	for _, order := range [][]string{{"c", "a", "b"}, {"b", "c", "a"}} {
		f := newFleet()
		for _, s := range order {
			f.publish(t, s, tool("ping", "Ping the server"))
		}
		x := New()
		x.Sync(f.view())
		got := names(mustSearch(t, x, Query{Text: "ping"}))
		if want == nil {
			want = got
		}
		if !slices.Equal(got, []string{"a__ping", "b__ping", "c__ping"}) || !slices.Equal(got, want) {
			t.Fatalf("order %v: %v", order, got)
		}
	}
}

// An index kept up with Apply answers exactly as one built fresh from the
// same View, through random publishes, changes, removals and collisions.
func TestApplyMatchesFreshIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("create read update delete list search file issue repository page browser click screenshot " +
		"database query table index user message channel image map route weather node pod namespace log commit branch")
	randTool := func(i int) mcp.Tool {
		var d []string
		for range 3 + rng.IntN(8) {
			d = append(d, words[rng.IntN(len(words))])
		}
		return tool(fmt.Sprintf("%s_%s_%d", words[rng.IntN(len(words))], words[rng.IntN(len(words))], i%7), strings.Join(d, " "),
			mcp.WithString(words[rng.IntN(len(words))], mcp.Description(words[rng.IntN(len(words))])))
	}
	f := newFleet()
	x := New()
	published := map[string]bool{}
	for step := range 300 {
		server := fmt.Sprintf("s%d", rng.IntN(8))
		var d snapshot.Diff
		if published[server] && rng.IntN(4) == 0 {
			d = f.unpublish(t, server)
			delete(published, server)
		} else {
			var tools []mcp.Tool
			for i := range rng.IntN(6) {
				tools = append(tools, randTool(i))
			}
			if rng.IntN(3) == 0 {
				// Collide with another server's names through a prefix.
				tools = append(tools, tool("x", "collide"))
			}
			d = f.publish(t, server, tools...)
			published[server] = true
		}
		x.Apply(f.view(), Touched(d)...)
		fresh := New()
		fresh.Sync(f.view())
		if x.Len() != f.view().NumTools() {
			t.Fatalf("step %d: index holds %d tools, View %d", step, x.Len(), f.view().NumTools())
		}
		for _, w := range words[:10] {
			q := Query{Text: w + " " + words[rng.IntN(len(words))], K: 8}
			a, b := mustSearch(t, x, q), mustSearch(t, fresh, q)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("step %d %q:\napplied %v\nfresh   %v", step, q.Text, a, b)
			}
		}
	}
	// A Sync of an index that missed events catches up with the View.
	stale := New()
	stale.Apply(f.view(), "nothing")
	stale.Sync(f.view())
	if stale.Len() != f.view().NumTools() || stale.Version() != f.view().Version() {
		t.Fatalf("Sync: %d tools at version %d, View %d at %d", stale.Len(), stale.Version(), f.view().NumTools(), f.view().Version())
	}
}

// Sync after a republish of the same tools compares and keeps the terms.
func TestSyncKeepsUnchangedTools(t *testing.T) {
	f := newFleet()
	f.publish(t, "a", tool("x", "one"), tool("y", "two"))
	x := New()
	x.Sync(f.view())
	terms := len(x.terms)
	f.publish(t, "a", tool("x", "one"), tool("y", "two changed"))
	x.Sync(f.view())
	if hits := mustSearch(t, x, Query{Text: "changed"}); len(hits) != 1 || hits[0].Qualified != "a__y" {
		t.Fatalf("changed tool not reindexed: %v", names(hits))
	}
	if len(x.terms) != terms+1 {
		t.Fatalf("%d terms, want %d", len(x.terms), terms+1)
	}
	f.unpublish(t, "a")
	x.Sync(f.view())
	if x.Len() != 0 || len(x.termID) != 0 || x.lenSum != [numFields]int64{} {
		t.Fatalf("after unpublish: %d tools, %d terms, lengths %v", x.Len(), len(x.termID), x.lenSum)
	}
}

func TestConcurrentSearchAndApply(t *testing.T) {
	f := newFleet()
	x := New()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := x.Search(Query{Text: "read file"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 200 {
		d := f.publish(t, fmt.Sprintf("s%d", i%5), tool("read_file", fmt.Sprintf("read a file %d", i)), tool(fmt.Sprintf("t%d", i), "other"))
		x.Apply(f.view(), Touched(d)...)
	}
	close(stop)
	wg.Wait()
	if got := len(mustSearch(t, x, Query{Text: "read file", K: -1})); got != 5 {
		t.Fatalf("%d hits, want 5", got)
	}
}

func TestSelect(t *testing.T) {
	f := newFleet()
	f.publish(t, "a", tool("read_file", "read a file"), tool("read_dir", "read a directory of files"), tool("read_link", "read a file link"))
	f.publish(t, "b", tool("file_stat", "stat a file"), tool("time", "what time is it"))
	x := New()
	x.Sync(f.view())
	sel, err := x.Select(Budget{Max: 4, Pinned: []string{"b__time", "gone__x"}, Query: Query{Text: "file"}, PerServer: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range sel.Tools {
		got = append(got, tl.Qualified())
	}
	if !slices.Equal(sel.Pinned, []string{"b__time"}) || !slices.Equal(sel.Missing, []string{"gone__x"}) ||
		len(sel.Found) != 2 || sel.Capped != 2 || len(got) != 3 || !slices.IsSorted(got) {
		t.Fatalf("selection %+v (tools %v)", sel, got)
	}
	// A cap for one server overrides PerServer.
	sel, _ = x.Select(Budget{Max: 10, Query: Query{Text: "file"}, PerServer: 1, ServerCaps: map[string]int{"a": 3}})
	if len(sel.Found) != 4 || sel.Capped != 0 {
		t.Fatalf("with a cap of 3 for a: %+v", sel)
	}
	// Pinned tools beyond Max are reported, not silently dropped.
	sel, _ = x.Select(Budget{Max: 1, Pinned: []string{"a__read_file", "b__time"}})
	if !slices.Equal(sel.Pinned, []string{"a__read_file"}) || !slices.Equal(sel.OverMax, []string{"b__time"}) {
		t.Fatalf("pinned over Max: %+v", sel)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ModeBM25, ModeExact, ModeRegexp} {
		if got, err := ParseMode(strings.ToUpper(m.String())); err != nil || got != m {
			t.Errorf("ParseMode(%s) = %v, %v", m, got, err)
		}
	}
	if m, err := ParseMode(""); err != nil || m != ModeBM25 {
		t.Errorf("ParseMode(\"\") = %v, %v", m, err)
	}
	if _, err := ParseMode("fuzzy"); err == nil || !strings.HasPrefix(err.Error(), "mcpfleet: toolsearch: ") {
		t.Errorf("ParseMode(fuzzy): %v", err)
	}
	if Mode(9).String() != "Mode(9)" {
		t.Error(Mode(9).String())
	}
	x := New()
	if _, err := x.Search(Query{Text: "x", Mode: Mode(9)}); err == nil {
		t.Error("an unknown mode searched")
	}
}
