//go:build unix

package oauth_test

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// A token store file that others can write, or that belongs to another
// user, is refused: its token is not used (no request carries it), and
// the file is not replaced.
func TestFileStoreRefusesUntrustedFile(t *testing.T) {
	type change struct {
		name  string
		apply func(path string) error
	}
	changes := []change{
		{"world-writable", func(p string) error { return os.Chmod(p, 0o666) }},
		{"group-writable", func(p string) error { return os.Chmod(p, 0o620) }},
	}
	if os.Geteuid() == 0 {
		changes = append(changes, change{"another user's", func(p string) error { return os.Chown(p, 65534, 65534) }})
	} else {
		t.Log("not root: the other-owner case needs chown; skipped")
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens.json")
			const server = "https://mcp.example.test/mcp"
			planted := &oauth.Entry{Resource: server, Token: &oauth.Token{AccessToken: "PLANTED-TOKEN"}}
			if err := oauth.NewFileStore(path).Save(ctx(t), "s", planted); err != nil {
				t.Fatal(err)
			}
			if err := c.apply(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			store := oauth.NewFileStore(path)
			if _, err := store.Load(ctx(t), "s"); !errors.Is(err, oauth.ErrUntrustedStore) {
				t.Fatalf("Load = %v, want ErrUntrustedStore", err)
			}
			a := mustNew(t, server, oauth.Config{}, oauth.WithStore(store), oauth.WithLogger(nil))
			req := httptest.NewRequest("POST", server, nil).WithContext(ctx(t))
			if err := a.Authorize(req); err != nil {
				t.Fatal(err)
			}
			if got := req.Header.Get("Authorization"); got != "" {
				t.Fatalf("a request carries %q from the untrusted file", got)
			}
			if err := store.Save(ctx(t), "s", &oauth.Entry{Resource: server}); !errors.Is(err, oauth.ErrUntrustedStore) {
				t.Errorf("Save = %v, want ErrUntrustedStore", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the untrusted file was replaced")
			}
		})
	}
}
