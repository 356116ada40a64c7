package client

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/transport"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
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
func (m *Manager) SubscribeResource(ctx context.Context, server, uri string) error {
	// The subscription is recorded before it is sent, so that a runtime
	// that connects meanwhile renews it; with interceptors, only once they
	// passed it on: one that refuses or waits for an approval leaves no
	// trace for a new runtime to renew.
	var (
		recorded *slot
		had      bool
	)
	_, err := run(ctx, m, server, request[struct{}]{
		method: string(mcp.MethodResourcesSubscribe), name: uri, op: "subscribe",
		replay: alwaysReplayable, send: sendSubscribe,
		accepted: func(s *slot) { recorded, had = s, s.addSub(uri) },
	}, nil)
	if err != nil && recorded != nil && !had && refused(err) {
		recorded.dropSub(uri)
	}
	return err
}

func sendSubscribe(ctx context.Context, s *slot, c *mcpclient.Client, uri string, _ any) (struct{}, error) {
	req := mcp.SubscribeRequest{}
	req.Params.URI = uri
	//lint:ignore SA1019 resources/subscribe is the only way on the older protocol
	if err := c.Subscribe(ctx, req); err != nil { //nolint:staticcheck // as above
		return struct{}{}, err
	}
	return struct{}{}, s.relisten(ctx, c, uri, true)
}

// UnsubscribeResource ends a subscription made with SubscribeResource: it
// is forgotten at once (with interceptors, once they passed the request
// on: a refused unsubscribe leaves the server subscribed, and the host
// with it), and the current runtime, if any, is told (on 2026-07-28 over
// HTTP its stream is re-opened without uri).
func (m *Manager) UnsubscribeResource(ctx context.Context, server, uri string) error {
	_, err := run(ctx, m, server, request[struct{}]{
		method: string(mcp.MethodResourcesUnsubscribe), name: uri, op: "unsubscribe",
		replay: alwaysReplayable, send: sendUnsubscribe,
		accepted: func(s *slot) { s.dropSub(uri) },
	}, nil)
	return err
}

func sendUnsubscribe(ctx context.Context, s *slot, c *mcpclient.Client, uri string, _ any) (struct{}, error) {
	req := mcp.UnsubscribeRequest{}
	req.Params.URI = uri
	//lint:ignore SA1019 as in SubscribeResource
	if err := c.Unsubscribe(ctx, req); err != nil { //nolint:staticcheck // as above
		return struct{}{}, err
	}
	return struct{}{}, s.relisten(ctx, c, uri, false)
}

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
	rl, ok := l.conn.(transport.ResourceListener)
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
	return s.subsLocked(), nil
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
	uris := s.subsLocked()
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
// blocks; updates from a detached runtime are dropped, and so are those of
// a URI the host is not subscribed to (or under: a sub-resource's is
// kept). An update can come after UnsubscribeResource returned (what the
// reader of a superseded 2026-07-28 stream had read before its connection
// closed), and a server may announce a URI nobody asked for.
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
	if !slices.ContainsFunc(s.subsLocked(), func(sub string) bool { return strings.HasPrefix(params.URI, sub) }) {
		return
	}
	s.emitLocked(Event{Kind: EventResourceUpdated, URI: params.URI})
}

// addSub records a resource subscription, told again to every new runtime,
// and reports whether it was there already.
func (s *slot) addSub(uri string) (had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.more()
	if slices.Contains(r.subs, uri) {
		return true
	}
	r.subs = append(r.subs, uri)
	return false
}

// dropSub forgets a resource subscription.
func (s *slot) dropSub(uri string) {
	s.mu.Lock()
	if r := s.rare.Load(); r != nil {
		r.subs = slices.DeleteFunc(r.subs, func(u string) bool { return u == uri })
	}
	s.mu.Unlock()
}
