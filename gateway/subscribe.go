package gateway

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// subscriptions are the downstream sessions' resource subscriptions. A
// server is subscribed to a URI once, when the first session asks, and
// unsubscribed when the last one lets go; its updates go to the sessions
// subscribed, and to no other.
type subscriptions struct {
	g *Gateway

	mu      sync.Mutex // guards the maps and every target's subs
	targets map[target]*targetState
	bySub   map[server.ClientSession]map[target]struct{}
}

// target is one URI of one server.
type target struct{ server, uri string }

// targetState is a target's subscribers. ready is closed once the
// server's subscription is made (err says whether it was).
type targetState struct {
	subs  map[server.ClientSession]struct{}
	ready chan struct{}
	err   error
}

func (s *subscriptions) init(g *Gateway) {
	s.g = g
	s.targets = map[target]*targetState{}
	s.bySub = map[server.ClientSession]map[target]struct{}{}
}

// subscribe subscribes cs to uri, subscribing the server if cs is the
// first.
func (s *subscriptions) subscribe(ctx context.Context, cs server.ClientSession, uri string) error {
	if cs == nil {
		return nil
	}
	srvName, err := s.g.resourceServer(uri)
	if err != nil {
		return err
	}
	t := target{srvName, uri}
	s.mu.Lock()
	st := s.targets[t]
	first := st == nil
	if first {
		st = &targetState{subs: map[server.ClientSession]struct{}{}, ready: make(chan struct{})}
		s.targets[t] = st
	}
	st.subs[cs] = struct{}{}
	if s.bySub[cs] == nil {
		s.bySub[cs] = map[target]struct{}{}
	}
	s.bySub[cs][t] = struct{}{}
	s.mu.Unlock()

	if first {
		err := s.g.m.SubscribeResource(ctx, srvName, uri)
		s.mu.Lock()
		st.err = err
		close(st.ready)
		if err != nil { // nobody is subscribed: whoever waited gets err too
			delete(s.targets, t)
			for sub := range st.subs {
				delete(s.bySub[sub], t)
			}
		}
		s.mu.Unlock()
		return err
	}
	select {
	case <-st.ready:
		return st.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unsubscribe ends cs's subscription to uri, and the server's when cs was
// the last.
func (s *subscriptions) unsubscribe(ctx context.Context, cs server.ClientSession, uri string) error {
	srvName, err := s.g.resourceServer(uri)
	if err != nil {
		return err
	}
	if s.release(cs, target{srvName, uri}) {
		return s.g.m.UnsubscribeResource(ctx, srvName, uri)
	}
	return nil
}

// release takes cs off t and reports whether t has no subscriber left.
func (s *subscriptions) release(cs server.ClientSession, t target) (last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.targets[t]
	if st == nil {
		return false
	}
	if _, ok := st.subs[cs]; !ok {
		return false
	}
	delete(st.subs, cs)
	delete(s.bySub[cs], t)
	if len(s.bySub[cs]) == 0 {
		delete(s.bySub, cs)
	}
	if len(st.subs) == 0 {
		delete(s.targets, t)
		return true
	}
	return false
}

// drop ends every subscription of cs, a session that ended.
func (s *subscriptions) drop(cs server.ClientSession) {
	s.mu.Lock()
	var ts []target
	for t := range s.bySub[cs] {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	for _, t := range ts {
		if s.release(cs, t) {
			s.g.bg.Go(func() {
				ctx, cancel := context.WithTimeout(s.g.ctx, 10*time.Second)
				defer cancel()
				if err := s.g.m.UnsubscribeResource(ctx, t.server, t.uri); err != nil {
					s.g.log.Debug("mcpfleet: gateway: unsubscribe", "server", t.server, "uri", t.uri, "err", err)
				}
			})
		}
	}
}

// updated sends notifications/resources/updated for uri, from srvName, to
// the sessions subscribed to it or to a resource it is part of.
func (s *subscriptions) updated(srvName, uri string) {
	s.mu.Lock()
	var to []server.ClientSession
	for t, st := range s.targets {
		if t.server == srvName && (uri == t.uri || strings.HasPrefix(uri, t.uri)) {
			for cs := range st.subs {
				to = append(to, cs)
			}
		}
	}
	s.mu.Unlock()
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationResourceUpdated),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}},
	}}
	for _, cs := range to {
		notify(cs, n)
	}
}

// notify sends n to cs without waiting: a session whose queue is full
// loses it, as mcp-go's own notifications are lost.
func notify(cs server.ClientSession, n mcp.JSONRPCNotification) {
	if up, ok := cs.(server.SessionWithStreamableHTTPConfig); ok {
		up.UpgradeToSSEWhenReceiveNotification()
	}
	select {
	case cs.NotificationChannel() <- n:
	default:
	}
}

// listenStarted subscribes a 2026-07-28 client's subscriptions/listen
// stream to the resources its filter names; listenEnded lets them go when
// the stream ends. (On that protocol the filter replaces
// resources/subscribe.)
func (g *Gateway) listenStarted(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
	cs := server.ClientSessionFromContext(ctx)
	for _, uri := range req.Params.Notifications.ResourceSubscriptions {
		if err := g.subs.subscribe(ctx, cs, uri); err != nil {
			g.log.Info("mcpfleet: gateway: a listen stream's resource subscription failed", "uri", uri, "err", err)
		}
	}
}

func (g *Gateway) listenEnded(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
	g.subs.drop(server.ClientSessionFromContext(ctx))
}
