package machine

import (
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Health tracks call outcomes of one runtime generation. Outcomes of any
// other generation are ignored, so a late timeout from a dead connection
// can never count against its replacement. Not safe for concurrent use.
type Health struct {
	// Threshold is the number of consecutive timeouts that trips it;
	// zero means lifecycle.DefaultTimeoutThreshold.
	Threshold int

	generation  uint64
	timeouts    int
	lastSuccess time.Time
	lastFailure error
}

// Reset starts tracking a new generation from a clean record.
func (h *Health) Reset(generation uint64) {
	h.generation = generation
	h.timeouts = 0
	h.lastSuccess = time.Time{}
	h.lastFailure = nil
}

// Generation returns the generation being tracked.
func (h *Health) Generation() uint64 { return h.generation }

// Success records a completed call of generation gen at now. It reports
// false, changing nothing, if gen is not the tracked generation.
func (h *Health) Success(gen uint64, now time.Time) bool {
	if gen != h.generation {
		return false
	}
	h.timeouts = 0
	h.lastSuccess = now
	return true
}

// Timeout records a call of generation gen that timed out, and reports
// whether that makes the threshold of consecutive timeouts. A timeout of
// another generation changes nothing and reports false.
func (h *Health) Timeout(gen uint64, err error) (tripped bool) {
	if gen != h.generation {
		return false
	}
	h.timeouts++
	h.lastFailure = err
	t := h.Threshold
	if t <= 0 {
		t = lifecycle.DefaultTimeoutThreshold
	}
	return h.timeouts >= t
}

// ConsecutiveTimeouts returns the current run of timeouts.
func (h *Health) ConsecutiveTimeouts() int { return h.timeouts }

// LastSuccess returns when the tracked generation last completed a call.
func (h *Health) LastSuccess() time.Time { return h.lastSuccess }

// LastFailure returns the last timeout error of the tracked generation.
func (h *Health) LastFailure() error { return h.lastFailure }
