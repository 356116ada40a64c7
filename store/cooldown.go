package store

import (
	"context"
	"time"
)

// Cooldown is the shared backoff of one upstream server: how many dials
// the replicas claimed since it was last seen up, and until when none of
// them dials it again.
type Cooldown struct {
	// Attempts counts the dials claimed since the server was last seen
	// up. Zero with a zero Until: no cooldown.
	Attempts int
	// Until is when the next dial may be claimed.
	Until time.Time
}

// Cooldowns share the backoff of upstream servers among replicas, so that
// a server that is down for one is backed off by all: before a dial, a
// replica claims it (ClaimDial); a replica whose claim another beat waits
// for the cooldown to end, or for a wake-up. The replica whose dial
// succeeds says so (ServerUp), which clears the cooldown and wakes the
// others at once. An upstream that is down for everyone thus gets one
// dial per backoff step from the whole set of replicas, not one per
// replica.
//
// A server is named by its identity (the client uses a hash of its URL
// without userinfo and query), not by the name a host gave it: users and
// replicas reaching one upstream share its cooldown. Times are the
// claiming replica's clock.
type Cooldowns interface {
	// Cooldown returns the server's cooldown, the zero Cooldown if it has
	// none.
	Cooldown(ctx context.Context, server string) (Cooldown, error)
	// ClaimDial makes next the server's cooldown if it still has prev's
	// Attempts (none counts as 0), and reports whether it did: the
	// replica that made the change makes the dial.
	ClaimDial(ctx context.Context, server string, prev, next Cooldown) (bool, error)
	// ServerUp clears the server's cooldown and wakes every replica that
	// watches it.
	ServerUp(ctx context.Context, server string) error
	// WatchUp returns a channel that receives (without blocking the
	// sender: a wake-up may stand for several) when a replica says the
	// server is up, until stop is called.
	WatchUp(server string) (up <-chan struct{}, stop func())
}
