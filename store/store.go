// Package store holds the state a Manager keeps outside its own memory, so
// that it outlives a connection, a restart of the host, or one host among
// several:
//
//   - the open MCP task handles (TaskStore): in a directory of files
//     (FileTaskStore, the Manager's default) or in memory
//     (MemoryTaskStore);
//   - the state that replicas of a host, and the per-user fleets of one
//     (the fleet package), share (Shared): OAuth credentials by user,
//     server and issuer with fenced writes (TokenStore), refresh leases
//     with fencing tokens (Leases), the backoff of upstream servers
//     (Cooldowns), catalogs by server identity (Catalogs) and task handles
//     by scope (TaskStores). Memory keeps it in one process.
//
// Implementations on shared databases live in nested modules
// (github.com/mcpfleet/mcpfleet/store/redis, .../store/postgres), so that
// a host that keeps its state in files or in memory needs nothing more
// than the core module; internal/testkit/storetest is the conformance
// suite every implementation runs.
//
// Every method takes a context and may do I/O. Every error is an *Error:
// it names the store, the operation and the record, never a record's
// content (which may hold a token or a tool's result); a record that
// cannot be trusted is reported (ErrCorrupt, ErrUntrusted) and left alone.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// SessionID is the session the task was started in, on a server whose
	// sessions keep state (Streamable HTTP up to protocol 2025-11-25): a
	// server may bind a task to the session that created it, so a later
	// runtime, or a later Manager, asks about the task in that session.
	// SessionProtocol is the protocol version the session was negotiated
	// on, and ServerIdentity names the endpoint that gave the session (a
	// digest of its URL): the id is sent to that endpoint only. All three
	// are empty for a task started without a session.
	SessionID       string `json:"sessionId,omitempty"`
	SessionProtocol string `json:"sessionProtocol,omitempty"`
	ServerIdentity  string `json:"serverIdentity,omitempty"`
	// Result is the outcome of a finished task that the host has not
	// collected yet: the tool's result (a CallToolResult as JSON) for a
	// completed task. Error is the error of a failed or lost one.
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Key returns the record's key, as errors name it: server and task id.
func (r TaskRecord) Key() string { return r.Server + "/" + r.TaskID }

// Validate reports a record that cannot be stored: one without a server
// or a task id.
func (r TaskRecord) Validate() error {
	if r.Server == "" || r.TaskID == "" {
		return errors.New("a record needs a server and a task id")
	}
	return nil
}

// UnmarshalTask decodes a record that a TaskStore kept as JSON (as
// json.Marshal writes a TaskRecord), for the implementations of TaskStore:
// a record that does not decode, has no key, or is not the record of
// server and taskID (the key it was found under; both empty skip that
// check) is an error that wraps ErrCorrupt and quotes none of it.
func UnmarshalTask(data []byte, server, taskID string) (TaskRecord, error) {
	var r TaskRecord
	if err := json.Unmarshal(data, &r); err != nil {
		// The message of a JSON syntax error quotes no content.
		return TaskRecord{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if r.Validate() != nil {
		return TaskRecord{}, fmt.Errorf("%w: no server or task id", ErrCorrupt)
	}
	if (server != "" || taskID != "") && (r.Server != server || r.TaskID != taskID) {
		return TaskRecord{}, fmt.Errorf("%w: the record is of another task than its key says", ErrCorrupt)
	}
	return r, nil
}

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
