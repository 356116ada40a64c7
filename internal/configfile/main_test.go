package configfile_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

func TestMain(m *testing.M) {
	faultserver.Main() // the test binary doubles as the stdio test server
	goleak.VerifyTestMain(m)
}

// testCtx is a test's context: it ends with the test, and at the latest
// after a minute, so that a wait that never ends fails the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
