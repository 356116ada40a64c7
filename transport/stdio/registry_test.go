package stdio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// logRecorder is a slog.Handler that keeps every record as one line
// (message, then key=value pairs), so a test can check what was logged.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

// has reports whether a record contains every one of substrs.
func (l *logRecorder) has(substrs ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, s := range substrs {
			all = all && strings.Contains(line, s)
		}
		if all {
			return true
		}
	}
	return false
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// readState reads the state file as the next host would, and fails the
// test unless every line of it could be read.
func readState(t *testing.T, path string) stateFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := decodeState(bytes.NewReader(b), maxRegistrySize)
	if err != nil || res.torn || res.skipped > 0 {
		t.Fatalf("state file: %v (torn %v, %d lines skipped)\n%s", err, res.torn, res.skipped, b)
	}
	return res.stateFile
}

// TestRegistryIgnoresBadFiles: a state file that is corrupt, someone
// else's, of another version or too large is never fatal and never swept:
// the reason is logged and the file is replaced by ours.
func TestRegistryIgnoresBadFiles(t *testing.T) {
	// An entry that would be swept if the file were believed: this very
	// process's pid (which the sweep also refuses, as a second guard).
	entry := fmt.Sprintf(`"groups":[{"pid":%d,"pgid":%d,"start":"x","command":"x"}]`, os.Getpid(), os.Getpid())
	tests := []struct {
		name    string
		content string
		perm    fs.FileMode
		says    string
	}{
		{"corrupt", `{"format":"mcpfleet/stdio-reg`, 0o600, "corrupt or not a state file"},
		{"not json", "\x00\x01binary", 0o600, "corrupt or not a state file"},
		{"foreign", `{"format":"someone-else","version":1,` + entry + `}`, 0o600, "not a state file of mcpfleet"},
		{"no format", `{"version":1,` + entry + `}`, 0o600, "not a state file of mcpfleet"},
		{"future version", `{"format":"mcpfleet/stdio-registry","version":99,` + entry + `}`, 0o600, "unsupported version"},
		{"too large", "", 0o600, "larger than a state file"}, // made sparse below
		{"writable by others", `{"format":"mcpfleet/stdio-registry","version":1,` + entry + `}`, 0o666, "writable by other users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.perm&0o022 != 0 && runtime.GOOS == "windows" {
				t.Skip("no Unix permissions")
			}
			path := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.content == "" {
				if err := os.Truncate(path, maxRegistrySize+1); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(path, tt.perm); err != nil {
				t.Fatal(err)
			}
			logs := &logRecorder{}
			r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
			if err != nil {
				t.Fatalf("OpenRegistry: %v", err)
			}
			if got := r.Swept(); got != (SweepResult{}) {
				t.Errorf("Swept() = %+v, want nothing", got)
			}
			if !logs.has("WARN", "state file ignored: "+tt.says, path) {
				t.Errorf("no warning saying %q; logged:\n%s", tt.says, logs)
			}
			if sf := readState(t, path); sf.Format != registryFormat || sf.Owner == nil || sf.Owner.PID != os.Getpid() || len(sf.Groups) != 0 {
				t.Errorf("file not taken over: %+v", sf)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("file left after Close with no groups: %v", err)
			}
		})
	}
}

// TestRegistryNewFile: a missing file and directory are created; Close of
// a Registry that recorded nothing removes the file; Close twice is fine.
func TestRegistryNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "state.json")
	logs := &logRecorder{}
	r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	sf := readState(t, path)
	if sf.Format != registryFormat || sf.Version != registryVersion || sf.Owner == nil || sf.Owner.PID != os.Getpid() {
		t.Errorf("new file: %+v", sf)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file left after Close: %v", err)
	}
	if logs.has("WARN") {
		t.Errorf("warnings for a fresh file:\n%s", logs)
	}
	if _, err := OpenRegistry(""); err == nil {
		t.Error("OpenRegistry(\"\") succeeded")
	}
}
