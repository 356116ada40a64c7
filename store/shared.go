package store

import (
	"errors"
	"fmt"
)

// Shared is the state that the replicas of a host (several processes
// behind a load balancer), and the per-user fleets of one process, share
// through one store: OAuth credentials (TokenStore), the refresh lock
// (Leases), the backoff of upstream servers (Cooldowns) and the last good
// catalogs (Catalogs). A Manager given one (client.WithSharedState) keeps
// what it learns there and reads what the others learned.
//
// Memory is the in-process implementation, for the per-user fleets of one
// process; github.com/mcpfleet/mcpfleet/store/redis and
// github.com/mcpfleet/mcpfleet/store/postgres are nested modules with the
// implementations for replicas. Every method takes a context and may do
// I/O. Errors name the store, the operation and the record, never a
// record's content (which holds tokens).
//
// When the store cannot be reached, or is slow, the Manager goes on with
// what its process has (a token in memory until it expires, its own
// backoff, the catalogs it holds) and saves what it owes the store once
// the store answers again.
type Shared interface {
	TokenStore
	Leases
	Cooldowns
	Catalogs
	// Name names the store in errors and logs: its kind and where it is,
	// without credentials ("redis 127.0.0.1:6379/0").
	Name() string
}

// ErrFenced is the error of a write made under a lease that was lost: the
// store holds a record written under a newer lease (a larger fence), and
// keeps it. See Leases.
var ErrFenced = errors.New("fenced off: the record was written under a newer lease")

// ErrBadRecord: a record could not be read back as one (it does not
// decode, or does not match where it was found). It is reported and
// ignored, never trusted.
var ErrBadRecord = errors.New("corrupt record")

// OpError is the error of an operation on a shared store: which store,
// what was being done, on which record, and why.
//
//	mcpfleet: redis 127.0.0.1:6379/0: save token alice/github@https://auth.example.com: dial tcp ...: connection refused
type OpError struct {
	// Store is the store's Name.
	Store string
	// Op is the operation: "load token", "acquire lease", "claim dial", ...
	Op string
	// Key names the record; empty for the whole store.
	Key string
	Err error
}

func (e *OpError) Error() string {
	s := "mcpfleet: " + e.Store + ": " + e.Op
	if e.Key != "" {
		s += " " + e.Key
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *OpError) Unwrap() error { return e.Err }

// Errorf returns an *OpError for store, op and key, whose cause is
// formatted as fmt.Errorf does (with %w).
func Errorf(store, op, key, format string, args ...any) error {
	return &OpError{Store: store, Op: op, Key: key, Err: fmt.Errorf(format, args...)}
}
