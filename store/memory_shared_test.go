package store_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
)

// The package's TestMain (store_test.go, with the task store) checks for
// leaks too; this test checks its own, which is all it starts.
func TestMemoryShared(t *testing.T) {
	defer goleak.VerifyNone(t)
	storetest.Run(t, func(t *testing.T) (store.Shared, store.Shared) {
		s := store.NewMemory()
		return s, s
	})
}
