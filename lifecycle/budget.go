package lifecycle

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Budget schedules the reconnects of one slot under a Policy. It is not safe
// for concurrent use; the slot guards it with its own lock.
//
// The schedule is backoff/v4's exponential backoff. A success does not reset
// it: only a connection that stayed up for Policy.StableAfter does, when it
// is lost, so a server that dies right after each connect runs out of budget
// instead of retrying forever at the initial interval.
type Budget struct {
	policy      Policy
	clock       Clock
	bo          *backoff.ExponentialBackOff
	attempts    int       // failures since the last reset
	connectedAt time.Time // when the current connection came up; zero if none
}

// NewBudget returns a fresh budget. A nil clock means the system clock.
func NewBudget(p Policy, clock Clock) *Budget {
	if clock == nil {
		clock = SystemClock{}
	}
	p = p.WithDefaults()
	bo := &backoff.ExponentialBackOff{
		InitialInterval:     p.InitialInterval,
		RandomizationFactor: p.Jitter,
		Multiplier:          p.Multiplier,
		MaxInterval:         p.MaxInterval,
		MaxElapsedTime:      p.MaxElapsed,
		Stop:                backoff.Stop,
		Clock:               clock,
	}
	bo.Reset()
	return &Budget{policy: p, clock: clock, bo: bo}
}

// Policy returns the policy in force, defaults filled in.
func (b *Budget) Policy() Policy { return b.policy }

// Attempts returns the failures counted since the budget was last reset.
func (b *Budget) Attempts() int { return b.attempts }

// Failed counts one failed dial or lost connection and returns how long to
// wait before the next dial. ok is false when the budget is exhausted.
// A loss of a connection that had been stable resets the budget first.
func (b *Budget) Failed() (wait time.Duration, ok bool) {
	if !b.connectedAt.IsZero() {
		if b.clock.Now().Sub(b.connectedAt) >= b.policy.StableAfter {
			b.Reset()
		}
		b.connectedAt = time.Time{}
	}
	if b.attempts == 0 {
		// MaxElapsed counts from the first failure, not from construction.
		b.bo.Reset()
	}
	b.attempts++
	if b.policy.MaxAttempts >= 0 && b.attempts > b.policy.MaxAttempts {
		return 0, false
	}
	wait = b.bo.NextBackOff()
	if wait == backoff.Stop {
		return 0, false
	}
	return wait, true
}

// Lost counts the loss of a live connection and returns how long to wait
// before redialling. A connection that had been stable for StableAfter
// starts a fresh budget. The first loss of a fresh budget redials at once;
// later ones back off like failed dials, so a server that dies right after
// every connect exhausts the budget instead of flapping forever.
func (b *Budget) Lost() (wait time.Duration, ok bool) {
	if !b.connectedAt.IsZero() && b.clock.Now().Sub(b.connectedAt) >= b.policy.StableAfter {
		b.Reset()
	}
	b.connectedAt = time.Time{}
	if b.attempts == 0 {
		b.bo.Reset()
		b.attempts++
		return 0, true
	}
	return b.Failed()
}

// Connected records that a dial succeeded now. The budget is not reset yet:
// see Failed.
func (b *Budget) Connected() { b.connectedAt = b.clock.Now() }

// Reset starts a fresh budget, as Reconnect and Enable do.
func (b *Budget) Reset() {
	b.attempts = 0
	b.connectedAt = time.Time{}
	b.bo.Reset()
}
