package http

import (
	"io"
	nethttp "net/http"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcpfleet/mcpfleet/internal/frame"
)

// limitBody bounds what resp's body can make mcp-go hold. An SSE stream is
// bounded per event (frame.Limiter: an answer over the limit is replaced
// by an error answer, and its request fails with a *frame.TooLarge). A
// JSON body is one message: reading it fails with a *frame.TooLarge once
// it is over the limit, which mcp-go returns as the request's error.
//
// A JSON body whose Content-Length is within the limit is left as it is:
// net/http does not read past the length it announced. That is the common
// case, and it costs no allocation.
func (c *Conn) limitBody(resp *nethttp.Response) {
	limit := c.opts.maxMessage
	if isEventStream(resp.Header.Get("Content-Type")) {
		resp.Body = readCloser{frame.NewLimiter(resp.Body, frame.Events, limit, &c.tooLarge, c.log), resp.Body}
		return
	}
	if resp.ContentLength >= 0 && resp.ContentLength <= limit {
		return
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		resp.Body = io.NopCloser(errReader{&frame.TooLarge{Size: resp.ContentLength, Limit: limit}})
		return
	}
	resp.Body = &jsonLimit{ReadCloser: resp.Body, left: limit, limit: limit}
}

// isEventStream reports whether a Content-Type is text/event-stream,
// parameters or not, without mime.ParseMediaType's allocations.
func isEventStream(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "text/event-stream")
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// jsonLimit is a JSON body that fails once more than limit bytes came.
type jsonLimit struct {
	io.ReadCloser
	left, limit int64
}

func (b *jsonLimit) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &frame.TooLarge{Size: b.limit + 1, AtLeast: true, Limit: b.limit}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, &frame.TooLarge{Size: b.limit + 1, AtLeast: true, Limit: b.limit}
	}
	return n, err
}

// tooLargeAnswer returns the error of a request whose answer the size
// limit replaced, or resp and err as they are.
func (c *Conn) tooLargeAnswer(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) (*transport.JSONRPCResponse, error) {
	if err == nil && resp != nil && resp.Error != nil {
		if e := c.tooLarge.Take(req.ID.String()); e != nil {
			return nil, e
		}
	}
	return resp, err
}
