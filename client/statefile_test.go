package client

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStateFileCorrupt: a corrupt state file never stops the Manager: it
// is logged, not swept, replaced, and removed at Close.
func TestStateFileCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte(`{"format": "mcpfleet/stdio-registry", "groups": [{"pid": `), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m := New(WithStateFile(path), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if got := m.OrphanSweep(); got != (stdio.SweepResult{}) {
		t.Errorf("OrphanSweep() = %+v", got)
	}
	if !strings.Contains(logs.String(), "state file ignored: corrupt") {
		t.Errorf("no log saying why the file was ignored:\n%s", logs)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"owner"`) {
		t.Errorf("file not taken over: %s, %v", b, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state file left after Close: %v", err)
	}
}

// TestStateFileUnusable: a state file that cannot be written leaves the
// Manager running without one, logged as an error.
func TestStateFileUnusable(t *testing.T) {
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m := New(WithStateFile(filepath.Join(notADir, "state.json")), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	defer m.Close()
	if !strings.Contains(logs.String(), "level=ERROR msg=\"mcpfleet: running without a state file") {
		t.Errorf("no error logged:\n%s", logs)
	}
	mustAdd(t, m, "s", ServerSpec{Dialer: newTestServer().dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
}
