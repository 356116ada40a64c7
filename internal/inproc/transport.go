package inproc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The transport of a Conn is mcp-go's InProcessTransport with the order of
// messages fixed. mcp-go's server queues a notification on the session's
// channel and returns at once, and a goroutine of the transport hands it to
// the client later; a response is instead the return value of HandleMessage,
// on the caller's goroutine. With nothing ordering the two paths, a tool's
// progress notifications could reach the client after its result, which no
// stream allows: over stdio or HTTP the client reads messages in the order
// the server wrote them, and handles a notification before it reads the
// response behind it.
//
// So a request during which the server sent anything waits, before it
// returns the response, until the delivering goroutine has handed over
// everything queued so far: it queues a flush marker behind the
// notifications and waits for that goroutine to reach it. A request during
// which nothing was sent, the common case, skips the wait. As over a
// stream, a notification handler must therefore not wait for a response on
// its own connection.

// session is the mcp-go in-process session of a Conn, counting the
// server's sends so that a request can tell whether it has to flush.
type session struct {
	*server.InProcessSession
	sends atomic.Uint64 // times the server took the notification channel
}

var (
	_ server.ClientSession          = (*session)(nil)
	_ server.SessionWithLogging     = (*session)(nil)
	_ server.SessionWithClientInfo  = (*session)(nil)
	_ server.SessionWithSampling    = (*session)(nil)
	_ server.SessionWithElicitation = (*session)(nil)
	_ server.SessionWithRoots       = (*session)(nil)
)

// NotificationChannel is where the server queues every notification to
// this session; counting the calls counts every send it attempts.
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification {
	s.sends.Add(1)
	return s.InProcessSession.NotificationChannel()
}

// flushMethod marks a notification that is a flush marker, never passed to
// the client; its flushDone parameter is closed when it is reached.
const (
	flushMethod = "mcpfleet/inproc/flush"
	flushDone   = "done"
)

// guard is the transport face of a Conn.
type guard Conn

// Start registers the connection's session with the server and starts
// delivering the server's notifications.
func (g *guard) Start(ctx context.Context) error {
	c := (*Conn)(g)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return transport.ErrTransportClosed
	}
	if c.started.Load() {
		return nil
	}
	if err := c.owner.srv.RegisterSession(ctx, c.session); err != nil {
		return fmt.Errorf("inproc: register session: %w", err)
	}
	c.started.Store(true)
	go c.deliver()
	return nil
}

// deliver hands the server's notifications to the client's handler, one at
// a time in the order they were queued, and releases flush markers as it
// reaches them, until the connection dies.
func (c *Conn) deliver() {
	queue := c.session.ClientNotifications()
	for {
		select {
		case <-c.done:
			return
		case n := <-queue:
			if n.Method == flushMethod {
				if done, ok := n.Params.AdditionalFields[flushDone].(chan struct{}); ok {
					close(done)
					continue
				}
			}
			if h := c.handler.Load(); h != nil {
				(*h)(n)
			}
		}
	}
}

// flush returns once every notification queued before it was called has
// been handed to the handler, or with an error if ctx ended or the
// connection died first.
func (c *Conn) flush(ctx context.Context) error {
	done := make(chan struct{})
	marker := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: flushMethod,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{flushDone: done}},
		},
	}
	// Not through session.NotificationChannel: a marker is no send of the
	// server's. The queue may be full; deliver is draining it.
	select {
	case c.session.InProcessSession.NotificationChannel() <- marker:
	case <-c.done:
		return transport.ErrTransportClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-c.done:
		return transport.ErrTransportClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *guard) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	c := (*Conn)(g)
	if c.dead.Load() {
		return nil, transport.ErrTransportClosed
	}
	resp, err := c.handle(ctx, req)
	if c.dead.Load() {
		// The connection died while the server worked: the reply is lost.
		return nil, transport.ErrTransportClosed
	}
	return resp, err
}

// handle has the server handle req and returns its response after every
// notification the server sent while it ran.
func (c *Conn) handle(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("inproc: marshal request: %w", err)
	}
	started := c.started.Load()
	if started {
		ctx = c.owner.srv.WithContext(ctx, c.session)
	}
	sends := c.session.sends.Load()
	msg := c.owner.srv.HandleMessage(ctx, b)
	if started && c.session.sends.Load() != sends {
		if err := c.flush(ctx); err != nil {
			return nil, err
		}
	}
	// The response goes through JSON as over a stream, so that the client
	// gets the same types it would get from one.
	b, err = json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("inproc: marshal response: %w", err)
	}
	var resp transport.JSONRPCResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("inproc: unmarshal response: %w", err)
	}
	return &resp, nil
}

func (g *guard) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	if g.dead.Load() {
		return transport.ErrTransportClosed
	}
	b, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("inproc: marshal notification: %w", err)
	}
	g.owner.srv.HandleMessage(ctx, b)
	return nil
}

func (g *guard) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	if h == nil {
		g.handler.Store(nil)
		return
	}
	g.handler.Store(&h)
}

func (g *guard) Close() error { return (*Conn)(g).Close(context.Background()) }

// GetSessionId returns "", as mcp-go's in-process transport does: the
// session is no HTTP session the client has to present.
func (g *guard) GetSessionId() string { return "" }
