package lifecycle

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Policy. A zero field in a Policy means its default.
const (
	// DefaultInitialInterval is the wait before the first retry.
	DefaultInitialInterval = 250 * time.Millisecond
	// DefaultMaxInterval caps the wait between retries.
	DefaultMaxInterval = 30 * time.Second
	// DefaultMultiplier grows the wait after each failed attempt.
	DefaultMultiplier = 2.0
	// DefaultJitter spreads waits by ±20% so a fleet does not retry in step.
	DefaultJitter = 0.2
	// DefaultMaxAttempts is how many failed dials in a row exhaust the budget.
	DefaultMaxAttempts = 10
	// DefaultStableAfter is how long a connection must stay up, if it
	// answered nothing after its handshake, to count as healthy.
	DefaultStableAfter = time.Second
	// DefaultFastInterval is the first wait of the fast ramp after the loss
	// of a healthy connection.
	DefaultFastInterval = 5 * time.Millisecond
	// DefaultProbeInterval caps the slow probe's wait in PermanentlyFailed.
	DefaultProbeInterval = 5 * time.Minute
)

// Policy is a server's reconnect policy. The zero Policy is the default one.
type Policy struct {
	// InitialInterval is the wait before the first retry. Defaults to
	// DefaultInitialInterval.
	InitialInterval time.Duration
	// MaxInterval caps each wait. Defaults to DefaultMaxInterval.
	MaxInterval time.Duration
	// Multiplier grows the wait after each attempt; at least 1. Defaults to
	// DefaultMultiplier.
	Multiplier float64
	// Jitter is the randomization factor in [0, 1): each wait is drawn from
	// [w·(1-Jitter), w·(1+Jitter)]. Defaults to DefaultJitter; a negative
	// value means no jitter.
	Jitter float64
	// MaxAttempts is how many failed dials in a row exhaust the budget. A
	// negative value means forever. Defaults to DefaultMaxAttempts.
	MaxAttempts int
	// MaxElapsed exhausts the budget once this much time has passed since
	// its first failure, whatever the attempt count. Zero means no limit.
	MaxElapsed time.Duration
	// StableAfter is how long a connection must stay up to count as
	// healthy when it answered no request after its handshake (one that
	// answered is healthy at once). The loss of a healthy connection starts
	// a fresh budget; the loss of any other counts as a failed attempt, which
	// is how a crash loop runs out of budget. See Budget. Defaults to
	// DefaultStableAfter.
	StableAfter time.Duration
	// FastInterval is the first wait of the ramp of quick retries after the
	// loss of a healthy connection: it doubles until it reaches
	// InitialInterval, then the normal backoff takes over. Ramp dials do not
	// count against MaxAttempts. Defaults to DefaultFastInterval; a negative
	// value turns the ramp off.
	FastInterval time.Duration
	// ProbeInterval caps the wait of the slow probe that keeps dialling a
	// PermanentlyFailed server; the probe starts at MaxInterval and grows to
	// it. Defaults to DefaultProbeInterval; a negative value turns the probe
	// off.
	ProbeInterval time.Duration
}

// WithDefaults returns p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	if p.InitialInterval == 0 {
		p.InitialInterval = DefaultInitialInterval
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = DefaultMaxInterval
	}
	if p.Multiplier == 0 {
		p.Multiplier = DefaultMultiplier
	}
	if p.Jitter == 0 {
		p.Jitter = DefaultJitter
	} else if p.Jitter < 0 {
		p.Jitter = 0
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.StableAfter == 0 {
		p.StableAfter = DefaultStableAfter
	}
	if p.FastInterval == 0 {
		p.FastInterval = DefaultFastInterval
	}
	if p.ProbeInterval == 0 {
		p.ProbeInterval = DefaultProbeInterval
	}
	return p
}

// Validate reports the first field that makes no sense, by name.
func (p Policy) Validate() error {
	var errs []error
	if p.InitialInterval < 0 {
		errs = append(errs, fmt.Errorf("initialInterval: must not be negative, got %v", p.InitialInterval))
	}
	if p.MaxInterval < 0 {
		errs = append(errs, fmt.Errorf("maxInterval: must not be negative, got %v", p.MaxInterval))
	}
	if p.InitialInterval > 0 && p.MaxInterval > 0 && p.MaxInterval < p.InitialInterval {
		errs = append(errs, fmt.Errorf("maxInterval: %v is less than initialInterval %v", p.MaxInterval, p.InitialInterval))
	}
	if p.Multiplier != 0 && p.Multiplier < 1 {
		errs = append(errs, fmt.Errorf("multiplier: must be at least 1, got %v", p.Multiplier))
	}
	if p.Jitter >= 1 {
		errs = append(errs, fmt.Errorf("jitter: must be less than 1, got %v", p.Jitter))
	}
	if p.MaxElapsed < 0 {
		errs = append(errs, fmt.Errorf("maxElapsed: must not be negative, got %v", p.MaxElapsed))
	}
	if p.StableAfter < 0 {
		errs = append(errs, fmt.Errorf("stableAfter: must not be negative, got %v", p.StableAfter))
	}
	return errors.Join(errs...)
}

// DefaultTimeoutThreshold is how many calls in a row that time out make a
// connection count as dead.
const DefaultTimeoutThreshold = 3
