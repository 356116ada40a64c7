package http

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// cancelNoteTimeout bounds the send of one notifications/cancelled.
const cancelNoteTimeout = 2 * time.Second

// cancelNotes follows a request whose context ended before its answer with
// notifications/cancelled, as mcp-go does over stdio but not over HTTP: on
// 2026-07-28 ending the request's stream counts as the cancellation, but a
// server of the older protocol, or one that keeps working after the client
// hung up, learns of it only this way. The notification is sent off the
// caller's path, bounded, and only while the Conn is open: Close cuts
// short the ones under way and waits for them.
type cancelNotes struct {
	ctx    context.Context // ends when Close begins
	stop   context.CancelFunc
	mu     sync.Mutex // guards closed and every Add to wg
	closed bool
	wg     sync.WaitGroup
}

// after is called with the outcome of every request sent on c.
func (n *cancelNotes) after(c *Conn, ctx context.Context, req transport.JSONRPCRequest, err error) {
	if err == nil || ctx.Err() == nil || !cancellable(req.Method) {
		return
	}
	note := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{
				"requestId": req.ID, "reason": ctx.Err().Error()}},
		},
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(n.ctx, cancelNoteTimeout)
		defer cancel()
		if err := c.tr.SendNotification(ctx, note); err != nil && n.ctx.Err() == nil {
			c.log.Debug("mcpfleet: http: could not send notifications/cancelled",
				"request", req.ID.String(), "error", err)
		}
	})
}

// closeAndWait starts no more notes, ends those under way and waits for
// them.
func (n *cancelNotes) closeAndWait() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	if n.stop != nil {
		n.stop()
	}
	n.wg.Wait()
}

// cancellable reports whether a request of method is cancelled with a
// notification: not the handshake, which must not be, and not the
// notification stream, whose end is its cancellation.
func cancellable(method string) bool {
	switch method {
	case string(mcp.MethodInitialize), string(mcp.MethodServerDiscover), string(mcp.MethodSubscriptionsListen):
		return false
	}
	return true
}

// SendRequest sends req; if ctx ended first, it tells the server, and if
// the answer was over the size limit, the error says so. Its error quotes
// no URL secret.
func (t *streamableTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	ctx, ex := withExchange(ctx)
	resp, err := t.StreamableHTTP.SendRequest(ctx, req)
	t.c.notes.after(t.c, ctx, req, err)
	err = t.c.describe(ctx, ex, handshake(req.Method), err)
	return t.c.tooLargeAnswer(req, resp, t.c.redact(err))
}

// SendRequest is streamableTransport's, for legacy SSE.
func (t *sseTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	ctx, ex := withExchange(ctx)
	resp, err := t.SSE.SendRequest(ctx, req)
	t.c.notes.after(t.c, ctx, req, err)
	err = t.c.describe(ctx, ex, handshake(req.Method), err)
	return t.c.tooLargeAnswer(req, resp, t.c.redact(err))
}
