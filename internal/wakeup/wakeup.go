// Package wakeup is what the shared stores (store.Memory, store/redis,
// store/postgres) wake their waiters with: the replicas waiting for a
// lease or for an upstream server register here under a subject, and the
// store's notification (a lease released, a server back up, a listening
// connection made again) wakes them. One implementation, so that the
// three stores cannot drift apart in how a wake-up is delivered.
package wakeup

import (
	"context"
	"sync"
	"time"
)

// Set holds the waiters of every subject. The zero value is ready to use;
// it is safe for concurrent use.
type Set struct {
	mu      sync.Mutex // guards waiters
	waiters map[string]map[*chan struct{}]struct{}
}

// Watch registers a waiter for subject until stop is called. The channel
// receives, without blocking the waker (one wake-up may stand for
// several), each time subject is woken.
func (s *Set) Watch(subject string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.waiters == nil {
		s.waiters = map[string]map[*chan struct{}]struct{}{}
	}
	if s.waiters[subject] == nil {
		s.waiters[subject] = map[*chan struct{}]struct{}{}
	}
	s.waiters[subject][&ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.waiters[subject], &ch)
		if len(s.waiters[subject]) == 0 {
			delete(s.waiters, subject)
		}
	}
}

// Wake wakes every waiter of subject.
func (s *Set) Wake(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	notify(s.waiters[subject])
}

// WakeAll wakes every waiter of every subject: what a store does when it
// may have missed notifications (its listening connection was lost).
func (s *Set) WakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.waiters {
		notify(ws)
	}
}

func notify(ws map[*chan struct{}]struct{}) {
	for w := range ws {
		select {
		case *w <- struct{}{}:
		default:
		}
	}
}

// Wait waits for d to pass or for a wake-up on woken, and returns nil;
// or for ctx to end, and returns its error. A Leases implementation waits
// so between its tries for a held lease.
func Wait(ctx context.Context, woken <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-woken:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
