//go:build unix

package filetrust_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
)

func TestUntrusted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode os.FileMode
		want string
	}{
		{0o600, ""},
		{0o644, ""},
		{0o620, "writable by other users"},
		{0o602, "writable by other users"},
		{0o666, "writable by other users"},
	} {
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := filetrust.Untrusted(fi); got != tc.want {
			t.Errorf("mode %v: Untrusted = %q, want %q", tc.mode, got, tc.want)
		}
	}
}

func ExampleUntrusted() {
	path := filepath.Join(os.TempDir(), "filetrust-example")
	_ = os.WriteFile(path, nil, 0o600)
	defer os.Remove(path)
	_ = os.Chmod(path, 0o666)
	fi, _ := os.Stat(path)
	fmt.Println(filetrust.Untrusted(fi))
	// Output: writable by other users
}
