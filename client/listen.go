package client

import (
	"context"
	"slices"
	"sync"

	"github.com/mcpfleet/mcpfleet/transport"

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
}

// startListen opens l's stream if l speaks 2026-07-28 over a Conn with no
// stream of its own and the server declares something to listen for.
func (m *Manager) startListen(l *lease) {
	if _, ok := l.conn.(transport.ReadyHook); ok || !mcp.IsModernProtocol(l.protocol) {
		return
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
}

// listenLocked (re)opens l's stream with filter f, superseding the current
// one; an empty filter just ends it, since a server ends an empty stream at
// once. l.listen.mu is held.
func (m *Manager) listenLocked(l *lease, f mcp.SubscriptionFilter) {
	if stop := l.listen.stop; stop != nil {
		stop()
		l.listen.stop = nil
	}
	l.listen.filter = f
	// Admitted here, not in the goroutine: closing the runtime waits for
	// the stream's request to end, and one not yet sent cannot slip out
	// after the close.
	if f.IsEmpty() || !l.beginOwn() {
		return
	}
	ctx, stop := context.WithCancel(l.ctx)
	l.listen.stop = stop
	m.wg.Go(func() {
		defer l.endOwn()
		defer stop()
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
