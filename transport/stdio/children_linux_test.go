//go:build linux

package stdio

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// noChildren checks that no child or zombie of the test process is left.
func noChildren(t testing.TB) {
	t.Helper()
	proctest.NoChildren(t)
}
