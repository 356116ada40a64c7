package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
)

// tokenTemplate is a template of one HTTP server that gets each user's
// token in a header.
func tokenTemplate(t *testing.T, u *upstream) *fleet.Template {
	return mustTemplate(t, `{"mcpServers": {"api": {"url": "`+u.URL()+`",
		"headers": {"Authorization": "Bearer ${user:token}", "X-User": "${user:id}"}}}}`)
}

func tokens(_ context.Context, user string) (map[string]string, error) {
	return map[string]string{"token": "tok-of-" + user}, nil
}

// Each user's fleet is built from the template with the user's values.
func TestGetBuildsEachUsersFleet(t *testing.T) {
	u := startUpstream(t)
	p := newPool(t, fleet.Config{Template: tokenTemplate(t, u), Values: tokens})
	ctx := testCtx(t)
	for _, user := range []string{"alice", "bob"} {
		f := get(t, ctx, p, user)
		if got := whoami(t, ctx, f, "api"); got != "Bearer tok-of-"+user {
			t.Errorf("%s's fleet sent %q", user, got)
		}
		if f.User() != user {
			t.Errorf("User() = %q", f.User())
		}
		f.Release()
		f.Release() // twice: no-op
	}
	if got := p.Users(); strings.Join(got, ",") != "alice,bob" {
		t.Errorf("users %v", got)
	}
	if st := p.Stats(); st.Live != 2 || st.InUse != 0 || st.Built != 2 {
		t.Errorf("stats %+v", st)
	}
}

// Concurrent Gets of one user build one Manager, and each holds it.
func TestConcurrentGetBuildsOne(t *testing.T) {
	u := startUpstream(t)
	u.Close() // the build is slow to finish: every Get arrives during it
	var calls sync.Mutex
	n := 0
	p := newPool(t, fleet.Config{Template: tokenTemplate(t, u), Values: func(ctx context.Context, user string) (map[string]string, error) {
		calls.Lock()
		n++
		calls.Unlock()
		return tokens(ctx, user)
	}})
	ctx := testCtx(t)
	const gets = 16
	fleets := make([]*fleet.Fleet, gets)
	var wg sync.WaitGroup
	for i := range fleets {
		wg.Go(func() { fleets[i] = get(t, ctx, p, "alice") })
	}
	wg.Wait()
	u.Open()
	for _, f := range fleets {
		if f.Manager() != fleets[0].Manager() {
			t.Fatal("two Managers for one user")
		}
	}
	if st := p.Stats(); st.Built != 1 || st.Live != 1 || st.InUse != 1 {
		t.Errorf("stats %+v", st)
	}
	if n != 1 {
		t.Errorf("Values called %d times", n)
	}
	for _, f := range fleets {
		f.Release()
	}
	if st := p.Stats(); st.InUse != 0 {
		t.Errorf("in use after every release: %+v", st)
	}
}

// A fleet no one holds is closed after the idle timeout; one in use is
// not, however long it is held.
func TestIdleClose(t *testing.T) {
	u := startUpstream(t)
	clock := fakeclock.New(time.Unix(1_000_000, 0))
	c := newCloses()
	p := newPool(t, fleet.Config{Template: tokenTemplate(t, u), Values: tokens, Clock: clock,
		IdleTimeout: time.Minute, OnClose: c.hook})
	ctx := testCtx(t)
	held := get(t, ctx, p, "bob")
	defer held.Release()
	get(t, ctx, p, "alice").Release()
	if err := clock.WaitForTimers(ctx, 1); err != nil { // the janitor's
		t.Fatal(err)
	}
	clock.Advance(59 * time.Second)
	c.none(t)
	clock.Advance(time.Second)
	if got := c.next(t, ctx); got != "alice idle" {
		t.Fatalf("closed: %s", got)
	}
	clock.Advance(time.Hour)
	c.none(t)
	if got := p.Users(); len(got) != 1 || got[0] != "bob" {
		t.Errorf("users %v", got)
	}
	// alice comes back: a new fleet.
	f := get(t, ctx, p, "alice")
	defer f.Release()
	if got := whoami(t, ctx, f, "api"); got != "Bearer tok-of-alice" {
		t.Errorf("alice's new fleet sent %q", got)
	}
	if st := p.Stats(); st.Built != 3 || st.Closed != 1 {
		t.Errorf("stats %+v", st)
	}
}

// Over MaxLive, the idle fleet used least recently is closed; fleets in
// use are not, and the pool goes over the cap while all are.
func TestCapClosesLeastRecentlyUsed(t *testing.T) {
	u := startUpstream(t)
	c := newCloses()
	p := newPool(t, fleet.Config{Template: tokenTemplate(t, u), Values: tokens, MaxLive: 2, OnClose: c.hook})
	ctx := testCtx(t)
	get(t, ctx, p, "a").Release()
	get(t, ctx, p, "b").Release()
	get(t, ctx, p, "a").Release() // a is now the most recent
	c.none(t)
	fc := get(t, ctx, p, "c")
	if got := c.next(t, ctx); got != "b over cap" {
		t.Fatalf("closed %s, want b (least recently used)", got)
	}
	fa := get(t, ctx, p, "a")
	fd := get(t, ctx, p, "d") // a and c in use: nothing to close
	c.none(t)
	if st := p.Stats(); st.Live != 3 || st.InUse != 3 {
		t.Fatalf("stats %+v", st)
	}
	fc.Release() // back under the cap: c, idle, goes
	if got := c.next(t, ctx); got != "c over cap" {
		t.Fatalf("closed %s", got)
	}
	fa.Release()
	fd.Release()
	if got := p.Users(); strings.Join(got, ",") != "a,d" {
		t.Errorf("users %v", got)
	}
}

// Evict closes a fleet now, or at its release when it is in use; Close
// closes them all, in use or not, and later Gets fail.
func TestEvictAndClose(t *testing.T) {
	u := startUpstream(t)
	c := newCloses()
	p, err := fleet.New(fleet.Config{Template: tokenTemplate(t, u), Values: tokens, OnClose: c.hook})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	get(t, ctx, p, "a").Release()
	if !p.Evict("a") {
		t.Fatal("Evict of a live fleet said none")
	}
	if got := c.next(t, ctx); got != "a evicted" {
		t.Fatal(got)
	}
	if p.Evict("a") {
		t.Error("Evict of a closed fleet said one")
	}
	fb := get(t, ctx, p, "b")
	p.Evict("b")
	c.none(t)
	fb.Release()
	if got := c.next(t, ctx); got != "b evicted" {
		t.Fatal(got)
	}
	fc := get(t, ctx, p, "c")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := c.next(t, ctx); got != "c pool closed" {
		t.Fatal(got)
	}
	if _, err := fc.Manager().CallTool(ctx, "api", "whoami", nil); !errors.Is(err, client.ErrClosed) {
		t.Errorf("a call on a fleet the pool closed: %v", err)
	}
	fc.Release()
	if _, err := p.Get(ctx, "c"); !errors.Is(err, fleet.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}

// A user's tools show as soon as the user's fleet is built, before any
// connect, from the catalog another user's fleet of the same template
// left in the shared store, when the host says the server shows every
// user the same (SharedCatalogs); the connect goes on in the background.
func TestReturningUserSeesCachedToolsBeforeConnect(t *testing.T) {
	u := startUpstream(t)
	c := newCloses()
	shared := store.NewMemory()
	tmpl := tokenTemplate(t, u)
	p := newPool(t, fleet.Config{Template: tmpl, Values: tokens, Shared: shared, OnClose: c.hook,
		SharedCatalogs: []string{"api"}})
	ctx := testCtx(t)
	f := get(t, ctx, p, "alice")
	whoami(t, ctx, f, "api")
	f.Release()
	p.Evict("alice") // its close writes the catalog it holds
	c.next(t, ctx)

	u.Close() // no request gets an answer from now on
	for _, user := range []string{"alice", "bob"} {
		before := u.requests.Load()
		f = get(t, ctx, p, user)
		st, err := f.Manager().Status("api")
		if err != nil {
			t.Fatal(err)
		}
		tools := 0
		for range f.Manager().View().Tools() {
			tools++
		}
		if tools != 1 || !st.Cached || st.State == lifecycle.Connected || u.requests.Load() != before {
			t.Fatalf("%s before any connect: %d tools, cached %v, state %v, %d requests reached the server",
				user, tools, st.Cached, st.State, u.requests.Load()-before)
		}
		f.Release()
	}
	u.Open()
	f = get(t, ctx, p, "bob")
	defer f.Release()
	if got := whoami(t, ctx, f, "api"); got != "Bearer tok-of-bob" {
		t.Errorf("bob's fleet sent %q", got)
	}
	if st, _ := f.Manager().Status("api"); st.Cached {
		t.Error("still the cached catalog once connected")
	}
}

// A server whose entry uses a ${user:…} variable keeps its catalog per
// user, wherever the variable is (own: the URL's path; common: its
// query), unless SharedCatalogs names it (common); a server whose entry
// does not (plain) shares it.
func TestUserEntryKeepsCatalogPerUser(t *testing.T) {
	u := startUpstream(t)
	c := newCloses()
	tmpl := mustTemplate(t, `{"mcpServers": {"own": {"url": "`+u.srv.URL+`/${user:id}/mcp"},
		"common": {"url": "`+u.srv.URL+`/mcp?key=${user:token}"}, "plain": {"url": "`+u.srv.URL+`/mcp"}}}`)
	p := newPool(t, fleet.Config{Template: tmpl, Values: tokens, OnClose: c.hook, SharedCatalogs: []string{"common"}})
	ctx := testCtx(t)
	f := get(t, ctx, p, "alice")
	for _, server := range tmpl.Servers() {
		whoami(t, ctx, f, server)
	}
	f.Release()
	p.Evict("alice")
	c.next(t, ctx)
	u.Close()
	f = get(t, ctx, p, "bob")
	defer f.Release()
	for server, want := range map[string]bool{"own": false, "common": true, "plain": true} {
		st, _ := f.Manager().Status(server)
		if st.Cached != want {
			t.Errorf("bob's %s: cached %v, want %v", server, st.Cached, want)
		}
	}
	u.Open()
}

// A template's own mistakes are reported when it is parsed, naming the
// server and the field, with no user; a user's missing value when the
// user's fleet is built, naming the variable; no error shows a value.
func TestTemplateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"bad field", `{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "timeout": "soon"}}}`,
			[]string{"template.json", `server "a"`, `field "timeout"`}},
		{"variable in a number", `{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "timeout": "${user:t}"}}}`,
			[]string{`server "a"`, `field "timeout"`}},
		{"bad variable name", `{"mcpServers": {"a": {"url": "http://127.0.0.1:1/mcp", "headers": {"A": "${user:a b}"}}}}`,
			[]string{`field "headers.A"`, "invalid variable name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fleet.ParseTemplate([]byte(tc.json), client.WithSource("template.json"))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
		})
	}

	tmpl := mustTemplate(t, `{"mcpServers": {"a": {"url": "http://127.0.0.1:1/${user:path}/mcp",
		"headers": {"Authorization": "Bearer ${user:token}"}}}}`)
	if got := strings.Join(tmpl.Variables(), ","); got != "path,token" {
		t.Errorf("variables %s", got)
	}
	if _, err := fleet.New(fleet.Config{Template: tmpl}); err == nil || !strings.Contains(err.Error(), "Values is nil") {
		t.Errorf("a template with variables and no Values: %v", err)
	}
	const secret = "s3cr3t-token-value"
	for _, tc := range []struct {
		name   string
		values map[string]string
		want   []string
	}{
		{"missing", map[string]string{"token": secret}, []string{`template.json (user "alice")`, `server "a"`, `field "url"`,
			"${user:path} has no value"}},
		{"a step up in a URL's path", map[string]string{"path": "..", "token": secret}, []string{`(user "alice")`, `server "a"`,
			`field "url"`, "${user:path}", `may not be ".."`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, fleet.Config{Template: tmpl, Values: func(context.Context, string) (map[string]string, error) {
				return tc.values, nil
			}})
			_, err := p.Get(testCtx(t), "alice")
			if err == nil {
				t.Fatal("built")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v lacks %q", err, w)
				}
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
			if st := p.Stats(); st.Live != 0 || st.Building != 0 {
				t.Errorf("after a failed build: %+v", st)
			}
		})
	}
	// The Values func failing fails the Get, naming the user.
	p := newPool(t, fleet.Config{Template: tmpl, Values: func(context.Context, string) (map[string]string, error) {
		return nil, errors.New("directory down")
	}})
	if _, err := p.Get(testCtx(t), "alice"); err == nil || !strings.Contains(err.Error(), `"alice"`) ||
		!strings.Contains(err.Error(), "directory down") {
		t.Errorf("values error: %v", err)
	}
}

// A Get whose context ends while it waits for another's build fails with
// its context's error; the build goes on for the others.
func TestGetWaitBoundedByContext(t *testing.T) {
	u := startUpstream(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	p := newPool(t, fleet.Config{Template: tokenTemplate(t, u), Values: func(ctx context.Context, user string) (map[string]string, error) {
		entered <- struct{}{}
		<-release
		return tokens(ctx, user)
	}})
	ctx := testCtx(t)
	built := make(chan *fleet.Fleet, 1)
	go func() {
		f, err := p.Get(ctx, "alice")
		if err != nil {
			t.Error(err)
		}
		built <- f
	}()
	<-entered
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Get(short, "alice"); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiter whose context ended: %v", err)
	}
	close(release)
	if f := <-built; f != nil {
		f.Release()
	}
}
