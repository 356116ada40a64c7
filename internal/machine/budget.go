package machine

import (
	"github.com/mcpfleet/mcpfleet/lifecycle"

	"time"

	"github.com/cenkalti/backoff/v4"
)

// Budget schedules the reconnects of one slot under a lifecycle.Policy. It is not safe
// for concurrent use; the slot guards it with its own lock.
//
// The budget tells a crash loop from a server that keeps coming back, by how
// each connection ended:
//
//   - A connection is healthy once it answered a request after its
//     handshake, or stayed up for lifecycle.Policy.StableAfter. Its loss is an ordinary
//     event in a server's life (a restart, a deploy, a kill from outside):
//     it starts a fresh budget, redials at once, and if the server is still
//     down, retries on a fast ramp (lifecycle.Policy.FastInterval, doubling, up to
//     lifecycle.Policy.InitialInterval) before the normal backoff. Ramp dials do not
//     spend the budget, so a server that comes back after every loss never
//     reaches PermanentlyFailed, and a quick restart is found in
//     milliseconds.
//   - A connection lost before it was healthy (the server dies at start or
//     right after each handshake) counts as a failed attempt, and the
//     backoff goes on growing from where the last one left it. That is the
//     crash loop: it exhausts MaxAttempts and ends in PermanentlyFailed,
//     having spawned at most MaxAttempts+1 processes on a growing schedule.
//
// A successful dial therefore resets the backoff only once the connection
// proves healthy; resetting at the dial itself would let a crash loop redial
// at the initial interval for ever. In PermanentlyFailed the slow probe
// follows its own backoff, from MaxInterval growing to ProbeInterval.
type Budget struct {
	policy lifecycle.Policy
	clock  lifecycle.Clock
	// bo is the normal schedule and probe lifecycle.PermanentlyFailed's slow
	// probe, each made on its first use: most slots never fail, and the two
	// would cost them about 200 bytes. bo is reset at the start of every
	// run of failures (running), and probe is made as Reset leaves it, so
	// either one made late is the one made early.
	bo    *backoff.ExponentialBackOff
	probe *backoff.ExponentialBackOff

	attempts    int           // failures in this outage, ramp included
	spent       int           // of those, the ones that spend MaxAttempts
	ramp        time.Duration // the next ramp wait; 0 when not ramping
	running     bool          // bo was reset for the current run of failures
	connectedAt time.Time     // when the current connection came up; zero if none
}

// NewBudget returns a fresh budget. A nil clock means the system clock.
func NewBudget(p lifecycle.Policy, clock lifecycle.Clock) *Budget {
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	b := &Budget{policy: p.WithDefaults(), clock: clock}
	b.Reset()
	return b
}

// startRun resets the normal schedule for a new run of failures, making it
// on the first.
func (b *Budget) startRun() {
	if b.bo == nil {
		p := b.policy
		b.bo = &backoff.ExponentialBackOff{
			InitialInterval:     p.InitialInterval,
			RandomizationFactor: p.Jitter,
			Multiplier:          p.Multiplier,
			MaxInterval:         p.MaxInterval,
			MaxElapsedTime:      p.MaxElapsed,
			Stop:                backoff.Stop,
			Clock:               b.clock,
		}
	}
	b.bo.Reset()
	b.running = true
}

// lifecycle.Policy returns the policy in force, defaults filled in.
func (b *Budget) Policy() lifecycle.Policy { return b.policy }

// Attempts returns the failures counted in the current outage (failed dials
// and connections lost before they were healthy), ramp dials included, but
// never more than the policy's MaxAttempts, so that a status never reads
// "attempt 11 of 10".
func (b *Budget) Attempts() int {
	if b.policy.MaxAttempts >= 0 {
		return min(b.attempts, b.policy.MaxAttempts)
	}
	return b.attempts
}

// Failed counts one failed dial and returns how long to wait before the
// next one. ok is false when the budget is exhausted.
func (b *Budget) Failed() (wait time.Duration, ok bool) {
	b.attempts++
	if b.ramp > 0 && b.ramp < b.policy.InitialInterval {
		wait = b.ramp
		b.ramp *= 2
		return wait, true
	}
	b.ramp = 0
	if !b.running {
		// MaxElapsed counts from the first failure, not from construction.
		b.startRun()
	}
	b.spent++
	if b.policy.MaxAttempts >= 0 && b.spent > b.policy.MaxAttempts {
		return 0, false
	}
	wait = b.bo.NextBackOff()
	if wait == backoff.Stop {
		return 0, false
	}
	return wait, true
}

// Quick counts one failed dial that is retried on the fast ramp
// (lifecycle.Policy.FastInterval, doubling, up to InitialInterval) without
// spending MaxAttempts, and returns the wait. The owner uses it for a dial
// whose server exited before it answered its handshake, on its first
// connect: three such exits alike are a server that cannot start (a
// mistake to report at once), and they must come in milliseconds, not
// seconds. ok is false when the ramp is off (a negative FastInterval) or
// has reached InitialInterval: the owner then spends the budget (Failed).
func (b *Budget) Quick() (wait time.Duration, ok bool) {
	if b.policy.FastInterval <= 0 {
		return 0, false
	}
	if b.ramp <= 0 {
		b.ramp = b.policy.FastInterval
	}
	if b.ramp >= b.policy.InitialInterval {
		return 0, false
	}
	b.attempts++
	wait = b.ramp
	b.ramp *= 2
	return wait, true
}

// Lost counts the loss of a live connection and returns how long to wait
// before redialling; answered says whether the connection answered a request
// after its handshake. The loss of a healthy connection starts a fresh
// budget and redials at once, then ramps; the loss of one that was not
// healthy is a failed attempt like a failed dial, except that the first
// one of a fresh budget also redials at once.
func (b *Budget) Lost(answered bool) (wait time.Duration, ok bool) {
	healthy := answered ||
		(!b.connectedAt.IsZero() && b.clock.Now().Sub(b.connectedAt) >= b.policy.StableAfter)
	b.connectedAt = time.Time{}
	if healthy {
		b.Reset()
		b.attempts = 1
		b.ramp = max(b.policy.FastInterval, 0)
		return 0, true
	}
	if !b.running {
		b.startRun()
		b.attempts++
		b.spent++
		return 0, true
	}
	return b.Failed()
}

// Connected records that a dial succeeded now. It ends the ramp; the budget
// itself is reset only when the connection proves healthy (see Lost).
func (b *Budget) Connected() {
	b.connectedAt = b.clock.Now()
	b.ramp = 0
}

// ProbeWait returns the wait before the next slow probe of a
// PermanentlyFailed server: from MaxInterval, growing to ProbeInterval. ok
// is false when the probe is off (a negative ProbeInterval).
func (b *Budget) ProbeWait() (wait time.Duration, ok bool) {
	p := b.policy
	if p.ProbeInterval <= 0 {
		return 0, false
	}
	if b.probe == nil {
		b.probe = &backoff.ExponentialBackOff{
			InitialInterval:     min(p.MaxInterval, p.ProbeInterval),
			RandomizationFactor: p.Jitter,
			Multiplier:          p.Multiplier,
			MaxInterval:         p.ProbeInterval,
			Stop:                backoff.Stop,
			Clock:               b.clock,
		}
		b.probe.Reset()
	}
	return b.probe.NextBackOff(), true
}

// Reset starts a fresh budget, as Reconnect and Enable do.
func (b *Budget) Reset() {
	b.attempts = 0
	b.spent = 0
	b.ramp = 0
	b.running = false
	b.connectedAt = time.Time{}
	// The normal schedule is reset when the next run of failures starts.
	if b.probe != nil {
		b.probe.Reset()
	}
}
