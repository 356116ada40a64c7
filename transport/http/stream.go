package http

import (
	"sync"
)

// streamPhase is where the notification stream is in its one-way life.
type streamPhase int

const (
	// streamPending: not opened yet.
	streamPending streamPhase = iota
	// streamOpen: the server accepted the stream and it is being read.
	streamOpen
	// streamRefused: the server does not offer a stream (405, an error
	// status, a JSON-RPC error for subscriptions/listen). Stream loss
	// cannot be detected; a restart shows at the next call.
	streamRefused
	// streamEnded: the stream was open and broke off.
	streamEnded
)

// streamState tracks the notification stream. Phases only move forward:
// pending → open → ended, or pending → refused.
type streamState struct {
	mu      sync.Mutex    // guards the fields below
	phase   streamPhase   //
	why     error         // why the stream was refused or ended
	changed chan struct{} // closed and replaced at every change
}

func newStreamState() *streamState {
	return &streamState{changed: make(chan struct{})}
}

// get returns the phase, why it is there, and a channel closed at the next
// change.
func (s *streamState) get() (streamPhase, error, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase, s.why, s.changed
}

// set moves to phase if that is a step forward from the current phase, and
// reports whether it did.
func (s *streamState) set(phase streamPhase, why error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := false
	switch s.phase {
	case streamPending:
		ok = phase == streamOpen || phase == streamRefused
	case streamOpen:
		ok = phase == streamEnded
	}
	if !ok {
		return false
	}
	s.phase, s.why = phase, why
	close(s.changed)
	s.changed = make(chan struct{})
	return true
}
