package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/mcpfleet/mcpfleet/store"
)

// DefaultLeaseTTL is how long a refresh holds its grant's lease (see
// WithLeases) unless released first: longer than a token request may take
// (DefaultRequestTimeout), so that a live holder never loses it, and short
// enough that the replicas waiting behind a holder that died refresh soon
// after.
const DefaultLeaseTTL = DefaultRequestTimeout + 5*time.Second

// reloadAfter bounds how often an Authorizer whose store failed to load or
// save tries it again.
const reloadAfter = time.Second

// WithLeases makes the Authorizer share its server's grant with the other
// Authorizers on the same store (replicas of a host): a refresh, and every
// write of the server's entry, takes the lease on name (for ttl; 0 is
// WithLeaseTTL's, else DefaultLeaseTTL), reads the entry again, and writes under the lease's
// fence (Entry.Fence). So one replica refreshes a grant, and the others,
// waiting on the lease, find its new token in the store and use it instead
// of redeeming the refresh token a second time (which an authorization
// server that rotates refresh tokens answers by revoking the whole grant).
// name must be the same for every replica and differ per grant: the
// client uses the user and the server.
//
// Without it (the default) refreshes coalesce within the Authorizer only.
func WithLeases(l store.Leases, name string, ttl time.Duration) Option {
	return func(a *Authorizer) {
		switch {
		case ttl > 0:
		case a.leaseTTL > 0:
			ttl = a.leaseTTL // WithLeaseTTL's
		default:
			ttl = DefaultLeaseTTL
		}
		a.leases, a.leaseName, a.leaseTTL = l, name, ttl
	}
}

// WithLeaseTTL sets how long a refresh holds its grant's lease (see
// WithLeases) unless released first: the replicas waiting behind a holder
// that died take over after it. Not positive keeps DefaultLeaseTTL. A
// client.Manager gives it to its Authorizers through
// client.WithOAuthOptions.
func WithLeaseTTL(d time.Duration) Option {
	return func(a *Authorizer) {
		if d > 0 {
			a.leaseTTL = d
		}
	}
}

// lease takes the grant's lease, or returns a zero Lease without leases.
func (a *Authorizer) lease(ctx context.Context) (store.Lease, error) {
	if a.leases == nil {
		return store.Lease{}, nil
	}
	return a.leases.Acquire(ctx, a.leaseName, a.leaseTTL)
}

// release gives the lease back, on a context of its own: a caller that
// gave up must not leave the others waiting for its ttl.
func (a *Authorizer) release(l store.Lease) {
	if a.leases == nil || l.Fence == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
	defer cancel()
	if err := a.leases.Release(ctx, l); err != nil {
		a.log.Warn("mcpfleet: oauth: lease not released; it expires by itself", "server", a.key, "err", err)
	}
}

// persist writes e (a clone of the entry) to the store: under held's fence
// when the caller holds the lease, else under a lease of its own (with
// leases). A write that fails is logged and owed: the entry is written
// again on a later request, so that a store that was down loses nothing
// once it is back. A write fenced off (another replica wrote the entry
// under a newer lease) is not owed: the store's entry is newer, and it is
// read again.
func (a *Authorizer) persist(ctx context.Context, e *Entry, held store.Lease) {
	l := held
	if a.leases != nil && held.Fence == 0 {
		var err error
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRequestTimeout)
		l, err = a.lease(lctx)
		cancel()
		if err != nil {
			a.owe(err)
			return
		}
		defer a.release(l)
	}
	e.Fence = l.Fence
	err := a.store.Save(ctx, a.key, e)
	switch {
	case err == nil:
		a.mu.Lock()
		a.entry.Fence = l.Fence
		a.unsaved = false
		a.mu.Unlock()
	case errors.Is(err, store.ErrFenced):
		a.log.Info("mcpfleet: oauth: token store holds a newer entry; reading it", "server", a.key)
		a.mu.Lock()
		a.loaded, a.unsaved = false, false
		a.mu.Unlock()
	default:
		a.owe(err)
	}
}

// owe records a failed write, to be tried again.
func (a *Authorizer) owe(err error) {
	a.log.Warn("mcpfleet: oauth: token store: save failed; kept in memory and saved once the store answers",
		"server", a.key, "err", err)
	a.mu.Lock()
	a.unsaved = true
	a.retryAt = a.now().Add(reloadAfter)
	a.mu.Unlock()
}

// settle writes the entry the store is owed, and reads again an entry the
// store failed to give, each at most once per reloadAfter.
func (a *Authorizer) settle(ctx context.Context) {
	a.mu.Lock()
	if !a.unsaved || a.now().Before(a.retryAt) {
		a.mu.Unlock()
		return
	}
	a.retryAt = a.now().Add(reloadAfter)
	e := a.entry.clone()
	a.mu.Unlock()
	a.persist(ctx, e, store.Lease{})
}

// reload reads the entry from the store again, under the lease, and
// adopts it if it holds a token other than old: another replica refreshed
// (or authorized) meanwhile. It returns that token, or nil.
func (a *Authorizer) reload(ctx context.Context, old *Token) *Token {
	e, err := a.store.Load(ctx, a.key)
	if err != nil || e == nil || e.Resource != a.resource || e.Token == nil {
		if err != nil {
			a.log.Warn("mcpfleet: oauth: token store: load failed", "server", a.key, "err", err)
		}
		return nil
	}
	if old != nil && e.Token.AccessToken == old.AccessToken {
		return nil
	}
	a.mu.Lock()
	a.entry = e
	a.loaded = true
	a.mu.Unlock()
	return e.clone().Token
}
