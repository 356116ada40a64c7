package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestToolFilterAllows(t *testing.T) {
	for _, c := range []struct {
		f    ToolFilter
		tool string
		want bool
	}{
		{ToolFilter{}, "anything", true},
		{ToolFilter{Allow: []string{}}, "anything", true}, // an empty allow list allows all
		{ToolFilter{Allow: []string{"read"}}, "read", true},
		{ToolFilter{Allow: []string{"read"}}, "reader", false},
		{ToolFilter{Allow: []string{"read*"}}, "reader", true},
		{ToolFilter{Allow: []string{"get_?"}}, "get_x", true},
		{ToolFilter{Allow: []string{"get_?"}}, "get_xy", false},
		{ToolFilter{Allow: []string{"[rw]*"}}, "write", true},
		{ToolFilter{Allow: []string{"[rw]*"}}, "delete", false},
		{ToolFilter{Allow: []string{`a\*`}}, "a*", true},
		{ToolFilter{Allow: []string{`a\*`}}, "ab", false},
		{ToolFilter{Allow: []string{"*"}}, "fs/read", true}, // a name is a plain string: '*' does not stop at '/'
		{ToolFilter{Allow: []string{"fs/*"}}, "fs/read", true},
		{ToolFilter{Deny: []string{"delete*"}}, "delete/all", false},
		{ToolFilter{Deny: []string{"delete?all"}}, "delete/all", false},
		{ToolFilter{Deny: []string{"*/*"}}, "a/b/c", false},
		{ToolFilter{Deny: []string{"[^a-z]*"}}, "/etc", false},
		{ToolFilter{Deny: []string{"[!a-z]*"}}, "etc", false}, // '!' is a character of the class, as in path.Match
		{ToolFilter{Allow: []string{"get_?"}}, "get_é", true}, // '?' is one character, not one byte
		{ToolFilter{Allow: []string{"*a*b*c"}}, "xaxbxbxc", true},
		{ToolFilter{Allow: []string{"*a*b*c"}}, "xaxbxbxcx", false},
		{ToolFilter{Allow: []string{`[\]]x`}}, "]x", true},
		{ToolFilter{Allow: []string{"[z-a]"}}, "m", false}, // a range out of order matches nothing, as in path.Match
		{ToolFilter{Deny: []string{"delete_*"}}, "delete_repo", false},
		{ToolFilter{Deny: []string{"delete_*"}}, "create_repo", true},
		{ToolFilter{Allow: []string{"*_repo"}, Deny: []string{"delete_*"}}, "delete_repo", false}, // deny wins
		{ToolFilter{Allow: []string{"*_repo"}, Deny: []string{"delete_*"}}, "create_repo", true},
		{ToolFilter{Allow: []string{"*_repo"}, Deny: []string{"delete_*"}}, "list_issues", false},
	} {
		if got := c.f.Allows(c.tool); got != c.want {
			t.Errorf("%v allows %q: %v, want %v", c.f, c.tool, got, c.want)
		}
	}
}

// TestGlobAgreesWithPathMatch: on names without '/', where path.Match has
// nothing special, the filters' globs match what path.Match matches, and
// refuse the patterns it calls malformed.
func TestGlobAgreesWithPathMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab*?[]^!-\\é"
	for range 200_000 {
		p := make([]rune, rng.IntN(7))
		for i := range p {
			p[i] = []rune(alphabet)[rng.IntN(len([]rune(alphabet)))]
		}
		name := make([]rune, rng.IntN(6))
		for i := range name {
			name[i] = []rune("ab-]é")[rng.IntN(5)]
		}
		want, err := path.Match(string(p), string(name))
		if _, perr := path.Match(string(p), ""); perr != nil {
			err = perr // path.Match may stop before it finds the error
		}
		if gerr := checkGlob(string(p)); (gerr != nil) != (err != nil) {
			t.Fatalf("pattern %q: checkGlob %v, path.Match %v", string(p), gerr, err)
		}
		if err != nil {
			continue
		}
		if got := matchGlob(string(p), string(name)); got != want {
			t.Fatalf("%q matches %q: %v, path.Match says %v", string(p), string(name), got, want)
		}
	}
}

func TestToolFilterValidate(t *testing.T) {
	if err := (ToolFilter{Allow: []string{"a", "b*", "c?"}, Deny: []string{"[a-z]x"}}).Validate(); err != nil {
		t.Fatal(err)
	}
	err := ToolFilter{Allow: []string{"ok", ""}, Deny: []string{"fine", "[a"}}.Validate()
	for _, want := range []string{"allow[1]: empty entry", `deny[1]: invalid pattern "[a"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to say %q", err, want)
		}
	}
}

// filterServer is an in-process mcp-go server that counts the requests it
// receives by method, to show what a filter never sends.
type filterServer struct {
	*inproc.Server
	mu   sync.Mutex
	seen map[mcp.MCPMethod]int
}

func newFilterServer(tools ...string) *filterServer {
	fs := &filterServer{seen: map[mcp.MCPMethod]int{}}
	hooks := &server.Hooks{}
	hooks.AddBeforeAny(func(_ context.Context, _ any, method mcp.MCPMethod, _ any) {
		fs.mu.Lock()
		fs.seen[method]++
		fs.mu.Unlock()
	})
	srv := server.NewMCPServer("filter", "1.0", server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true), server.WithHooks(hooks))
	for _, name := range tools {
		srv.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ran " + name), nil
		})
	}
	fs.Server = inproc.New(srv)
	return fs
}

func (fs *filterServer) dialer() Dialer {
	return func(ctx context.Context) (transport.Conn, error) { return fs.Dial(ctx) }
}

// handshakes counts the connections the server saw begin (initialize or
// server/discover).
func (fs *filterServer) handshakes() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.seen[mcp.MethodInitialize] + fs.seen[mcp.MethodServerDiscover]
}

// requests counts the requests that begin a connection, fetch a list or
// call a tool: what a filter must never cause. (The notification stream a
// runtime opens after connecting is left out: it may come a moment after
// Connected.)
func (fs *filterServer) requests() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, method := range []mcp.MCPMethod{mcp.MethodInitialize, mcp.MethodServerDiscover,
		mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList,
		mcp.MethodToolsCall} {
		n += fs.seen[method]
	}
	return n
}

// String lists the requests the server saw, by method, for failures.
func (fs *filterServer) String() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fmt.Sprint(fs.seen)
}

// publishedTools lists the View's qualified tool names of server.
func publishedTools(m *Manager, server string) []string {
	var out []string
	for t := range m.View().Tools() {
		if t.Server() == server {
			out = append(out, t.Qualified())
		}
	}
	slices.Sort(out)
	return out
}

// wantFiltered checks that err is a call refused by a tool filter.
func wantFiltered(t *testing.T, err error, list, entry string) {
	t.Helper()
	var fe *ToolFilteredError
	switch {
	case !errors.Is(err, ErrToolNotFound):
		t.Fatalf("call of a filtered tool: %v, want ErrToolNotFound", err)
	case !errors.As(err, &fe) || fe.List != list || fe.Entry != entry:
		t.Fatalf("call of a filtered tool: %v, want a ToolFilteredError of list %s, entry %q", err, list, entry)
	case !strings.Contains(err.Error(), "filtered out") || !strings.Contains(err.Error(), list):
		t.Fatalf("message %q does not say the tool is filtered, nor by which list", err)
	}
}

// A denied tool is neither in the View nor in the catalog event, and a
// call to it, by server or by qualified name, fails without reaching the
// server.
func TestToolFilterDeniedToolIsInvisibleAndUncallable(t *testing.T) {
	fs := newFilterServer("read", "write", "delete_repo", "delete_issue")
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: fs.dialer(), ToolFilter: ToolFilter{Deny: []string{"write", "delete_*"}}})
	mustWait(t, m, "s", lifecycle.Connected)

	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__read"}) {
		t.Fatalf("View: %v, want only s__read", got)
	}
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog && e.Server == "s" })
	if !slices.Equal(e.Diff.Added, []string{"s__read"}) {
		t.Fatalf("catalog event added %v, want only s__read", e.Diff.Added)
	}
	st, _ := m.Status("s")
	if st.Tools != 1 || st.FilteredTools != 3 {
		t.Fatalf("status: %d tools, %d filtered; want 1 and 3", st.Tools, st.FilteredTools)
	}

	before := fs.requests()
	_, err := m.CallTool(testCtx(t), "s", "write", nil)
	wantFiltered(t, err, "deny", "write")
	if !strings.Contains(err.Error(), `server "s"`) {
		t.Fatalf("error %q does not name the server", err)
	}
	_, err = m.Call(testCtx(t), "s__delete_repo", nil)
	wantFiltered(t, err, "deny", "delete_*")
	if n := fs.requests(); n != before {
		t.Fatalf("the server saw %d requests for filtered calls (%v)", n-before, fs)
	}
	if r, err := m.CallTool(testCtx(t), "s", "read", nil); err != nil || text(r) != "ran read" {
		t.Fatalf("call of an allowed tool: %v", err)
	}
	// Not filtered, just not there: the plain ErrToolNotFound.
	if _, err := m.Call(testCtx(t), "s__nope", nil); !errors.Is(err, ErrToolNotFound) || strings.Contains(err.Error(), "filtered") {
		t.Fatalf("unknown tool: %v", err)
	}
}

// A glob matches a tool name as a plain string: deny "delete*" hides
// "delete/all" (path.Match stopped '*' at '/' and let it through), and a
// call to it fails without reaching the server.
func TestToolFilterGlobMatchesSlash(t *testing.T) {
	fs := newFilterServer("read", "delete/all", "delete_one")
	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{Dialer: fs.dialer(), ToolFilter: ToolFilter{Deny: []string{"delete*"}}})
	mustWait(t, m, "s", lifecycle.Connected)
	if st, _ := m.Status("s"); st.Tools != 1 || st.FilteredTools != 2 {
		t.Fatalf("status: %d tools, %d filtered; want 1 and 2", st.Tools, st.FilteredTools)
	}
	before := fs.requests()
	_, err := m.CallTool(testCtx(t), "s", "delete/all", nil)
	wantFiltered(t, err, "deny", "delete*")
	if n := fs.requests(); n != before {
		t.Fatalf("the server saw %d requests for a filtered call (%v)", n-before, fs)
	}
}

// Allow globs publish the tools they match; a tool matching no allow entry
// is refused by the allow list, and deny wins over allow.
func TestToolFilterAllowGlobs(t *testing.T) {
	fs := newFilterServer("get_issue", "get_pr", "list_issues", "list_prs", "create_issue", "get_secret")
	m := newTestManager(t)
	mustAdd(t, m, "gh", ServerSpec{Dialer: fs.dialer(),
		ToolFilter: ToolFilter{Allow: []string{"get_*", "list_issue?"}, Deny: []string{"*secret*"}}})
	mustWait(t, m, "gh", lifecycle.Connected)
	want := []string{"gh__get_issue", "gh__get_pr", "gh__list_issues"}
	if got := publishedTools(m, "gh"); !slices.Equal(got, want) {
		t.Fatalf("View: %v, want %v", got, want)
	}
	_, err := m.CallTool(testCtx(t), "gh", "create_issue", nil)
	wantFiltered(t, err, "allow", "")
	_, err = m.Call(testCtx(t), "gh__get_secret", nil)
	wantFiltered(t, err, "deny", "*secret*")
}

// A malformed pattern makes the spec invalid, with an error naming the
// server and the entry; SetToolFilter refuses it and keeps the filter.
func TestToolFilterInvalidPattern(t *testing.T) {
	fs := newFilterServer("a")
	m := newTestManager(t)
	err := m.Add(testCtx(t), "bad", ServerSpec{Dialer: fs.dialer(), ToolFilter: ToolFilter{Deny: []string{"ok", "[a-"}}})
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), `server "bad"`) ||
		!strings.Contains(err.Error(), "toolFilter: deny[1]") {
		t.Fatalf("Add with a malformed deny entry: %v", err)
	}
	keep := ToolFilter{Deny: []string{"x"}}
	mustAdd(t, m, "s", ServerSpec{Dialer: fs.dialer(), ToolFilter: keep})
	err = m.SetToolFilter("s", ToolFilter{Allow: []string{""}})
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), `server "s"`) ||
		!strings.Contains(err.Error(), "allow[0]: empty entry") {
		t.Fatalf("SetToolFilter with an empty entry: %v", err)
	}
	if f, _ := m.ToolFilter("s"); !f.equal(keep) {
		t.Fatalf("filter after a refused SetToolFilter: %v, want %v", f, keep)
	}
	if err := m.SetToolFilter("nope", ToolFilter{}); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("SetToolFilter of an unknown server: %v", err)
	}
}

// A filter changed at runtime publishes and unpublishes at once, with one
// catalog event each, and never touches the server: the generation stays,
// and the server sees no new handshake, nor any request at all.
func TestSetToolFilterRepublishesWithoutReconnect(t *testing.T) {
	fs := newFilterServer("read", "write", "admin")
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: fs.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	if got := publishedTools(m, "s"); len(got) != 3 {
		t.Fatalf("View: %v", got)
	}
	handshakes, requests := fs.handshakes(), fs.requests()
	if handshakes != 1 {
		t.Fatalf("%d handshakes before the filter changed", handshakes)
	}

	caller := ToolFilter{Deny: []string{"admin"}}
	if err := m.SetToolFilter("s", caller); err != nil {
		t.Fatal(err)
	}
	caller.Deny[0] = "read" // the slot keeps its own copy
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog && len(e.Diff.Removed) > 0 })
	if !slices.Equal(e.Diff.Removed, []string{"s__admin"}) || len(e.Diff.Added) > 0 || e.Generation != 1 {
		t.Fatalf("event of the deny: %+v", e)
	}
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__read", "s__write"}) {
		t.Fatalf("View after deny admin: %v", got)
	}
	_, err := m.CallTool(testCtx(t), "s", "admin", nil)
	wantFiltered(t, err, "deny", "admin")

	if err := m.SetToolFilter("s", ToolFilter{Allow: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__read"}) {
		t.Fatalf("View after allow read: %v", got)
	}
	if f, _ := m.ToolFilter("s"); !f.equal(ToolFilter{Allow: []string{"read"}}) {
		t.Fatalf("ToolFilter: %v", f)
	}

	if err := m.SetToolFilter("s", ToolFilter{}); err != nil {
		t.Fatal(err)
	}
	e = rec.wait(t, func(e Event) bool {
		return e.Kind == EventCatalog && slices.Equal(e.Diff.Added, []string{"s__admin", "s__write"})
	})
	if e.Generation != 1 {
		t.Fatalf("event of the cleared filter: generation %d", e.Generation)
	}
	st, _ := m.Status("s")
	if st.State != lifecycle.Connected || st.Generation != 1 || st.Tools != 3 {
		t.Fatalf("status: %v generation %d, %d tools; want Connected, 1, 3", st.State, st.Generation, st.Tools)
	}
	if fs.Dials() != 1 || fs.handshakes() != handshakes || fs.requests() != requests {
		t.Fatalf("the server was touched: %d dials, %d handshakes, %d new requests (%v)",
			fs.Dials(), fs.handshakes(), fs.requests()-requests, fs)
	}
	if r, err := m.Call(testCtx(t), "s__admin", nil); err != nil || text(r) != "ran admin" {
		t.Fatalf("call after the filter was cleared: %v", err)
	}
	rec.waitStates(t, "s", "Connecting", "Connected")
}

// A list_changed that brings a denied tool does not publish it: no event
// names it and the View does not have it; the catalog kept under the
// filter still has it, so clearing the filter shows it without asking the
// server.
func TestToolFilterListChangedBringsDeniedTool(t *testing.T) {
	fs := newFilterServer("read")
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: fs.dialer(), ToolFilter: ToolFilter{Deny: []string{"secret_*"}}})
	mustWait(t, m, "s", lifecycle.Connected)

	nop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	fs.MCPServer().AddTool(mcp.NewTool("secret_admin"), nop) // sends list_changed
	fs.MCPServer().AddTool(mcp.NewTool("visible"), nop)      // and again
	rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog && slices.Contains(e.Diff.Added, "s__visible") })
	// Refreshes run in order, so the one that published visible saw
	// secret_admin too.
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__read", "s__visible"}) {
		t.Fatalf("View after list_changed: %v", got)
	}
	for _, e := range rec.snapshot() {
		if e.Diff != nil && (slices.Contains(e.Diff.Added, "s__secret_admin") || slices.Contains(e.Diff.Changed, "s__secret_admin")) {
			t.Fatalf("an event names the denied tool: %+v", e)
		}
	}
	_, err := m.CallTool(testCtx(t), "s", "secret_admin", nil)
	wantFiltered(t, err, "deny", "secret_*")
	st, _ := m.Status("s")
	if st.Generation != 1 || st.FilteredTools != 1 {
		t.Fatalf("status: generation %d, %d filtered; want 1 and 1", st.Generation, st.FilteredTools)
	}

	requests := fs.requests()
	if err := m.SetToolFilter("s", ToolFilter{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.View().Tool("s__secret_admin"); !ok {
		t.Fatal("the refreshed tool is not published once the filter is cleared")
	}
	if n := fs.requests() - requests; n != 0 {
		t.Fatalf("clearing the filter sent %d requests (%v)", n, fs)
	}
}

// A refresh of another list (prompts here) builds on the catalog the
// server sent, not on the filtered one: the filtered tools are still known,
// and come back when the filter is cleared.
func TestToolFilterOtherListRefreshKeepsFilteredTools(t *testing.T) {
	fs := newFilterServer("read", "admin")
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: fs.dialer(), ToolFilter: ToolFilter{Deny: []string{"admin"}}})
	mustWait(t, m, "s", lifecycle.Connected)
	fs.MCPServer().AddPrompt(mcp.NewPrompt("hello"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}) // sends prompts/list_changed
	rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog && e.Diff.PromptsChanged })
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__read"}) {
		t.Fatalf("View after the prompts refresh: %v", got)
	}
	if err := m.SetToolFilter("s", ToolFilter{}); err != nil {
		t.Fatal(err)
	}
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__admin", "s__read"}) {
		t.Fatalf("View after the filter was cleared: %v", got)
	}
	if c, ok := m.View().Catalog("s"); !ok || len(c.Prompts()) != 1 {
		t.Fatal("the refreshed prompts were lost")
	}
}

// Apply changes a filter alone in place: reconfigured, not restarted, the
// same runtime and generation. Gemini CLI's spelling of the same filter is
// no change; a filter that comes with another change restarts under it.
func TestApplyFilterOnlyChange(t *testing.T) {
	ts := newTestServer()
	m := newTestManager(t)
	m.opts.dialOverride = func(ServerSpec) Dialer { return ts.dialer() }
	rec := record(m)
	applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv"}}}`)
	mustWait(t, m, "s", lifecycle.Connected)
	if _, ok := m.View().Tool("s__incr"); !ok {
		t.Fatal("incr not published")
	}

	res := applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "tools": {"deny": ["incr", "crash*"]}}}}`)
	if !slices.Equal(res.Reconfigured, []string{"s"}) || len(res.Restarted) > 0 || !strings.Contains(res.String(), "reconfigured s") {
		t.Fatalf("Apply of a filter change: %+v (%s)", res, res)
	}
	for _, name := range []string{"s__incr", "s__crash", "s__crash-readonly"} {
		if _, ok := m.View().Tool(name); ok {
			t.Fatalf("%s still published", name)
		}
	}
	_, err := m.CallTool(testCtx(t), "s", "incr", nil)
	wantFiltered(t, err, "deny", "incr")

	res = applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "excludeTools": ["incr", "crash*"]}}}`)
	if !slices.Equal(res.Unchanged, []string{"s"}) {
		t.Fatalf("Apply of the same filter in Gemini CLI's spelling: %v", res)
	}
	res = applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "includeTools": ["echo"]}}}`)
	if !slices.Equal(res.Reconfigured, []string{"s"}) {
		t.Fatalf("Apply of includeTools: %v", res)
	}
	if _, ok := m.View().Tool("s__incr"); ok {
		t.Fatal("incr published under includeTools [echo]")
	}
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__echo"}) {
		t.Fatalf("View under includeTools [echo]: %v", got)
	}
	st, _ := m.Status("s")
	if st.Generation != 1 || ts.Dials() != 1 {
		t.Fatalf("a filter change reconnected: generation %d, %d dials", st.Generation, ts.Dials())
	}
	// A runtime SetToolFilter lasts until an Apply brings the entry's back.
	if err := m.SetToolFilter("s", ToolFilter{}); err != nil {
		t.Fatal(err)
	}
	res = applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "includeTools": ["echo"]}}}`)
	if !slices.Equal(res.Reconfigured, []string{"s"}) || !slices.Equal(publishedTools(m, "s"), []string{"s__echo"}) {
		t.Fatalf("Apply after SetToolFilter: %v, View %v", res, publishedTools(m, "s"))
	}

	// With another change the server restarts, under the new filter.
	res = applyJSON(t, m, `{"mcpServers": {"s": {"command": "srv", "args": ["v2"], "tools": {"allow": ["put"]}}}}`)
	if !slices.Equal(res.Restarted, []string{"s"}) {
		t.Fatalf("Apply of a filter and args change: %v", res)
	}
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__put"}) {
		t.Fatalf("View while restarting under allow [put]: %v", got)
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__put"}) {
		t.Fatalf("View after the restart under allow [put]: %v", got)
	}
	if st, _ := m.Status("s"); st.Generation != 2 {
		t.Fatalf("generation after the restart: %d", st.Generation)
	}
}

// Both spellings parse to the same filter, entries expand ${VAR}, and
// every mistake names the server and the field.
func TestParseConfigToolFilter(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"ours":   {"command": "x", "tools": {"allow": ["read_*", "${TOOL}"], "deny": ["read_secret"]}},
		"gemini": {"command": "x", "includeTools": ["read_*", "${TOOL}"], "excludeTools": ["read_secret"]},
		"mixed":  {"command": "x", "includeTools": ["read_*"], "tools": {"deny": ["read_secret"]}},
		"none":   {"command": "x"}
	}}`), env(map[string]string{"TOOL": "write"}))
	if err != nil {
		t.Fatal(err)
	}
	want := ToolFilter{Allow: []string{"read_*", "write"}, Deny: []string{"read_secret"}}
	for _, name := range []string{"ours", "gemini"} {
		sc := cfg.Servers[name]
		if !sc.ToolFilter.equal(want) {
			t.Errorf("%s: filter %v, want %v", name, sc.ToolFilter, want)
		}
		spec, err := sc.Spec()
		if err != nil || !spec.ToolFilter.equal(want) {
			t.Errorf("%s: spec filter %v, %v", name, spec.ToolFilter, err)
		}
		// The filter is not part of what needs a restart.
		if sc.key() != cfg.Servers["none"].key() {
			t.Errorf("%s: the filter is in the restart key", name)
		}
	}
	if got := cfg.Servers["mixed"].ToolFilter; !got.equal(ToolFilter{Allow: []string{"read_*"}, Deny: []string{"read_secret"}}) {
		t.Errorf("mixed: filter %v", got)
	}
	if !cfg.Servers["none"].ToolFilter.IsZero() {
		t.Errorf("none: filter %v", cfg.Servers["none"].ToolFilter)
	}

	for _, c := range []struct{ js, want string }{
		{`{"command": "x", "tools": {"deny": ["ok", "[a"]}}`, `server "s": field "tools.deny[1]": invalid pattern "[a"`},
		{`{"command": "x", "excludeTools": ["[z"]}`, `server "s": field "excludeTools[0]": invalid pattern`},
		{`{"command": "x", "includeTools": [""]}`, `server "s": field "includeTools[0]": empty entry`},
		{`{"command": "x", "tools": {"allow": "read"}}`, `field "tools.allow": must be an array`},
		{`{"command": "x", "tools": ["read"]}`, `field "tools": must be an object`},
		{`{"command": "x", "tools": {"include": ["read"]}}`, `field "tools.include": unknown key`},
		{`{"command": "x", "includeTools": [1]}`, `field "includeTools[0]": must be a string`},
		{`{"command": "x", "includeTools": ["a"], "tools": {"allow": ["b"]}}`, `field "tools.allow": includeTools is set too`},
		{`{"command": "x", "excludeTools": ["a"], "tools": {"deny": ["b"]}}`, `field "tools.deny": excludeTools is set too`},
		{`{"command": "x", "includeTools": ["${UNSET}"]}`, `field "includeTools[0]": environment variable UNSET is not set`},
	} {
		_, err := ParseConfig([]byte(`{"mcpServers": {"s": `+c.js+`}}`), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.js, err, c.want)
		}
	}
}

// A real stdio server: the filter hides its tool and refuses the call, and
// the catalog cache keeps what the server offered, unfiltered, so that a
// Manager with another filter publishes the cached catalog through its own.
func TestToolFilterStdioAndCatalogCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalogs.json")
	spec := faultSpec(faultserver.ModeNormal)
	spec.ToolFilter = ToolFilter{Deny: []string{"add"}}

	first := New(WithCatalogCache(path))
	mustAdd(t, first, "s", spec)
	mustWait(t, first, "s", lifecycle.Connected)
	if _, ok := first.View().Tool("s__add"); ok {
		t.Fatal("denied tool published")
	}
	_, err := first.CallTool(testCtx(t), "s", "add", map[string]any{"a": 1, "b": 2})
	wantFiltered(t, err, "deny", "add")
	if r, err := first.Call(testCtx(t), "s__echo", map[string]any{"text": "hi"}); err != nil || text(r) != "hi" {
		t.Fatalf("call of an allowed tool: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	m := New(WithCatalogCache(path))
	defer m.Close()
	lazy := spec
	lazy.Lazy = true
	lazy.ToolFilter = ToolFilter{Allow: []string{"add", "echo"}}
	mustAdd(t, m, "s", lazy)
	st, _ := m.Status("s")
	if !st.Cached || st.Generation != 0 {
		t.Fatalf("status: cached %v, generation %d", st.Cached, st.Generation)
	}
	if got := publishedTools(m, "s"); !slices.Equal(got, []string{"s__add", "s__echo"}) {
		t.Fatalf("cached catalog under allow [add echo]: %v", got)
	}
	// A filter change works on the cached catalog too, before any connect.
	if err := m.SetToolFilter("s", ToolFilter{Deny: []string{"echo"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.View().Tool("s__echo"); ok {
		t.Fatal("echo still published from the cache")
	}
	if st, _ := m.Status("s"); st.State != lifecycle.Disconnected || st.Generation != 0 || st.Tools != 4 {
		t.Fatalf("status after a filter change on the cached catalog: %v generation %d, %d tools", st.State, st.Generation, st.Tools)
	}
}
