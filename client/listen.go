package client

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// On 2026-07-28 a server sends list_changed and resources/updated only on a
// subscriptions/listen stream that asked for them. transport/http opens and
// watches that stream itself (its loss is how an HTTP server's death shows);
// for every other Conn (stdio, in process) the Manager keeps one open per
// runtime, asking for what the server declares. Its end says nothing about
// the connection: a stdio child's death shows by its exit.
//
// mcp-go's servers send notifications to stdio sessions whether they listen
// or not; the official Go SDK's, strictly, only to those that listen.

// listenState is a runtime's own subscriptions/listen stream, if it has
// one. Its fields are guarded by mu.
type listenState struct {
	mu     sync.Mutex
	on     bool                   // the stream was opened at dial: keep it
	filter mcp.SubscriptionFilter // what it asks for now
	stop   context.CancelFunc     // ends the current Listen call
	// opened is closed when the server acknowledged the current stream
	// (notifications/subscriptions/acknowledged), or when the stream ended
	// or was superseded before that; nil once closed or if none was asked.
	opened chan struct{}
}

// markOpenedLocked closes ch if it is still the stream's opened channel.
// ls.mu is held.
func (ls *listenState) markOpenedLocked(ch chan struct{}) {
	if ch != nil && ls.opened == ch {
		close(ch)
		ls.opened = nil
	}
}

// acknowledged is told of the server's notifications/subscriptions/acknowledged.
func (ls *listenState) acknowledged() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.markOpenedLocked(ls.opened)
}

// startListen opens l's stream if l speaks 2026-07-28 over a Conn with no
// stream of its own and the server declares something to listen for. It
// returns a channel closed once the server acknowledged the stream (or the
// stream ended), nil if none was opened: see awaitListen.
func (m *Manager) startListen(l *lease) <-chan struct{} {
	if _, ok := l.conn.(transport.ReadyHook); ok || !mcp.IsModernProtocol(l.protocol) {
		return nil
	}
	caps := l.client.GetServerCapabilities()
	var f mcp.SubscriptionFilter
	f.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	f.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
	if caps.Resources != nil && caps.Resources.Subscribe {
		f.ResourceSubscriptions = l.client.PendingSubscriptionFilter().ResourceSubscriptions
	}
	l.listen.mu.Lock()
	defer l.listen.mu.Unlock()
	l.listen.on = true
	m.listenLocked(l, f)
	return l.listen.opened
}

// listenOpenWait bounds how long a dial waits for the server to acknowledge
// the Manager's own stream, as transport/http's Ready does for its own: a
// server that never acknowledges is served all the same, without that
// promise.
const listenOpenWait = mcphttp.DefaultStreamOpenTimeout

// awaitListen waits until the server acknowledged the stream that
// startListen opened (opened closed), so that the lists fetched next and any
// change after them are both seen: the official Go SDK's server sends
// list_changed only to a stream it has set up, and a change made between
// the Connected event and that set-up went unseen (a host's call right after
// Connected that adds a tool). A stream the server refuses or ends is no
// reason to fail the dial; neither is one not acknowledged in listenOpenWait.
func (m *Manager) awaitListen(ctx context.Context, l *lease, opened <-chan struct{}) error {
	if opened == nil {
		return nil
	}
	timer := time.NewTimer(listenOpenWait)
	defer timer.Stop()
	select {
	case <-opened:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		m.opts.logger.Warn("mcpfleet: subscriptions/listen not acknowledged in time; going on without waiting",
			"server", l.slot.name, "timeout", listenOpenWait)
		return nil
	}
}

// listenLocked (re)opens l's stream with filter f, superseding the current
// one; an empty filter just ends it, since a server ends an empty stream at
// once. l.listen.mu is held.
func (m *Manager) listenLocked(l *lease, f mcp.SubscriptionFilter) {
	if stop := l.listen.stop; stop != nil {
		stop()
		l.listen.stop = nil
	}
	l.listen.markOpenedLocked(l.listen.opened) // superseded: no one waits for it
	l.listen.filter = f
	// Admitted here, not in the goroutine: closing the runtime waits for
	// the stream's request to end, and one not yet sent cannot slip out
	// after the close.
	if f.IsEmpty() || !l.beginOwn() {
		return
	}
	ctx, stop := context.WithCancel(l.ctx)
	l.listen.stop = stop
	opened := make(chan struct{})
	l.listen.opened = opened
	m.wg.Go(func() {
		defer l.endOwn()
		defer stop()
		defer func() { // ended unacknowledged: a waiting dial goes on
			l.listen.mu.Lock()
			l.listen.markOpenedLocked(opened)
			l.listen.mu.Unlock()
		}()
		if ctx.Err() != nil {
			return // detached before this goroutine ran: send nothing into a closing runtime
		}
		err := l.client.Listen(ctx, f)
		// Not l.gen: the stream opens during the dial, before the lease
		// is installed and given its generation.
		if err != nil && ctx.Err() == nil {
			m.opts.logger.Debug("mcpfleet: subscriptions/listen ended; notifications come as the server sends them",
				"server", l.slot.name, "error", err)
		}
	})
}

// relistenResource adds uri to (or removes it from) the resource
// subscriptions of l's own stream, re-opening it, if l has one.
func (m *Manager) relistenResource(l *lease, c *mcpclient.Client, uri string, subscribe bool) {
	l.listen.mu.Lock()
	defer l.listen.mu.Unlock()
	if !l.listen.on {
		return
	}
	caps := c.GetServerCapabilities()
	if caps.Resources == nil || !caps.Resources.Subscribe {
		return
	}
	f := l.listen.filter
	f.ResourceSubscriptions = slices.DeleteFunc(slices.Clone(f.ResourceSubscriptions), func(u string) bool { return u == uri })
	if subscribe {
		f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
	}
	m.listenLocked(l, f)
}
