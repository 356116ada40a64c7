package store

import (
	"errors"
	"strings"
)

// Errors a store reports, inside an *Error.
var (
	// ErrCorrupt: a record could not be read back as one (bad JSON, no
	// key, a key that does not match where it was found, a fence that does
	// not parse). It is reported and left alone, never trusted.
	ErrCorrupt = errors.New("corrupt record")
	// ErrUntrusted: the store's files are writable by another user, or
	// owned by one: whoever can write them chooses which tasks the
	// Manager polls and which results it hands the host.
	ErrUntrusted = errors.New("untrusted")
	// ErrFenced: a write made under a lease that was lost. The store holds
	// a record written under a newer lease (a larger fence), and keeps it.
	// See Leases.
	ErrFenced = errors.New("fenced off: the record was written under a newer lease")
	// ErrLocked: a FileTaskStore is locked by another holder (another
	// Manager, in this process or another): two Managers on one task store
	// would both poll, and both deliver, the same tasks. See
	// FileTaskStore.Lock.
	ErrLocked = errors.New("in use by another Manager")
)

// Error is the error of every store operation, of every implementation:
// which store, what was being done, on which record, and why. Like the
// module's other typed errors it carries no "mcpfleet: " prefix; the
// Manager's error around it, or its log line, does. It never quotes a
// record's content, which may hold a token or a tool's result.
//
//	task store /home/u/.cache/mcpfleet/tasks: save task github/t-1: ...
//	redis 127.0.0.1:6379/0: save token alice/github@https://auth.example.com: dial tcp ...: connection refused
type Error struct {
	// Store names the store: its kind and where it is ("task store
	// /path", "memory store", "redis 127.0.0.1:6379/0"), never with
	// credentials (Shared.Name).
	Store string
	// Op is the operation: "save task", "load token", "acquire lease",
	// "claim dial", ...
	Op string
	// Key names the record (TaskRecord.Key, TokenKey.String, a lease's
	// name, a server's identity); empty for the whole store.
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
