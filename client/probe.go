package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// minProbeTimeout is the least time an idle probe is given to answer.
const minProbeTimeout = time.Second

// errNoProbe: a 2026-07-28 server that declares no list has nothing cheap
// and side-effect free to be asked.
var errNoProbe = errors.New("nothing to probe with")

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
	case err == nil || errors.Is(err, errNoProbe):
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

// probe asks the server the cheapest question that needs an answer.
func probe(ctx context.Context, c *mcpclient.Client) error {
	if !mcp.IsModernProtocol(c.ProtocolVersion()) {
		return c.Ping(ctx)
	}
	caps := c.GetServerCapabilities()
	switch {
	case caps.Tools != nil:
		_, err := c.ListToolsByPage(ctx, mcp.ListToolsRequest{})
		return err
	case caps.Prompts != nil:
		_, err := c.ListPromptsByPage(ctx, mcp.ListPromptsRequest{})
		return err
	case caps.Resources != nil:
		_, err := c.ListResourcesByPage(ctx, mcp.ListResourcesRequest{})
		return err
	}
	return errNoProbe
}
