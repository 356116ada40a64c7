package frame

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Framing says how a stream is cut into messages.
type Framing int

const (
	// Lines: one JSON-RPC message per line, as over stdio.
	Lines Framing = iota
	// Events: Server-Sent Events, one JSON-RPC message in the data of an
	// event; an empty line ends an event.
	Events
)

// Bounds of what a Limiter keeps of a message to find its id (its start,
// and the end of one it discards), and of its read buffer.
const (
	keepHead = 4 << 10
	keepTail = 4 << 10
	readSize = 32 << 10
)

// Limiter is a stream of messages with every message bounded to Limit
// bytes, enforced as the bytes pass: the reader above it never holds more
// than Limit bytes of one message.
//
// A longer message is cut at the limit and ended there (the reader above
// drops the truncated JSON it then gets), and the rest of it is discarded
// up to its own end. If the message was the answer to one of our requests,
// and its id could be found in what was kept of it (its start; or its
// end, where TypeScript servers put the id), the Limiter answers the
// request in its place with a JSON-RPC error and records in Answers why,
// so that the transport fails the request with a *TooLarge naming the
// size and the limit, and the connection goes on.
type Limiter struct {
	r       io.Reader
	framing Framing
	limit   int64
	answers *TooLargeAnswers
	log     *slog.Logger

	// raw and head come from pools at the first Read and go back at the
	// end of the stream (the first error from r, which Read returns from
	// then on as err): an HTTP response stream lives for one request, and
	// must not cost a read buffer of its own each time.
	rawp, headp *[]byte
	err         error

	raw     []byte // read from r
	buf     []byte // of raw, not yet passed on
	pending []byte // to hand out before reading more

	msg        int64 // bytes of the current message passed on
	nl         int   // Events: newlines just passed (a second one ends the event)
	head       []byte
	discarding bool
	size       int64 // the discarded message's length so far
	tail       []byte
}

// NewLimiter bounds the messages of r to limit bytes. answers receives
// the requests whose answers were cut; log hears of every cut.
func NewLimiter(r io.Reader, framing Framing, limit int64, answers *TooLargeAnswers, log *slog.Logger) *Limiter {
	return &Limiter{r: r, framing: framing, limit: limit, answers: answers, log: log}
}

// Buffers of Limiters, shared by all: see Limiter.rawp.
var (
	rawPool  = sync.Pool{New: func() any { b := make([]byte, readSize); return &b }}
	headPool = sync.Pool{New: func() any { b := make([]byte, 0, keepHead); return &b }}
)

func (l *Limiter) Read(p []byte) (int, error) {
	if l.rawp == nil {
		if l.err != nil {
			return 0, l.err
		}
		l.rawp, l.headp = rawPool.Get().(*[]byte), headPool.Get().(*[]byte)
		l.raw, l.head = *l.rawp, (*l.headp)[:0]
	}
	for {
		if len(l.pending) > 0 {
			n := copy(p, l.pending)
			l.pending = l.pending[n:]
			return n, nil
		}
		if len(l.buf) == 0 {
			n, err := l.r.Read(l.raw)
			l.buf = l.raw[:n]
			if n == 0 {
				if err == nil {
					continue
				}
				l.release(err)
				return 0, err
			}
		}
		if l.discarding {
			l.discard()
			continue
		}
		if n := l.pass(p); n > 0 {
			return n, nil
		}
	}
}

// release ends the stream with err, which every later Read returns, and
// gives the buffers back. Nothing of them is in use: buf is empty (raw is
// read only when it is), and head is kept only while a message is passed.
func (l *Limiter) release(err error) {
	l.err = err
	*l.headp = l.head[:0]
	rawPool.Put(l.rawp)
	headPool.Put(l.headp)
	l.rawp, l.headp, l.raw, l.buf, l.head = nil, nil, nil, nil, nil
}

// end finds where the current message ends in b: the index just past its
// last byte, or -1. It tracks, for Events, the newlines that straddle
// reads; nl is updated for the bytes up to the end (or all of b).
func (l *Limiter) end(b []byte) int {
	if l.framing == Lines {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return i + 1
		}
		return -1
	}
	for i, c := range b {
		switch c {
		case '\n':
			l.nl++
			if l.nl == 2 {
				l.nl = 0
				return i + 1
			}
		case '\r':
		default:
			l.nl = 0
		}
	}
	return -1
}

// pass hands on as much of buf as fits in p, keeping to the limit.
func (l *Limiter) pass(p []byte) int {
	seg := l.buf[:min(len(l.buf), len(p))]
	nl := l.nl
	end := l.end(seg)
	body := seg
	if end >= 0 {
		body = seg[:end]
	}
	if l.msg+int64(len(body)) > l.limit {
		// The message goes over: pass on what is allowed, discard the rest.
		l.nl = nl
		allowed := l.limit - l.msg
		n := copy(p, l.buf[:allowed])
		l.end(l.buf[:n]) // the newlines passed on, for the discard
		l.keepHead(l.buf[:n])
		l.buf = l.buf[n:]
		l.discarding, l.size, l.tail = true, l.msg+int64(n), l.tail[:0]
		return n
	}
	n := copy(p, body)
	l.keepHead(body)
	l.buf = l.buf[n:]
	if end >= 0 {
		l.msg, l.head = 0, l.head[:0]
	} else {
		l.msg += int64(n)
	}
	return n
}

// discard drops buf up to the end of the message being discarded.
func (l *Limiter) discard() {
	end := l.end(l.buf)
	if end < 0 {
		l.keepTail(l.buf)
		l.size += int64(len(l.buf))
		l.buf = nil
		return
	}
	l.keepTail(l.buf[:end])
	l.size += int64(end)
	if l.framing == Lines {
		l.size-- // the newline; an event's size is the whole event's
	}
	l.buf = l.buf[end:]
	l.finish()
	l.discarding, l.msg, l.head, l.tail = false, 0, l.head[:0], l.tail[:0]
}

func (l *Limiter) keepHead(b []byte) {
	if room := keepHead - len(l.head); room > 0 {
		l.head = append(l.head, b[:min(room, len(b))]...)
	}
}

func (l *Limiter) keepTail(b []byte) {
	if len(b) >= keepTail {
		l.tail = append(l.tail[:0], b[len(b)-keepTail:]...)
		return
	}
	l.tail = append(l.tail, b...)
	if over := len(l.tail) - keepTail; over > 0 {
		l.tail = l.tail[:copy(l.tail, l.tail[over:])]
	}
}

// finish ends the cut message, and answers the request it answered, if
// it can tell which.
func (l *Limiter) finish() {
	e := &TooLarge{Size: l.size, Limit: l.limit}
	head := l.head
	if l.framing == Events {
		head = eventData(head)
	}
	response, id := scanHead(head)
	if id == nil {
		id = tailID(bytes.TrimRight(l.tail, "\r\n"))
	}
	// End what was passed on: a line, or for events the data line and the
	// event (the newlines already passed with it count).
	l.pending = append(l.pending[:0], '\n')
	if l.framing == Events {
		l.pending = append(l.pending, '\n')
	}
	var reqID mcp.RequestId
	if !response || id == nil || json.Unmarshal(id, &reqID) != nil || reqID.IsNil() {
		l.log.Warn("mcpfleet: discarded a message over the size limit", "size", e.Size, "limit", e.Limit)
		return
	}
	l.answers.Record(reqID.String(), e)
	if l.framing == Events {
		l.pending = append(l.pending, "data: "...)
	}
	l.pending = append(l.pending, `{"jsonrpc":"2.0","id":`...)
	l.pending = append(l.pending, id...)
	l.pending = append(l.pending, `,"error":{"code":-32603,"message":"`...)
	l.pending = append(l.pending, e.Error()...)
	l.pending = append(l.pending, "\"}}\n"...)
	if l.framing == Events {
		l.pending = append(l.pending, '\n')
	}
	l.log.Warn("mcpfleet: discarded an answer over the size limit; its request fails",
		"size", e.Size, "limit", e.Limit, "id", reqID.String())
}

// eventData returns the value of the first data field of the start of an
// SSE event.
func eventData(b []byte) []byte {
	for len(b) > 0 {
		line := b
		next := []byte(nil)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, next = b[:i], b[i+1:]
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			return bytes.TrimPrefix(v, []byte(" "))
		}
		b = next
	}
	return nil
}
