package store

import (
	"context"
	"sync"
)

// MemoryTaskStore is a TaskStore in memory: its records outlive
// connections, Disable and Enable, and a Manager closed and made again in
// the same process, not the process. The zero value is ready to use.
type MemoryTaskStore struct {
	mu      sync.Mutex // guards records
	records map[[2]string]TaskRecord
}

// NewMemoryTaskStore returns an empty MemoryTaskStore.
func NewMemoryTaskStore() *MemoryTaskStore { return &MemoryTaskStore{} }

// SaveTask stores a copy of r.
func (s *MemoryTaskStore) SaveTask(ctx context.Context, r TaskRecord) error {
	err := ctx.Err()
	if err == nil {
		err = r.Validate()
	}
	if err != nil {
		return &Error{Store: "memory task store", Op: "save task", Key: r.Key(), Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.records == nil {
		s.records = map[[2]string]TaskRecord{}
	}
	s.records[[2]string{r.Server, r.TaskID}] = r.Clone()
	return nil
}

// DeleteTask forgets the record under server and taskID.
func (s *MemoryTaskStore) DeleteTask(ctx context.Context, server, taskID string) error {
	if err := ctx.Err(); err != nil {
		return &Error{Store: "memory task store", Op: "delete task", Key: server + "/" + taskID, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, [2]string{server, taskID})
	return nil
}

// LoadTasks returns copies of every record.
func (s *MemoryTaskStore) LoadTasks(ctx context.Context) ([]TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Store: "memory task store", Op: "load tasks", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskRecord, 0, len(s.records))
	for _, r := range s.records {
		out = append(out, r.Clone())
	}
	return out, nil
}
