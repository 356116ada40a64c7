// Package store holds the state a Manager keeps outside its own memory, so
// that it outlives a connection, a restart of the host, or (with a shared
// implementation) one host among several: today the open MCP task handles
// (TaskStore), with an implementation in a directory of files
// (FileTaskStore, the Manager's default) and one in memory
// (MemoryTaskStore). Implementations on shared databases live in nested
// modules, so that a host that keeps its state in files needs nothing
// more than the core module.
//
// Every method takes a context and may do I/O. Errors name the store, the
// operation and the record (see Error); they never quote a record's
// content, which may hold a tool's result.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// TaskRecord is what a TaskStore keeps of one task a Manager started on a
// server (client.Task): enough to find the task again on a new connection
// or in a new Manager, and the outcome of a finished task until the host
// collected it. The tool's arguments are not kept.
type TaskRecord struct {
	// Server is the name the server was added under, and TaskID the id
	// the server gave the task: together they are the record's key.
	Server string `json:"server"`
	TaskID string `json:"taskId"`
	// Tool is the tool that runs as the task.
	Tool string `json:"tool"`
	// Protocol names the wire form of the task, which decides how it is
	// polled: "2025-11-25" (tasks in the core protocol) or
	// "io.modelcontextprotocol/tasks" (the extension of 2026-07-28).
	Protocol string `json:"protocol"`
	// Status is the task's last known status: working, input_required,
	// completed, failed, cancelled, or lost.
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// Started is when the host started the task; Created is when the
	// server says it created it (zero if it did not say).
	Started time.Time `json:"started"`
	Created time.Time `json:"created,omitzero"`
	// TTL is how long after Created the server keeps the task; 0 means
	// it did not say (or keeps it without limit). PollInterval is the
	// interval the server asked for; 0 means it did not ask.
	TTL          time.Duration `json:"ttl,omitempty"`
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// RequestState is the opaque token a server of the extension hands
	// back with the task, to be sent with the next request about it. It
	// is the server's to protect; a store keeps it as it is.
	RequestState string `json:"requestState,omitempty"`
	// Answered lists the keys of the server's input requests the host
	// already answered, so that a new Manager does not ask the user again.
	Answered []string `json:"answered,omitempty"`
	// Result is the outcome of a finished task that the host has not
	// collected yet: the tool's result (a CallToolResult as JSON) for a
	// completed task. Error is the error of a failed or lost one.
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Key returns the record's key, as errors name it: server and task id.
func (r TaskRecord) Key() string { return r.Server + "/" + r.TaskID }

// Clone returns a copy of r that shares nothing with it.
func (r TaskRecord) Clone() TaskRecord {
	r.Answered = append([]string(nil), r.Answered...)
	r.Result = append(json.RawMessage(nil), r.Result...)
	return r
}

// TaskStore keeps a Manager's open task handles. A Manager saves a record
// when it starts a task and when what it knows of the task changes, loads
// every record when it is made, and deletes a record once the host
// collected the task's outcome (client.Task.Wait) or forgot the task.
//
// Implementations must be safe for concurrent use. A store holds the tasks
// of one Manager at a time: two Managers that run at once on one store
// would both poll, and both deliver, the same tasks.
type TaskStore interface {
	// SaveTask creates or replaces the record under r's key.
	SaveTask(ctx context.Context, r TaskRecord) error
	// DeleteTask forgets the record under server and taskID; deleting
	// nothing is no error.
	DeleteTask(ctx context.Context, server, taskID string) error
	// LoadTasks returns every record, in no particular order. A record it
	// cannot trust (unreadable, corrupt, or written by someone else) is
	// left out and reported in the error, which then wraps ErrCorrupt or
	// ErrUntrusted; the records it does return are good, and a caller uses
	// them. An error that leaves nothing usable returns no records.
	LoadTasks(ctx context.Context) ([]TaskRecord, error)
}

// Errors a store reports, inside an *Error.
var (
	// ErrCorrupt: a record could not be read back as one (bad JSON, no
	// key, a key that does not match where it was found). It is left
	// alone, not trusted.
	ErrCorrupt = errors.New("corrupt record")
	// ErrUntrusted: the store's files are writable by another user, or
	// owned by one: whoever can write them chooses which tasks the
	// Manager polls and which results it hands the host.
	ErrUntrusted = errors.New("untrusted")
)

// Error is the error of a store operation: which store, what was being
// done, on which record, and why. Like the module's other typed errors it
// carries no "mcpfleet: " prefix; the Manager's error around it does.
//
//	task store /home/u/.cache/mcpfleet/tasks: save task github/t-1: ...
type Error struct {
	// Store names the store: its kind and where it is ("task store
	// /path", "memory task store").
	Store string
	// Op is the operation: "save task", "delete task", "load tasks".
	Op string
	// Key is the record's key (TaskRecord.Key); empty for the whole store.
	Key string
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Store)
	b.WriteString(": ")
	b.WriteString(e.Op)
	if e.Key != "" {
		b.WriteString(" ")
		b.WriteString(e.Key)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }
