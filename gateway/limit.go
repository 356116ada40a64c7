package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/frame"
)

// Bounds of what the line limiter keeps of a line it discards, to find
// its id.
const (
	keepHead = 4 << 10
	keepTail = 4 << 10
)

// lineLimiter passes on the lines of r (one JSON-RPC message each, as over
// stdio) that are at most limit bytes long, newline excluded, and discards
// a longer one as it reads it: it never holds more than limit bytes of one
// line. For a discarded line it calls tooLarge with the message's id (nil
// if it could not be found) and its size.
type lineLimiter struct {
	r        *bufio.Reader
	limit    int64
	tooLarge func(id json.RawMessage, size int64)

	line    []byte // the line being read, up to limit
	pending []byte // a line to hand out
}

func newLineLimiter(r io.Reader, limit int64, tooLarge func(json.RawMessage, int64)) *lineLimiter {
	return &lineLimiter{r: bufio.NewReaderSize(r, 64<<10), limit: limit, tooLarge: tooLarge}
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if err := l.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// next reads the next line into pending, or discards it if it is too
// long.
func (l *lineLimiter) next() error {
	l.line = l.line[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if l.limit > 0 && int64(len(l.line)+len(chunk)) > l.limit+1 { // +1: the newline
			return l.discard(chunk, err)
		}
		l.line = append(l.line, chunk...)
		switch {
		case err == nil:
			l.pending = l.line
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(l.line) > 0 && err == io.EOF:
			l.pending = l.line // a last line without a newline
			return nil
		default:
			return err
		}
	}
}

// discard drops the rest of a line that went over the limit, keeping its
// start and its end to find its id.
func (l *lineLimiter) discard(chunk []byte, err error) error {
	head := append([]byte(nil), l.line[:min(len(l.line), keepHead)]...)
	if len(head) < keepHead {
		head = append(head, chunk[:min(len(chunk), keepHead-len(head))]...)
	}
	size := int64(len(l.line) + len(chunk))
	tail := append([]byte(nil), chunk[max(0, len(chunk)-keepTail):]...)
	l.line = l.line[:0]
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = l.r.ReadSlice('\n')
		size += int64(len(chunk))
		tail = append(tail, chunk...)
		if len(tail) > 2*keepTail {
			tail = append(tail[:0], tail[len(tail)-keepTail:]...)
		}
	}
	if bytes.HasSuffix(tail, []byte("\n")) {
		size--
	}
	l.tooLarge(frame.MessageID(head, tail), size)
	if err != nil && err != io.EOF {
		return err
	}
	if err == io.EOF {
		return io.EOF
	}
	return nil
}

// tooLargeResponse is the JSON-RPC error that answers a message over the
// limit: an invalid request, saying how large it was and what the limit
// is, as client.MessageTooLargeError says it of a server's answer.
func tooLargeResponse(id json.RawMessage, size, limit int64) []byte {
	msg := (&client.MessageTooLargeError{Size: size, Limit: limit}).Error()
	resp := struct {
		JSONRPC string                  `json:"jsonrpc"`
		ID      json.RawMessage         `json:"id"`
		Error   mcp.JSONRPCErrorDetails `json:"error"`
	}{mcp.JSONRPC_VERSION, id, mcp.JSONRPCErrorDetails{Code: mcp.INVALID_REQUEST, Message: "mcpfleet: gateway: request refused: " + msg}}
	if resp.ID == nil {
		resp.ID = json.RawMessage("null")
	}
	b, _ := json.Marshal(resp)
	return b
}
