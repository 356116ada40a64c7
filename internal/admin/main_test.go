package admin_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testCtx is a test's context: it ends with the test, and at the latest
// after a minute, so that a wait that never ends fails the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newManager returns a Manager of the in-process servers, each Connected,
// closed when the test ends.
func newManager(t testing.TB, servers map[string]*upstream.Server) *client.Manager {
	t.Helper()
	ctx := testCtx(t)
	m := client.New()
	t.Cleanup(func() { m.Close() })
	for name, s := range servers {
		if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcess(s.MCPServer)}); err != nil {
			t.Fatal(err)
		}
	}
	for name := range servers {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	return m
}
