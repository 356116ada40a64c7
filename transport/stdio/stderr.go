package stdio

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// truncatedMark ends a stderr line that was longer than MaxStderrLine.
const truncatedMark = " …[truncated]"

// ring keeps the most recent stderr lines within a line count and a byte
// budget. The child can write without limit; we hold a bounded amount.
type ring struct {
	maxLines int
	maxBytes int
	// written, if set, is called after each read of stderr that got bytes
	// (the Conn's stray watch: the child is busy, not silent). Set before
	// the drain starts.
	written func()

	mu      sync.Mutex // guards everything below
	lines   []string   // circular; len(lines) == maxLines once allocated
	start   int        // index of the oldest line
	n       int        // lines held
	bytes   int        // bytes held
	total   int64      // bytes ever read from the pipe, for tests and stats
	dropped int64      // lines evicted to respect the budget
}

func newRing(maxLines, maxBytes int) *ring {
	return &ring{maxLines: maxLines, maxBytes: maxBytes}
}

// add appends a line, evicting the oldest until both budgets hold.
func (r *ring) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lines == nil {
		r.lines = make([]string, r.maxLines)
	}
	if len(line) > r.maxBytes {
		line = line[:r.maxBytes]
	}
	for r.n > 0 && (r.n == r.maxLines || r.bytes+len(line) > r.maxBytes) {
		r.bytes -= len(r.lines[r.start])
		r.lines[r.start] = ""
		r.start = (r.start + 1) % r.maxLines
		r.n--
		r.dropped++
	}
	r.lines[(r.start+r.n)%r.maxLines] = line
	r.n++
	r.bytes += len(line)
}

func (r *ring) count(n int) {
	r.mu.Lock()
	r.total += int64(n)
	r.mu.Unlock()
	if n > 0 && r.written != nil {
		r.written()
	}
}

// last returns up to k most recent lines, oldest first; k < 0 means all.
func (r *ring) last(k int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k < 0 || k > r.n {
		k = r.n
	}
	out := make([]string, k)
	for i := range k {
		out[i] = r.lines[(r.start+r.n-k+i)%r.maxLines]
	}
	return out
}

// stats returns the bytes held, bytes ever read and lines dropped.
func (r *ring) stats() (held int, total, dropped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes, r.total, r.dropped
}

// countingReader counts the bytes read, so the ring can report how much
// the child wrote even when most of it was dropped.
type countingReader struct {
	r    io.Reader
	ring *ring
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.ring.count(n)
	return n, err
}

// drainStderr reads the child's stderr until EOF or until the pipe is
// closed by Close, splitting it into lines for the ring (and the logger).
// It never stops reading early: a child blocked on a full stderr pipe stops
// answering on stdout too, which would look like a hang.
func drainStderr(src io.Reader, r *ring, logger *slog.Logger, level slog.Level, logRate float64, pid int) {
	br := bufio.NewReaderSize(countingReader{src, r}, 4096)
	cur := make([]byte, 0, MaxStderrLine)
	truncated := false
	var (
		limit    *rate.Limiter // nil: every line is logged
		unlogged int
		lastNote time.Time
	)
	if logRate > 0 {
		limit = rate.NewLimiter(rate.Limit(logRate), max(int(2*logRate), 1))
	}
	emit := func() {
		line := strings.TrimRight(string(cur), "\r")
		if truncated {
			line += truncatedMark
		}
		r.add(line)
		switch {
		case logger == nil:
		case limit == nil || limit.Allow():
			logger.Log(context.Background(), level, "mcp server stderr", "pid", pid, "line", line)
		default:
			unlogged++
			if now := time.Now(); now.Sub(lastNote) >= time.Second {
				logger.Log(context.Background(), level, "mcp server stderr over the log rate; lines kept, not logged",
					"pid", pid, "unlogged", unlogged)
				unlogged, lastNote = 0, now
			}
		}
		cur = cur[:0]
		truncated = false
	}
	for {
		frag, err := br.ReadSlice('\n')
		complete := len(frag) > 0 && frag[len(frag)-1] == '\n'
		if complete {
			frag = frag[:len(frag)-1]
		}
		if room := MaxStderrLine - len(cur); len(frag) > room {
			frag = frag[:room]
			truncated = true
		}
		cur = append(cur, frag...)
		if complete {
			emit()
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(cur) > 0 || truncated {
				emit()
			}
			return
		}
	}
}
