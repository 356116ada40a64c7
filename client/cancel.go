package client

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// cancelNoteTimeout bounds the send of one notifications/cancelled.
const cancelNoteTimeout = 2 * time.Second

// cancelOnHTTP wraps an HTTP transport (streamable HTTP or SSE) so that a
// request whose context ends before its answer is followed by
// notifications/cancelled, as over stdio. mcp-go sends none over HTTP: on
// 2026-07-28 ending the request's stream counts as the cancellation, but a
// server of the older protocol, or one that keeps working after the
// client hung up, learns of it only this way. The notification is sent
// off the caller's path, bounded, and only while the runtime is live.
//
// It forwards every optional interface mcp-go looks for on a transport, so
// that wrapping changes nothing else.
type cancelOnHTTP struct {
	transport.Interface
	l *lease
}

// withCancelNotes wraps t if it is an HTTP transport; others are returned
// as they are (mcp-go cancels on them by itself).
func withCancelNotes(t transport.Interface, l *lease) transport.Interface {
	if _, ok := t.(transport.HTTPConnection); !ok {
		return t
	}
	return &cancelOnHTTP{Interface: t, l: l}
}

func (t *cancelOnHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.Interface.SendRequest(ctx, req)
	if err != nil && ctx.Err() != nil && cancellable(req.Method) {
		t.l.goCancelNote(t.Interface, req.ID, ctx.Err())
	}
	return resp, err
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

func (t *cancelOnHTTP) SetProtocolVersion(version string) {
	t.Interface.(transport.HTTPConnection).SetProtocolVersion(version)
}

func (t *cancelOnHTTP) SetRequestHandler(h transport.RequestHandler) {
	if b, ok := t.Interface.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(h)
	}
}

func (t *cancelOnHTTP) SetConnectionLostHandler(h func(error)) {
	if s, ok := t.Interface.(interface{ SetConnectionLostHandler(func(error)) }); ok {
		s.SetConnectionLostHandler(h)
	}
}

func (t *cancelOnHTTP) RequiresLegacyProtocol() bool {
	r, ok := t.Interface.(interface{ RequiresLegacyProtocol() bool })
	return ok && r.RequiresLegacyProtocol()
}

// goCancelNote sends notifications/cancelled for request id in the
// background, counted in l.notes so that closing l waits for it.
func (l *lease) goCancelNote(t transport.Interface, id mcp.RequestId, cause error) {
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": cause.Error()}},
		},
	}
	l.notes.goIfOpen(func() {
		ctx, cancel := context.WithTimeout(l.ctx, cancelNoteTimeout)
		defer cancel()
		if err := t.SendNotification(ctx, n); err != nil && l.ctx.Err() == nil {
			l.slot.m.opts.logger.Debug("mcpfleet: could not send notifications/cancelled",
				"server", l.slot.name, "request", id.String(), "error", err)
		}
	})
}

// background counts goroutines that must end before a runtime is gone. Once
// closed it starts no more; closing waits for those started.
type background struct {
	mu     sync.Mutex // guards closed and every Add to wg
	closed bool
	wg     sync.WaitGroup
}

func (b *background) goIfOpen(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.wg.Go(fn)
}

func (b *background) closeAndWait() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
