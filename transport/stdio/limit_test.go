package stdio

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/frame"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// An answer four times the limit fails its own request with the error that
// says so, in bounded time, and the connection goes on serving.
func TestAnswerOverTheSizeLimit(t *testing.T) {
	const limit = 1 << 20
	c := dial(t, faultSpec(faultserver.ModeNormal), append(eofClose, WithMaxMessageBytes(limit))...)
	cl := mustConnect(t, c)
	defer cl.Close()

	_, err := callTool(testCtx(t, waitBound), cl, "big", map[string]any{"bytes": 4 * limit})
	var tl *frame.TooLarge
	if !errors.As(err, &tl) {
		t.Fatalf("call = %v, want a *frame.TooLarge", err)
	}
	if tl.Limit != limit || tl.Size <= 4*limit || tl.AtLeast {
		t.Fatalf("error %+v: want the exact size over 4 MiB and the limit", tl)
	}
	if got, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "still here"}); err != nil || got != "still here" {
		t.Fatalf("next call on the same connection = %q, %v", got, err)
	}
	if got, err := callTool(testCtx(t, waitBound), cl, "big", map[string]any{"bytes": limit / 2}); err != nil || len(got) != limit/2 {
		t.Fatalf("an answer under the limit = %d bytes, %v", len(got), err)
	}
	select {
	case <-c.Done():
		t.Fatalf("the connection died: %v", c.Err())
	default:
	}
}

// The host never holds the message: while a 4 MiB answer is read under a
// 128 KiB limit, the heap grows by a small multiple of the limit. Without
// the limit the same measurement sees the whole message, which shows it
// can tell the two apart.
func TestAnswerOverTheSizeLimitIsNotHeld(t *testing.T) {
	const limit, size = 128 << 10, 4 << 20
	peak := func(t *testing.T, opts ...Option) uint64 {
		c := dial(t, faultSpec(faultserver.ModeNormal), append(eofClose, opts...)...)
		cl := mustConnect(t, c)
		defer cl.Close()
		return heapGrowth(func() {
			_, _ = callTool(testCtx(t, 4*waitBound), cl, "big", map[string]any{"bytes": size})
		})
	}
	if grew := peak(t, WithMaxMessageBytes(limit)); grew > 8*limit {
		t.Errorf("with a 128 KiB limit the heap grew by %d KiB reading a 4 MiB answer", grew>>10)
	} else {
		t.Logf("with a 128 KiB limit the heap grew by %.1f MiB", float64(grew)/(1<<20))
	}
	if grew := peak(t); grew < size {
		t.Errorf("without a limit the heap grew by only %d KiB: the measurement cannot see the message", grew>>10)
	}
}

// heapGrowth runs f and returns how far the bytes of heap objects rose
// above where they were before it, sampled while f runs.
func heapGrowth(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	if v := read(); v > peak.Load() {
		peak.Store(v)
	}
	close(done)
	<-stopped
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}
