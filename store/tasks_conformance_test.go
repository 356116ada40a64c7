package store_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/storetest"
	"github.com/mcpfleet/mcpfleet/store"
)

// Every TaskStore of the package keeps the contract the shared stores
// keep (storetest.RunTasks): the memory one, the file one, and Memory's
// by scope (in TestMemoryShared).
func TestTaskStoreContract(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) store.TaskStore{
		"memory": func(*testing.T) store.TaskStore { return store.NewMemoryTaskStore() },
		"file": func(t *testing.T) store.TaskStore {
			return store.NewFileTaskStore(filepath.Join(t.TempDir(), "tasks"))
		},
	} {
		t.Run(name, func(t *testing.T) { storetest.RunTasks(t, mk) })
	}
}
