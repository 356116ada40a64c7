// Package fakeclock is a lifecycle.Clock whose time moves only when a test
// says so, so that no test waits on a real backoff.
package fakeclock

import (
	"context"
	"sync"
	"time"
)

// Clock is a manual clock. The zero value is not usable; call New.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*timer
	changed chan struct{} // closed and replaced whenever a timer is added
}

type timer struct {
	at      time.Time
	c       chan time.Time
	f       func() // AfterFunc's: run instead of sending on c
	stopped bool
}

// New returns a clock that reads start.
func New(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a channel that fires once the clock has been advanced by d.
func (c *Clock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
		t.stopped = true
	} else {
		c.timers = append(c.timers, t)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	stop := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
	return t.c, stop
}

// AfterFunc runs f in its own goroutine once the clock has been advanced
// by d (at once if d <= 0), unless stop is called first; stop reports
// whether it stopped the call. It counts as a pending timer until then.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.now.Add(d), f: f}
	if d <= 0 {
		t.stopped = true
		go f()
	} else {
		c.timers = append(c.timers, t)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock forward by d and fires every timer that is due
// (an AfterFunc's function starts in its own goroutine).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			if t.f != nil {
				go t.f()
			} else {
				t.c <- c.now
			}
		default:
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// Pending returns how many timers are waiting to fire.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// WaitForTimers blocks until at least n timers are pending or ctx ends.
func (c *Clock) WaitForTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if c.Pending() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
