package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	nethttp "net/http"
	"net/url"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/store"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
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
//
// A failure that is the user's own (the server refused the user's
// credentials with 401 or 403, or wants the user to authorize) says the
// server is up: it clears the upstream's cooldown, if any, and is
// recorded under the user's own key instead (userCooldownKey), which only
// that user's dials wait for. So one user's bad or missing credentials
// delay no other user's connect, while a server that is down (refused,
// 5xx, a timeout) is backed off by everyone.

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

// userCooldownKey names the user's own failures at the upstream of key
// (see userFailure); "" when key is.
func userCooldownKey(key, user string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("user\x00" + key + "\x00" + user))
	return hex.EncodeToString(sum[:16])
}

// userFailure reports whether a dial failed for the user's own reason,
// not the server's: the server answered 401 or 403 to the credentials of
// the spec, or wants the user to authorize.
func userFailure(err error) bool {
	if needsUser(err) {
		return true
	}
	var he *mcphttp.Error
	return errors.As(err, &he) && (he.Status == nethttp.StatusUnauthorized || he.Status == nethttp.StatusForbidden)
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
	ok      bool           // false: the loop was cancelled
	claimed bool           // this replica claimed the dial
	down    bool           // a replica had found the upstream down
	user    store.Cooldown // the user's own cooldown, as read before the dial
}

// takeTurn waits, before a dial of the slot's upstream, for this replica's
// turn. kicked says the host asked for a dial now (Reconnect), which no
// cooldown delays; r.woken says a replica found the upstream back since
// this loop's last dial. A first connect (the slot never had a runtime)
// is fresh.
func (r *runner) takeTurn(ctx context.Context, kicked bool) turn {
	if kicked {
		return turn{ok: true, down: true}
	}
	s := r.s
	cd, key := s.m.opts.shared, s.config().cooldownKey
	clock := s.m.opts.clock
	s.mu.Lock()
	fresh := s.gen == 0
	policy := s.budget.Policy()
	s.mu.Unlock()
	user, ok := r.waitUserTurn(ctx)
	if !ok {
		return turn{}
	}
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
		case c.Attempts == 0 && (fresh || r.woken):
			return turn{ok: true, down: down, user: user}
		case c.Attempts > 0 && c.Until.After(now):
			down = true
			t, stop := clock.NewTimer(c.Until.Sub(now))
			select {
			case <-t:
			case <-r.up:
				r.woken = true
			case <-r.kick: // Reconnect: dial now
				stop()
				return turn{ok: true, down: true, user: user}
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
			return turn{ok: true, down: down, user: user}
		}
		if won {
			return turn{ok: true, claimed: true, down: down, user: user}
		}
	}
}

// waitUserTurn waits out the user's own cooldown at the upstream (the
// user's credentials refused, by this replica or another), and returns
// it as it read it; false if the loop was cancelled. A Reconnect, or the
// store failing, ends the wait.
func (r *runner) waitUserTurn(ctx context.Context) (store.Cooldown, bool) {
	s := r.s
	key := userCooldownKey(s.config().cooldownKey, s.m.opts.user)
	sctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	c, err := s.m.opts.shared.Cooldown(sctx, key)
	cancel()
	if err != nil {
		return store.Cooldown{}, ctx.Err() == nil
	}
	clock := s.m.opts.clock
	if wait := c.Until.Sub(clock.Now()); c.Attempts > 0 && wait > 0 {
		t, stop := clock.NewTimer(wait)
		defer stop()
		select {
		case <-t:
		case <-r.kick:
		case <-ctx.Done():
			return store.Cooldown{}, false
		}
	}
	return c, true
}

// dialed tells the shared cooldown how the dial of a turn went: a first
// connect that failed records the upstream down (unless a replica did
// already), and a success after the upstream was found down clears the
// cooldown, waking the others. A failure that is the user's own is the
// server answering: it clears the upstream's cooldown as a success does,
// and counts in the user's own.
func (r *runner) dialed(t turn, err error) {
	s := r.s
	cd, key := s.m.opts.shared, s.config().cooldownKey
	ctx, cancel := context.WithTimeout(s.m.ctx, sharedTimeout)
	defer cancel()
	own := err != nil && userFailure(err)
	if own || err == nil {
		userKey := userCooldownKey(key, s.m.opts.user)
		var uerr error
		switch {
		case own:
			s.mu.Lock()
			policy := s.budget.Policy()
			s.mu.Unlock()
			next := store.Cooldown{Attempts: t.user.Attempts + 1, Until: s.m.opts.clock.Now().Add(cooldownStep(policy, t.user.Attempts))}
			_, uerr = cd.ClaimDial(ctx, userKey, t.user, next)
		case t.user.Attempts > 0:
			uerr = cd.ServerUp(ctx, userKey)
		}
		if uerr != nil {
			s.m.opts.logger.Warn("mcpfleet: the user's shared cooldown not written", "server", s.name, "error", uerr)
		}
	}
	switch {
	case (err == nil || own) && (t.down || t.claimed):
		if serr := cd.ServerUp(ctx, key); serr != nil {
			s.m.opts.logger.Warn("mcpfleet: shared cooldown not cleared", "server", s.name, "error", serr)
		}
	case err != nil && !own && !t.claimed:
		s.mu.Lock()
		policy := s.budget.Policy()
		s.mu.Unlock()
		next := store.Cooldown{Attempts: 1, Until: s.m.opts.clock.Now().Add(cooldownStep(policy, 0))}
		_, _ = cd.ClaimDial(ctx, key, store.Cooldown{}, next)
	}
}

// watchUp subscribes the connect loop to the upstream's wake-ups, when
// its cooldown is shared; nil and a no-op otherwise.
func (r *runner) watchUp() (<-chan struct{}, func()) {
	s := r.s
	if s.m.opts.shared == nil || s.config().cooldownKey == "" {
		return nil, func() {}
	}
	return s.m.opts.shared.WatchUp(s.config().cooldownKey)
}
