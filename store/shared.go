package store

// Shared is the state that the replicas of a host (several processes
// behind a load balancer), and the per-user fleets of one process, share
// through one store: OAuth credentials (TokenStore), the refresh lock
// (Leases), the backoff of upstream servers (Cooldowns), the last good
// catalogs (Catalogs) and open task handles (TaskStores). A Manager given
// one (client.WithSharedState) keeps what it learns there and reads what
// the others learned.
//
// Memory is the in-process implementation, for the per-user fleets of one
// process; github.com/mcpfleet/mcpfleet/store/redis and
// github.com/mcpfleet/mcpfleet/store/postgres are nested modules with the
// implementations for replicas. Every method takes a context and may do
// I/O. Errors are *Error: they name the store, the operation and the
// record, never a record's content (which holds tokens).
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
	TaskStores
	// Name names the store in errors and logs: its kind and where it is,
	// without credentials ("redis 127.0.0.1:6379/0").
	Name() string
}

// TaskStores keeps the open task handles of many Managers, each under a
// scope of its own (client.TaskOptions.SharedScope): a user's fleet in a pool
// (fleet.Pool gives each its user's), or a replica. A TaskStore holds one
// Manager's tasks at a time (see TaskStore), so two Managers that run at
// once, such as one user's fleets on two replicas, need two scopes.
type TaskStores interface {
	// Tasks returns the TaskStore of scope. It does no I/O.
	Tasks(scope string) TaskStore
}
