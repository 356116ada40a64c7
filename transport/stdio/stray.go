package stdio

import (
	"bytes"
	"io"
	"sync"
)

// Bounds of what a Conn keeps of the lines its server wrote to stdout that
// were not JSON-RPC.
const (
	strayKeep      = 5   // lines kept, the first ones
	strayLineBytes = 200 // bytes kept of each
)

// strayTap watches a server's stdout as it passes to mcp-go, for lines that
// are not JSON-RPC messages: a banner ("Server running on stdio"), a log
// line printed to the wrong stream. mcp-go skips such a line in silence,
// which is right, but leaves a person who wonders why the handshake never
// came with nothing to go on. The tap counts them and keeps the first few,
// for the error of a failed handshake and for the status.
//
// A line is a message if its first byte other than white space is '{' or
// '[' (a batch); the tap looks at nothing else of it, and passes every byte
// on untouched.
type strayTap struct {
	r io.Reader
	// watch, if set, learns of each stray line and of the first message.
	watch *strayWatch

	// Read's own, as only one goroutine reads.
	atStart  bool   // the next byte begins a line
	deciding bool   // the line began with white space only, so far
	inStray  bool   // the current line is stray
	spoke    bool   // a message began: watch was told
	cur      []byte // of the current stray line, what is kept

	mu    sync.Mutex // guards first and total
	first []string
	total int
}

func newStrayTap(r io.Reader, watch *strayWatch) *strayTap {
	return &strayTap{r: r, watch: watch, atStart: true}
}

func (t *strayTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.scan(p[:n])
	if err != nil && t.inStray {
		t.endLine() // a last line with no newline
	}
	return n, err
}

// scan follows the lines of b.
func (t *strayTap) scan(b []byte) {
	for len(b) > 0 {
		if t.atStart || t.deciding {
			t.atStart = false
			i := 0
			for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
				i++
			}
			if i == len(b) {
				t.deciding = true // white space so far: the next read decides
				return
			}
			t.deciding = false
			if b[i] == '\n' {
				b = b[i+1:] // an empty line is nothing
				t.atStart = true
				continue
			}
			t.inStray = b[i] != '{' && b[i] != '['
			if !t.inStray && !t.spoke {
				t.spoke = true
				if t.watch != nil {
					t.watch.message()
				}
			}
			b = b[i:]
		}
		nl := bytes.IndexByte(b, '\n')
		line := b
		if nl >= 0 {
			line = b[:nl]
		}
		if t.inStray && len(t.cur) < strayLineBytes {
			t.cur = append(t.cur, line[:min(len(line), strayLineBytes-len(t.cur))]...)
		}
		if nl < 0 {
			return
		}
		if t.inStray {
			t.endLine()
		}
		b = b[nl+1:]
		t.atStart = true
	}
}

// endLine records the stray line that just ended.
func (t *strayTap) endLine() {
	line := string(bytes.TrimRight(t.cur, "\r"))
	t.cur, t.inStray = t.cur[:0], false
	t.mu.Lock()
	t.total++
	if len(t.first) < strayKeep {
		t.first = append(t.first, line)
	}
	t.mu.Unlock()
	if t.watch != nil {
		t.watch.stray(line)
	}
}

// lines returns the first stray lines and how many there were.
func (t *strayTap) lines() ([]string, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.first...), t.total
}
