package client

import (
	"context"
	"errors"
	"slices"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// SubscribeResource subscribes to updates of the resource uri on server.
// Each notifications/resources/updated the server sends becomes an
// EventResourceUpdated with the URI. The subscription is remembered: every
// later runtime of the server is subscribed again right after its handshake,
// before it counts as Connected, so updates keep coming across reconnects.
// Like a call, it waits for a server that is connecting. If the server
// refuses, the subscription is not remembered (unless it already was).
//
// On the 2026-07-28 protocol there is no resources/subscribe: the URIs go
// in the filter of the subscriptions/listen stream, which the HTTP
// transport opens when a runtime connects. A subscription made while such a
// runtime is connected re-opens its stream with the new filter, and
// SubscribeResource returns once the server accepted it (see
// transport/http's Conn.SubscribeResource). A server that does not declare
// resources.subscribe refuses it there.
func (m *Manager) SubscribeResource(ctx context.Context, server, uri string) (err error) {
	defer func() { err = withOp("subscribe "+uri, server, err) }()
	s, err := m.slot(server)
	if err != nil {
		return err
	}
	// The subscription is recorded before it is sent, so that a runtime
	// that connects meanwhile renews it; with interceptors, only once they
	// passed it on: one that refuses or waits for an approval leaves no
	// trace for a new runtime to renew.
	var had, recorded bool
	if len(m.opts.interceptors) > 0 {
		_, err = intercept(ctx, m, server, "resources/subscribe", uri, "subscribe "+uri, nil,
			func(ctx context.Context, _ any, gen *uint64) (struct{}, error) {
				had, recorded = s.addSub(uri), true
				return m.subscribe(ctx, s, uri, gen)
			})
	} else {
		had, recorded = s.addSub(uri), true
		_, err = m.subscribe(ctx, s, uri, nil)
	}
	if err != nil && recorded && !had && refused(err) {
		s.dropSub(uri)
	}
	return err
}

// subscribe is SubscribeResource's request, past the interceptors.
func (m *Manager) subscribe(ctx context.Context, s *slot, uri string, gen *uint64) (struct{}, error) {
	return do(ctx, m, s.name, call{"resources/subscribe", uri}, gen, nil, alwaysReplayable,
		func(ctx context.Context, c *mcpclient.Client) (struct{}, error) {
			req := mcp.SubscribeRequest{}
			req.Params.URI = uri
			//lint:ignore SA1019 resources/subscribe is the only way on the older protocol
			if err := c.Subscribe(ctx, req); err != nil { //nolint:staticcheck // as above
				return struct{}{}, err
			}
			return struct{}{}, s.relisten(ctx, c, uri, true)
		})
}

// UnsubscribeResource ends a subscription made with SubscribeResource: it
// is forgotten at once (with interceptors, once they passed the request
// on), and the current runtime, if any, is told (on
// 2026-07-28 over HTTP its stream is re-opened without uri).
func (m *Manager) UnsubscribeResource(ctx context.Context, server, uri string) (err error) {
	defer func() { err = withOp("unsubscribe "+uri, server, err) }()
	s, err := m.slot(server)
	if err != nil {
		return err
	}
	if len(m.opts.interceptors) > 0 {
		// Forgotten only once the interceptors passed it on: a refused
		// unsubscribe leaves the server subscribed, and the host with it.
		_, err = intercept(ctx, m, server, "resources/unsubscribe", uri, "unsubscribe "+uri, nil,
			func(ctx context.Context, _ any, gen *uint64) (struct{}, error) {
				s.dropSub(uri)
				return m.unsubscribe(ctx, s, uri, gen)
			})
		return err
	}
	s.dropSub(uri)
	_, err = m.unsubscribe(ctx, s, uri, nil)
	return err
}

// unsubscribe is UnsubscribeResource's request, past the interceptors.
func (m *Manager) unsubscribe(ctx context.Context, s *slot, uri string, gen *uint64) (struct{}, error) {
	return do(ctx, m, s.name, call{"resources/unsubscribe", uri}, gen, nil, alwaysReplayable,
		func(ctx context.Context, c *mcpclient.Client) (struct{}, error) {
			req := mcp.UnsubscribeRequest{}
			req.Params.URI = uri
			//lint:ignore SA1019 as in SubscribeResource
			if err := c.Unsubscribe(ctx, req); err != nil { //nolint:staticcheck // as above
				return struct{}{}, err
			}
			return struct{}{}, s.relisten(ctx, c, uri, false)
		})
}

// resourceListener is a Conn whose notification stream carries the resource
// subscriptions on the 2026-07-28 protocol, and can change them while it
// runs (transport/http's Conn).
type resourceListener interface {
	SubscribeResource(ctx context.Context, c *mcpclient.Client, uri string) error
	UnsubscribeResource(ctx context.Context, c *mcpclient.Client, uri string) error
}

var _ resourceListener = (*mcphttp.Conn)(nil)

// relisten tells the Conn of the runtime c belongs to that uri was
// subscribed to (or unsubscribed from), where the protocol puts resource
// subscriptions in the notification stream's filter. A runtime already
// detached is left alone: the next one is subscribed at its dial.
func (s *slot) relisten(ctx context.Context, c *mcpclient.Client, uri string, subscribe bool) error {
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		return nil
	}
	s.mu.Lock()
	l := s.lease
	s.mu.Unlock()
	if l == nil || l.client != c {
		return nil
	}
	rl, ok := l.conn.(resourceListener)
	if !ok {
		s.m.relistenResource(l, c, uri, subscribe)
		return nil
	}
	if subscribe {
		return rl.SubscribeResource(ctx, c, uri)
	}
	return rl.UnsubscribeResource(ctx, c, uri)
}

// Subscriptions returns the resource URIs the host is subscribed to on
// server, in the order they were subscribed.
func (m *Manager) Subscriptions(server string) ([]string, error) {
	s, err := m.slot(server)
	if err != nil {
		return nil, withOp("subscriptions", server, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subs), nil
}

// refused reports whether err is the server's answer rather than a failure
// to reach it: a subscription the server refused is not worth renewing, one
// that could not be sent yet is.
func refused(err error) bool {
	if errors.Is(err, ErrRefused) {
		return true // by an interceptor, whatever error it gave
	}
	for _, notSent := range []error{ErrUnavailable, ErrOutcomeUnknown, ErrDisabled, ErrClosed,
		ErrPermanentlyFailed, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, notSent) {
			return false
		}
	}
	return true
}

// resubscribe subscribes a new runtime to every resource the host is
// subscribed to on s. A refusal is logged and leaves the runtime usable.
func (s *slot) resubscribe(ctx context.Context, c *mcpclient.Client) {
	s.mu.Lock()
	uris := slices.Clone(s.subs)
	s.mu.Unlock()
	for _, uri := range uris {
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		//lint:ignore SA1019 as in SubscribeResource
		if err := c.Subscribe(ctx, req); err != nil { //nolint:staticcheck // as above
			s.m.opts.logger.Warn("mcpfleet: could not renew a resource subscription on the new runtime",
				"server", s.name, "uri", uri, "error", err)
		}
	}
}

// onResourceUpdated turns a notifications/resources/updated from l into an
// EventResourceUpdated. It runs on the transport's goroutine and never
// blocks; updates from a detached runtime are dropped.
func (l *lease) onResourceUpdated(n mcp.JSONRPCNotification) {
	var params mcp.ResourceUpdatedNotificationParams
	if !decodeParams(n.Params, &params) {
		return
	}
	s := l.slot
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.ctx.Err() != nil {
		return
	}
	s.emitLocked(Event{Kind: EventResourceUpdated, URI: params.URI})
}
