package stdio

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

func TestDrainStderrLines(t *testing.T) {
	long := strings.Repeat("y", 3*MaxStderrLine)
	input := "first\r\n" + long + "\n\nlast without newline"
	want := []string{"first", strings.Repeat("y", MaxStderrLine) + truncatedMark, "", "last without newline"}
	for name, src := range map[string]io.Reader{
		"whole":        strings.NewReader(input),
		"byte by byte": iotest.OneByteReader(strings.NewReader(input)),
	} {
		t.Run(name, func(t *testing.T) {
			r := newRing(10, 1<<20)
			drainStderr(src, r, nil, 0, 0, 0)
			if got := r.last(-1); !slices.Equal(got, want) {
				t.Errorf("lines:\n got %q\nwant %q", got, want)
			}
			if _, total, _ := r.stats(); total != int64(len(input)) {
				t.Errorf("total = %d, want %d", total, len(input))
			}
		})
	}
}

// countHandler counts the records of each message.
type countHandler struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countHandler) WithGroup(string) slog.Handler            { return h }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[r.Message]++
	return nil
}

// A child flooding its stderr floods neither the host's logs nor its
// memory: past the log rate lines are kept in the ring but not logged, and
// a note says how many, at most once a second.
func TestStderrLogRate(t *testing.T) {
	const lines = 10_000
	input := strings.Repeat("noise\n", lines)
	h := &countHandler{n: map[string]int{}}
	r := newRing(10, 1<<20)
	start := time.Now()
	drainStderr(strings.NewReader(input), r, slog.New(h), slog.LevelInfo, 5, 0)
	elapsed := time.Since(start)
	logged := h.n["mcp server stderr"]
	if bound := 10 + int(5*elapsed.Seconds()) + 1; logged > bound || logged < 10 {
		t.Errorf("logged %d of %d lines at 5/s (burst 10) in %v; want 10..%d", logged, lines, elapsed, bound)
	}
	if notes := h.n["mcp server stderr over the log rate; lines kept, not logged"]; notes < 1 || notes > int(elapsed.Seconds())+1 {
		t.Errorf("%d notes of unlogged lines in %v", notes, elapsed)
	}
	if _, total, _ := r.stats(); total != int64(len(input)) {
		t.Errorf("the ring counted %d bytes, want every one", total)
	}
	if got := r.last(1); len(got) != 1 || got[0] != "noise" {
		t.Errorf("the ring lost the lines: %q", got)
	}
}

func TestRingBudgets(t *testing.T) {
	r := newRing(3, 10)
	for _, l := range []string{"a", "bb", "ccc", "dddd"} {
		r.add(l)
	}
	// 3 lines at most: "a" goes; then bb+ccc+dddd = 9 bytes fits.
	if got, want := r.last(-1), []string{"bb", "ccc", "dddd"}; !slices.Equal(got, want) {
		t.Errorf("after lines cap: %q, want %q", got, want)
	}
	r.add("eeeeeeee") // 8 bytes: only dddd could stay with it, and it does not fit either
	if got, want := r.last(-1), []string{"eeeeeeee"}; !slices.Equal(got, want) {
		t.Errorf("after bytes cap: %q, want %q", got, want)
	}
	r.add("this line alone is over the byte budget")
	if held, _, dropped := r.stats(); held > 10 || dropped != 5 {
		t.Errorf("held %d bytes, dropped %d lines; want <= 10 and 5", held, dropped)
	}
	if got := r.last(1); len(got) != 1 || got[0] != "this line " {
		t.Errorf("last(1) = %q", got)
	}
}

func TestStderrTail(t *testing.T) {
	lines := []string{"1", "2", "3", "4", "5", "6"}
	if got, want := stderrTail(lines), "2 | 3 | 4 | 5 | 6"; got != want {
		t.Errorf("stderrTail = %q, want %q", got, want)
	}
	huge := strings.Repeat("z", 2*errTailBytes)
	if got := stderrTail([]string{"old", huge}); len(got) != errTailBytes+len(truncatedMark) {
		t.Errorf("stderrTail of a huge line has %d bytes", len(got))
	}
	if got := stderrTail(nil); got != "" {
		t.Errorf("stderrTail(nil) = %q", got)
	}
}
