package frame

import (
	"strconv"
	"sync"
)

// TooLarge is the error of a message from a server longer than the limit
// set for it. The transport discarded it while reading, before the bytes
// were held; the connection stays usable.
type TooLarge struct {
	// Size is the message's length in bytes, or, with AtLeast, how much
	// was read before the reading stopped.
	Size    int64
	AtLeast bool
	Limit   int64
}

func (e *TooLarge) Error() string {
	size := strconv.FormatInt(e.Size, 10) + " bytes"
	if e.AtLeast {
		size = "more than " + strconv.FormatInt(e.Limit, 10) + " bytes"
	}
	return "message too large: " + size + ", limit " + strconv.FormatInt(e.Limit, 10)
}

// TooLargeAnswers remembers which requests were answered with a message
// too large to read, by JSON-RPC id, from the reader that discarded the
// answer to the transport method that waits for it. A transport's read
// loop cannot fail one request by itself; it answers the request with a
// JSON-RPC error instead, and the waiting method swaps that error for the
// TooLarge recorded here. The server cannot write into this table: it
// only learns what the reader measured.
type TooLargeAnswers struct {
	mu sync.Mutex
	m  map[string]*TooLarge
}

// Record notes that the answer to request id was too large.
func (t *TooLargeAnswers) Record(id string, e *TooLarge) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]*TooLarge)
	}
	t.m[id] = e
}

// Take returns and forgets what was recorded for id, if anything.
func (t *TooLargeAnswers) Take(id string) *TooLarge {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[id]
	if e != nil {
		delete(t.m, id)
	}
	return e
}
