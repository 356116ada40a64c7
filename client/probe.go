package client

import (
	"context"
	"fmt"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// minProbeTimeout is the least time an idle probe is given to answer.
const minProbeTimeout = time.Second

// idleTick runs on l's watcher once per idle-probe period. If l saw no
// activity since the last tick and has no call in flight, it probes the
// server: a failure that proves the runtime dead detaches it, and a probe
// that times out counts toward the timeout threshold like a call.
func (s *slot) idleTick(l *lease) {
	if l.active.Swap(false) || l.inflight.Load() > 0 {
		return
	}
	// The probe gets the quiet period to answer, and never less than
	// minProbeTimeout, or the server's own call timeout if it has one: a
	// short period must not make a slow but live server look hung.
	timeout := max(s.m.opts.idleProbe, minProbeTimeout)
	if t := s.config().spec.Timeout; t > 0 {
		timeout = t
	}
	if !l.beginOwn() {
		return // detached meanwhile: nothing goes out on it
	}
	ctx, cancel := l.watcherCtx(timeout)
	defer cancel()
	err := probe(ctx, l.client)
	l.endOwn()
	if h := s.m.onProbe; h != nil {
		h(s, err)
	}
	switch {
	case err == nil:
		return
	case l.ctx.Err() != nil:
		return // detached meanwhile
	case connErr(l.conn) != nil:
		return // dead: the watcher reports it next
	case ctx.Err() != nil:
		s.timedOut(l, fmt.Errorf("idle probe: %w", err))
		return
	}
	if classify(ctx, l.conn, err) == outcomeResult {
		l.markAnswered() // an error answer is an answer
		return
	}
	s.lost(l, fmt.Errorf("idle probe: %w", err))
}

// probe asks the server the cheapest question that needs an answer: a ping
// on the older protocol, and on 2026-07-28 (where mcp-go's Ping sends
// nothing) server/discover, which every server of that protocol answers
// (the connection was made with it) and which changes nothing on either
// side. A list would do too, but mcp-go keeps the tool definitions of every
// tools/list it decodes: a probe by tools/list held each idle server's
// tools twice, the catalog's and the probe's.
func probe(ctx context.Context, c *mcpclient.Client) error {
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		return c.Ping(ctx)
	}
	_, err := c.Discover(ctx, mcp.DiscoverRequest{})
	return err
}
