package stdio

import (
	"context"
	"fmt"
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

// TestStderrExcerpt: the excerpt an ExitError quotes keeps the last lines
// and, when a stack trace pushed it out of them, the line that explains the
// failure, within about 1 KiB.
func TestStderrExcerpt(t *testing.T) {
	trace := []string{"file:///srv/index.js:12", "    throw new Error(msg);", "    ^", "",
		"Error: GITHUB_TOKEN is not set"}
	for i := range 12 {
		trace = append(trace, fmt.Sprintf("    at frame%d (node:internal/x:%d:5)", i, i))
	}
	trace = append(trace, "Node.js v20.20.2")
	for _, tt := range []struct {
		name  string
		lines []string
		want  []string
	}{
		{"none", nil, nil},
		{"few", []string{"1", "2", "3"}, []string{"1", "2", "3"}},
		{"last lines only", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"},
			[]string{"3", "4", "5", "6", "7", "8", "9", "10"}},
		{"the error line before the trace", trace,
			append([]string{"Error: GITHUB_TOKEN is not set", "…"}, trace[len(trace)-6:]...)},
		{"the error line just before the last lines", []string{"a", "fatal: no config", "b", "c", "d", "e", "f", "g", "h"},
			[]string{"fatal: no config", "b", "c", "d", "e", "f", "g", "h"}},
		{"the error line among the last lines", []string{"a", "b", "c", "panic: boom", "d"},
			[]string{"a", "b", "c", "panic: boom", "d"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := excerpt(tt.lines); !slices.Equal(got, tt.want) {
				t.Errorf("excerpt =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	huge := strings.Repeat("z", 2*excerptBytes)
	got := excerpt([]string{"old", huge})
	if len(got) != 1 || len(got[0]) != excerptBytes+len(truncatedMark) {
		t.Errorf("excerpt of a huge line: %d lines, %d bytes", len(got), len(strings.Join(got, "")))
	}
	big := slices.Repeat([]string{strings.Repeat("y", 300)}, 20)
	if got := excerpt(append([]string{"Error: why"}, big...)); len(strings.Join(got, "")) > excerptBytes+50 || got[0] != "Error: why" {
		t.Errorf("excerpt of long lines: %d bytes, first %q", len(strings.Join(got, "")), got[0])
	}
}
