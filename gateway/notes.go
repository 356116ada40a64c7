package gateway

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// mcp-go v1.2.1's streamable HTTP server can lose a notification sent
// while a request is handled: the goroutine that forwards a session's
// notifications to the request's stream may take one off the queue just
// as the handler returns, and then drops it when it sees the request
// done (the queue is drained only of what is still in it). For progress,
// the last report of a call is the one lost. So the gateway counts the
// progress notifications it hands mcp-go and those mcp-go writes on a
// stream, and a call's result waits until every one sent so far was
// written: a matter of microseconds, since the forwarder runs while the
// handler waits.

// noteWait bounds that wait, should mcp-go drop a notification where
// the gateway cannot see it (a stream whose client is gone).
const noteWait = time.Second

// notes counts the progress notifications of one MCP session, or of one
// request of a client without a session.
type notes struct {
	sent, written atomic.Int64
	wrote         chan struct{} // a token after each write, capacity 1
}

func newNotes() *notes { return &notes{wrote: make(chan struct{}, 1)} }

// writtenOne counts one notification written.
func (n *notes) writtenOne() {
	n.written.Add(1)
	select {
	case n.wrote <- struct{}{}:
	default:
	}
}

// await waits until the notifications sent before it was called were
// written, ctx ends, or noteWait passed.
func (n *notes) await(ctx context.Context) {
	want := n.sent.Load()
	if n.written.Load() >= want {
		return
	}
	t := time.NewTimer(noteWait)
	defer t.Stop()
	for n.written.Load() < want {
		select {
		case <-n.wrote:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}

// notesKey carries the notes of a downstream HTTP request without a
// session (a 2026-07-28 client's).
type notesKey struct{}

// notesOf returns the notes of the downstream request in ctx: its own, or,
// over HTTP (a peer), its session's; nil over stdio, whose stream loses
// nothing.
func (g *Gateway) notesOf(ctx context.Context) *notes {
	if n, ok := ctx.Value(notesKey{}).(*notes); ok {
		return n
	}
	if peerFrom(ctx) == nil {
		return nil
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		if s := g.sessions.lookup(cs.SessionID()); s != nil {
			return s.notes
		}
	}
	return nil
}

// progressEvent is how mcp-go writes a progress notification on a stream.
var (
	sseEvent       = []byte("event: message\ndata: ")
	progressMethod = []byte(`"method":"notifications/progress"`)
)

// noteWriter is an HTTP response writer that counts the progress
// notifications mcp-go writes on it (writeSSEEvent writes each event in
// one Write): for its request (own), or for the session of id.
type noteWriter struct {
	http.ResponseWriter
	own *notes
	h   *HTTPServer
	id  string
}

func (w *noteWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if bytes.HasPrefix(p, sseEvent) && bytes.Contains(p, progressMethod) {
		c := w.own
		if c == nil {
			if s := w.h.g.sessions.lookup(w.id); s != nil {
				c = s.notes
			}
		}
		if c != nil {
			c.writtenOne()
		}
	}
	return n, err
}

// Flush makes mcp-go see a writer that streams, as the one it wraps.
func (w *noteWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (w *noteWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countNotes wraps w so that the progress notifications written on it
// count for r's session, or, without one, for r itself (its notes in the
// context returned, made of ctx, r's; see notesOf). The writer is f's.
func (h *HTTPServer) countNotes(f *front, w http.ResponseWriter, r *http.Request, ctx context.Context) (http.ResponseWriter, context.Context) {
	if id := r.Header.Get(server.HeaderKeySessionID); id != "" {
		f.nw = noteWriter{ResponseWriter: w, h: h, id: id}
		return &f.nw, ctx
	}
	n := newNotes()
	f.nw = noteWriter{ResponseWriter: w, own: n}
	return &f.nw, context.WithValue(ctx, notesKey{}, n)
}
