package store_test

import (
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/sharedtest"
	"github.com/mcpfleet/mcpfleet/store"
)

// What the Managers of replicas and users see through a Memory store (one
// process: it cannot be stopped or paused).
func TestMemorySharedScenarios(t *testing.T) {
	s := store.NewMemory()
	sharedtest.Run(t, sharedtest.Backend{Open: func(*testing.T) store.Shared { return s }})
}
