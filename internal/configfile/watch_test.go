package configfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// faultEntry is a config entry that runs the fault server.
func faultEntry() map[string]any {
	inv := faultserver.Command(faultserver.ModeNormal)
	return map[string]any{"command": inv.Path, "args": inv.Args, "env": inv.Env}
}

func writeConfig(t testing.TB, path string, servers map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, b)
}

// replaceFile writes data to path as editors do, through a temporary file
// renamed over it, so that no reader sees it half written.
func replaceFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatcher: a changed config file is applied and the summary
// logged; an edit that does not parse keeps the running fleet and says why,
// with the line and column; the next good edit is applied.
func TestWatcher(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, map[string]any{"one": faultEntry()})
	var logs syncBuffer
	type applied struct {
		res client.ApplyResult
		err error
	}
	got := make(chan applied, 8)
	w, cfg, err := configfile.NewWatcher(path, configfile.WatchOptions{
		Interval: 5 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Applied:  func(r client.ApplyResult, err error) { got <- applied{r, err} },
	})
	if err != nil {
		t.Fatal(err)
	}
	m := client.New()
	defer m.Close()
	if _, err := m.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx, m) }()
	defer func() { stop(); <-done }()
	next := func() applied {
		t.Helper()
		select {
		case a := <-got:
			return a
		case <-ctx.Done():
			t.Fatal("no apply")
			return applied{}
		}
	}

	writeConfig(t, path, map[string]any{"one": faultEntry(), "two": faultEntry()})
	if a := next(); a.err != nil || !slices.Equal(a.res.Added, []string{"two"}) || !slices.Equal(a.res.Unchanged, []string{"one"}) {
		t.Fatalf("adding two: %+v", a)
	}
	if !strings.Contains(logs.String(), "added two") {
		t.Fatalf("the summary is not logged: %s", logs.String())
	}

	replaceFile(t, path, []byte("{\n  \"mcpServers\": {\n    \"one\": {,\n"))
	a := next()
	if a.err == nil || !strings.Contains(a.err.Error(), "line 3") {
		t.Fatalf("a syntax error: %v", a.err)
	}
	writeConfig(t, path, map[string]any{"one": map[string]any{"commnd": "x"}})
	if a := next(); a.err == nil || !strings.Contains(a.err.Error(), "commnd") {
		t.Fatalf("an unknown field: %v", a.err)
	}
	if n := len(m.Statuses()); n != 2 {
		t.Fatalf("a bad edit changed the fleet: %d servers", n)
	}
	if !strings.Contains(logs.String(), "keeping the running fleet") {
		t.Fatalf("the bad edit is not logged: %s", logs.String())
	}

	writeConfig(t, path, map[string]any{"two": faultEntry()})
	if a := next(); a.err != nil || !slices.Equal(a.res.Removed, []string{"one"}) {
		t.Fatalf("removing one: %+v", a)
	}
}

// TestWatcherRefusesUntrustedFile: a config file others can write
// is refused at the start, and a change that makes it so is not applied:
// whoever can write it chooses the commands the fleet runs.
func TestWatcherRefusesUntrustedFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the directory's access control decides on Windows")
	}
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, map[string]any{"one": faultEntry()})
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, _, err := configfile.NewWatcher(path, configfile.WatchOptions{}); !errors.Is(err, configfile.ErrUntrusted) ||
		!strings.Contains(err.Error(), "run chmod go-w "+path) {
		t.Fatalf("a config others can write: %v", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 8)
	w, _, err := configfile.NewWatcher(path, configfile.WatchOptions{Interval: 5 * time.Millisecond,
		Applied: func(_ client.ApplyResult, err error) { got <- err }})
	if err != nil {
		t.Fatal(err)
	}
	m := client.New()
	defer m.Close()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(wctx, m)
	}()
	defer func() { stop(); <-done }()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"two": faultEntry()}})
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o646); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, configfile.ErrUntrusted) {
			t.Fatalf("a change others could have written: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the change was never looked at")
	}
	if st := m.Statuses(); len(st) != 0 {
		t.Fatalf("applied: %v", st)
	}
}

// TestWatcherReload: Reload applies a change at once, without waiting for
// the next look (a command that has just edited the file asks for it), and
// does nothing for a file that did not change; the looks that follow do
// not apply the change twice.
func TestWatcherReload(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, path, map[string]any{"one": faultEntry()})
	applied := make(chan client.ApplyResult, 8)
	w, cfg, err := configfile.NewWatcher(path, configfile.WatchOptions{Interval: time.Hour,
		Applied: func(r client.ApplyResult, _ error) { applied <- r }})
	if err != nil {
		t.Fatal(err)
	}
	m := client.New()
	defer m.Close()
	if _, err := m.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Reload(ctx, m); err != nil || res.String() != "no changes" {
		t.Fatalf("an unchanged file: %q %v", res.String(), err)
	}
	writeConfig(t, path, map[string]any{"one": faultEntry(), "two": faultEntry()})
	res, err := w.Reload(ctx, m)
	if err != nil || !slices.Equal(res.Added, []string{"two"}) {
		t.Fatalf("reload after an edit: %+v %v", res, err)
	}
	if n := len(m.Statuses()); n != 2 {
		t.Fatalf("%d servers after the reload", n)
	}
	if res, err := w.Reload(ctx, m); err != nil || len(res.Added) != 0 {
		t.Fatalf("a second reload: %+v %v", res, err)
	}
	if len(applied) != 1 {
		t.Fatalf("applied %d times", len(applied))
	}
}
