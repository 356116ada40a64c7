package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/url"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
)

// The shared cooldown (WithSharedState): replicas reaching one HTTP
// upstream share its backoff through store.Cooldowns, so that an upstream
// down for all of them gets one dial per backoff step from the whole set,
// not one per replica.
//
//   - A dial of a server that has connected before (a reconnect) is
//     claimed first: the replica whose claim wins dials and sets when the
//     next dial may be claimed (the policy's backoff for the claims so
//     far); the others wait for that time, or for a wake-up.
//   - A first connect dials without a claim while no replica has found
//     the upstream down (so that a fleet of fresh Managers does not
//     connect one at a time), and records its failure if it fails.
//   - The replica whose dial succeeds after the upstream was found down
//     clears the cooldown, which wakes every replica waiting on it: they
//     dial at once, without a claim.
//
// The store failing or slow costs the coordination, not the dial: the
// replica then follows its own backoff.

// cooldownKey names an HTTP upstream in the shared cooldowns: a hash of
// its URL without userinfo, query and fragment (per-user values stay
// out, and every user of one upstream shares its cooldown). "" for a
// stdio server: each replica has its own child.
func cooldownKey(spec ServerSpec) string {
	if spec.HTTP == nil {
		return ""
	}
	u, err := url.Parse(spec.HTTP.URL)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	sum := sha256.Sum256([]byte("upstream\x00" + u.String()))
	return hex.EncodeToString(sum[:16])
}

// cooldownStep is the wait after the n-th claimed dial (from 0): the
// policy's backoff without jitter, so every replica reads one schedule.
func cooldownStep(p lifecycle.Policy, n int) time.Duration {
	p = p.WithDefaults()
	d := float64(p.InitialInterval) * math.Pow(p.Multiplier, float64(n))
	if d > float64(p.MaxInterval) {
		return p.MaxInterval
	}
	return time.Duration(d)
}

// turn is what takeTurn found.
type turn struct {
	ok      bool // false: the loop was cancelled
	claimed bool // this replica claimed the dial
	down    bool // a replica had found the upstream down
}

// takeTurn waits, before a dial of the slot's upstream, for this replica's
// turn. fresh is a first connect; kicked says the host asked for a dial
// now (Reconnect), which no cooldown delays; woken says a replica found
// the upstream back since this loop's last dial.
func (s *slot) takeTurn(ctx context.Context, r *runner, up <-chan struct{}, fresh, kicked bool, woken *bool) turn {
	if kicked {
		return turn{ok: true, down: true}
	}
	cd, key := s.m.opts.shared, s.config().cooldownKey
	clock := s.m.opts.clock
	s.mu.Lock()
	policy := s.budget.Policy()
	s.mu.Unlock()
	down := false
	for {
		sctx, cancel := context.WithTimeout(ctx, sharedTimeout)
		c, err := cd.Cooldown(sctx, key)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return turn{}
			}
			s.m.opts.logger.Warn("mcpfleet: shared cooldown not read; following this replica's own backoff",
				"server", s.name, "error", err)
			return turn{ok: true}
		}
		now := clock.Now()
		switch {
		case c.Attempts == 0 && (fresh || *woken):
			return turn{ok: true, down: down}
		case c.Attempts > 0 && c.Until.After(now):
			down = true
			t, stop := clock.NewTimer(c.Until.Sub(now))
			select {
			case <-t:
			case <-up:
				*woken = true
			case <-r.kick: // Reconnect: dial now
				stop()
				return turn{ok: true, down: true}
			case <-ctx.Done():
				stop()
				return turn{}
			}
			stop()
			continue
		}
		down = down || c.Attempts > 0
		next := store.Cooldown{Attempts: c.Attempts + 1, Until: now.Add(cooldownStep(policy, c.Attempts))}
		sctx, cancel = context.WithTimeout(ctx, sharedTimeout)
		won, err := cd.ClaimDial(sctx, key, c, next)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return turn{}
			}
			return turn{ok: true, down: down}
		}
		if won {
			return turn{ok: true, claimed: true, down: down}
		}
	}
}

// dialed tells the shared cooldown how the dial of a turn went: a first
// connect that failed records the upstream down (unless a replica did
// already), and a success after the upstream was found down clears the
// cooldown, waking the others.
func (s *slot) dialed(t turn, err error) {
	cd, key := s.m.opts.shared, s.config().cooldownKey
	ctx, cancel := context.WithTimeout(s.m.ctx, sharedTimeout)
	defer cancel()
	switch {
	case err == nil && (t.down || t.claimed):
		if serr := cd.ServerUp(ctx, key); serr != nil {
			s.m.opts.logger.Warn("mcpfleet: shared cooldown not cleared", "server", s.name, "error", serr)
		}
	case err != nil && !t.claimed:
		s.mu.Lock()
		policy := s.budget.Policy()
		s.mu.Unlock()
		next := store.Cooldown{Attempts: 1, Until: s.m.opts.clock.Now().Add(cooldownStep(policy, 0))}
		_, _ = cd.ClaimDial(ctx, key, store.Cooldown{}, next)
	}
}

// watchUp subscribes the connect loop to the upstream's wake-ups, when
// its cooldown is shared; nil and a no-op otherwise.
func (s *slot) watchUp() (<-chan struct{}, func()) {
	if s.m.opts.shared == nil || s.config().cooldownKey == "" {
		return nil, func() {}
	}
	return s.m.opts.shared.WatchUp(s.config().cooldownKey)
}
