package client

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// A Manager restarted with the catalog cache knows a lazy server's tools
// before it ever connects, marked cached; a call to a cached tool starts
// the server and succeeds, and the live catalog takes over.
func TestCatalogCacheBeforeTheFirstConnect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalogs.json")
	spec := faultSpec(faultserver.ModeNormal)
	spec.Stdio.Env["SECRET_TOKEN"] = "hunter2-env" // must never reach the file

	first := New(WithCatalogCache(path))
	mustAdd(t, first, "s", spec)
	mustWait(t, first, "s", lifecycle.Connected)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	if bytes.Contains(data, []byte("hunter2")) || bytes.Contains(data, []byte("SECRET_TOKEN")) {
		t.Fatal("the cache file holds the server's environment")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	m := New(WithCatalogCache(path))
	defer m.Close()
	rec := record(m)
	lazy := spec
	lazy.Lazy = true
	mustAdd(t, m, "s", lazy)
	st, _ := m.Status("s")
	if st.State != lifecycle.Disconnected || !st.Cached || st.Tools != 5 || st.Generation != 0 {
		t.Fatalf("status before any connect: %v cached=%v tools=%d gen=%d", st.State, st.Cached, st.Tools, st.Generation)
	}
	if _, ok := m.View().Tool("s__echo"); !ok {
		t.Fatal("the cached catalog is not in the View")
	}
	e := rec.wait(t, func(e Event) bool { return e.Kind == EventCatalog })
	if !e.Cached || len(e.Diff.Added) != 5 {
		t.Fatalf("catalog event %+v: want it marked cached, with the 5 tools", e)
	}

	res, err := m.Call(testCtx(t), "s__echo", map[string]any{"text": "woke up"})
	if err != nil || text(res) != "woke up" {
		t.Fatalf("call of a cached tool: %v", err)
	}
	st, _ = m.Status("s")
	if st.State != lifecycle.Connected || st.Cached || st.Generation != 1 {
		t.Fatalf("status after the call: %v cached=%v gen=%d", st.State, st.Cached, st.Generation)
	}
}

// A changed entry does not publish the catalog cached for the old one.
func TestCatalogCacheOfAChangedEntryIsNotPublished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalogs.json")
	spec := faultSpec(faultserver.ModeNormal)
	first := New(WithCatalogCache(path))
	mustAdd(t, first, "s", spec)
	mustWait(t, first, "s", lifecycle.Connected)
	first.Close()

	changed := faultSpec(faultserver.ModeNormal)
	changed.Stdio.Args = append(changed.Stdio.Args, "-test.v=false")
	changed.Lazy = true
	m := New(WithCatalogCache(path))
	defer m.Close()
	mustAdd(t, m, "s", changed)
	if st, _ := m.Status("s"); st.Cached || m.View().NumTools() != 0 {
		t.Fatalf("a changed entry published the old catalog: cached=%v, %d tools", st.Cached, m.View().NumTools())
	}
}

// A corrupt or foreign cache file is ignored with a logged reason, and
// replaced by a good one.
func TestCatalogCacheCorruptFileIsIgnored(t *testing.T) {
	for name, content := range map[string]string{
		"corrupt": "{not json",
		"foreign": `{"mcpfleetCatalogCache": 99, "servers": {"s": {"key": "x"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "catalogs.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			m := New(WithCatalogCache(path), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			mustAdd(t, m, "s", faultSpec(faultserver.ModeNormal))
			mustWait(t, m, "s", lifecycle.Connected)
			m.Close()
			if !strings.Contains(logs.String(), "ignoring it") {
				t.Errorf("no logged reason: %s", logs.String())
			}
			again := New(WithCatalogCache(path))
			defer again.Close()
			lazy := faultSpec(faultserver.ModeNormal)
			lazy.Lazy = true
			mustAdd(t, again, "s", lazy)
			if st, _ := again.Status("s"); !st.Cached {
				t.Error("the file was not replaced by a good one")
			}
		})
	}
}
