package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func record(server, id string) TaskRecord {
	return TaskRecord{
		Server: server, TaskID: id, Tool: "build", Protocol: "2025-11-25", Status: "working",
		Started: time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC), TTL: time.Minute, PollInterval: time.Second,
		Answered: []string{"name"}, Result: json.RawMessage(`{"content":[]}`),
	}
}

func keys(rs []TaskRecord) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key())
	}
	slices.Sort(out)
	return out
}

// The file store makes its directory 0700 and its files 0600, lazily, and
// leaves no temporary file behind.
func TestFileTaskStoreModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits on Windows")
	}
	dir := filepath.Join(t.TempDir(), "a", "tasks")
	s := NewFileTaskStore(dir)
	if _, err := s.LoadTasks(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("loading made the directory: %v", err)
	}
	if err := s.SaveTask(t.Context(), record("github", "t-1")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("entries: %v", entries)
	}
	fi, _ = os.Stat(filepath.Join(dir, entries[0].Name()))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v", fi.Mode())
	}
}

// A record the store cannot trust is reported, named, and left out; the
// good ones still load.
func TestFileTaskStoreBadRecords(t *testing.T) {
	dir := t.TempDir()
	s := NewFileTaskStore(dir)
	ctx := t.Context()
	good := record("github", "good")
	if err := s.SaveTask(ctx, good); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	other := record("github", "other")
	data, _ := json.Marshal(other)
	write(fileName("github", "torn"), `{"server":"github","taskId":"torn","stat`, 0o600) // a torn write
	write(fileName("github", "moved"), string(data), 0o600)                              // another task's record under this name
	write(fileName("github", "nokey"), `{"tool":"x"}`, 0o600)
	write(".x.json.123.tmp", "half", 0o600) // a crashed save's temporary file: skipped
	write("notes.txt", "hello", 0o600)      // not a record: skipped
	wantBad := []string{"torn", "moved", "nokey"}
	if runtime.GOOS != "windows" {
		good2 := record("github", "writable")
		data, _ := json.Marshal(good2)
		write(fileName("github", "writable"), string(data), 0o666)
		if err := os.Symlink(filepath.Join(dir, fileName("github", "good")), filepath.Join(dir, fileName("github", "link"))); err != nil {
			t.Fatal(err)
		}
		wantBad = append(wantBad, "writable", "link")
	}
	got, err := s.LoadTasks(ctx)
	if k := keys(got); !slices.Equal(k, []string{"github/good"}) {
		t.Fatalf("loaded %v", k)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
	if runtime.GOOS != "windows" && !errors.Is(err, ErrUntrusted) {
		t.Fatalf("err = %v, want ErrUntrusted too", err)
	}
	msg := err.Error()
	for _, id := range wantBad {
		if !strings.Contains(msg, fileName("github", id)) {
			t.Errorf("the error does not name the record of %q: %v", id, msg)
		}
	}
	if !strings.HasPrefix(msg, "task store "+dir+": load task ") || strings.Contains(msg, "mcpfleet: ") {
		t.Errorf("error message: %v", msg)
	}
	if strings.Contains(msg, `"server"`) {
		t.Errorf("the error quotes a record: %v", msg)
	}
}

// A directory others can write is not trusted at all.
func TestFileTaskStoreUntrustedDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits on Windows")
	}
	dir := t.TempDir()
	s := NewFileTaskStore(dir)
	if err := s.SaveTask(t.Context(), record("github", "t-1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadTasks(t.Context())
	if !errors.Is(err, ErrUntrusted) || len(got) != 0 {
		t.Fatalf("load: %v, %v", keys(got), err)
	}
	if err := s.SaveTask(t.Context(), record("github", "t-2")); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("save: %v", err)
	}
}

// A FileTaskStore's lock is one holder's at a time, in one process too;
// the refusal names the store and the holder; released, it is free again.
func TestFileTaskStoreLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tasks")
	a, b := NewFileTaskStore(dir), NewFileTaskStore(dir)
	release, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Lock()
	var se *Error
	if !errors.Is(err, ErrLocked) || !errors.As(err, &se) || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("second Lock: %v, want ErrLocked naming %s and this process", err, dir)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	again, err := b.Lock()
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if err := again(); err != nil {
		t.Fatal(err)
	}
}
