package client_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/sharedtest"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// After the authorization server restarts having forgotten every token and
// client registration, the next authorization succeeds and the server is
// Connected: with the file token store and the default memory one here;
// with each shared store in the store modules' tests (Memory, Redis,
// Postgres: sharedtest.Run).
func TestAuthorizationAfterTheAuthorizationServerForgot(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		sharedtest.AuthorizationServerForgot(t, client.WithTokenStore(oauth.NewFileStore(filepath.Join(t.TempDir(), "tokens.json"))))
	})
	t.Run("memory", func(t *testing.T) { sharedtest.AuthorizationServerForgot(t) })
}
