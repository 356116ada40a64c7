package store

import (
	"context"
	"time"
)

// Lease is a lease held on a name: until it is released, or until it
// expires, no one else holds it. Its Fence is larger than the fence of
// every lease given on the name before, so a store can tell a write of the
// current holder from a late one of a holder that lost the lease
// (TokenStore.SaveToken compares them).
type Lease struct {
	Name  string
	Fence uint64
	// Expires is when the lease ends unless released first, by the clock
	// of whoever granted it (the store's server, for a shared one).
	Expires time.Time
}

// Leases grants leases with fencing tokens. The refresh of an OAuth grant
// takes the grant's lease, so that across replicas one refreshes (a
// refresh token may be good for one use only: a second redemption makes
// the authorization server revoke the whole grant) and the others wait
// for it and read its result.
type Leases interface {
	// Acquire waits until it holds the lease on name, for ttl from then,
	// or until ctx ends. A lease whose holder neither released it nor
	// came back within its ttl (a process killed mid-refresh) is taken
	// over once it expires.
	Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, error)
	// Release ends l if it is still held under l.Fence, and wakes the
	// replicas waiting for it. Releasing a lease already lost (expired,
	// taken over) is no error.
	Release(ctx context.Context, l Lease) error
}
