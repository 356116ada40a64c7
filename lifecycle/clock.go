package lifecycle

import "time"

// Clock is the time source of budgets and of the manager's waits. Tests
// inject a fake one so that no test waits on a real backoff.
type Clock interface {
	Now() time.Time
	// NewTimer returns a channel that receives once d has passed, and a
	// stop function that releases the timer early.
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
