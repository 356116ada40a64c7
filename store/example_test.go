package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpfleet/mcpfleet/store"
)

// A FileTaskStore keeps a Manager's open tasks across host restarts
// (client.TaskOptions.Store); here it is used directly.
func ExampleFileTaskStore() {
	dir, _ := os.MkdirTemp("", "tasks")
	defer os.RemoveAll(dir)
	s := store.NewFileTaskStore(filepath.Join(dir, "tasks"))
	ctx := context.Background()

	_ = s.SaveTask(ctx, store.TaskRecord{Server: "builds", TaskID: "t-42", Tool: "build", Status: "working"})
	records, err := s.LoadTasks(ctx)
	fmt.Println(len(records), records[0].Key(), records[0].Status, err)
	_ = s.DeleteTask(ctx, "builds", "t-42")
	records, _ = s.LoadTasks(ctx)
	fmt.Println(len(records))
	// Output:
	// 1 builds/t-42 working <nil>
	// 0
}
