package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// dialResult is what one connection attempt found out. The dial writes
// nothing of the slot's: the connect loop applies the result under the
// slot's lock (slot.applyDialLocked).
type dialResult struct {
	lease *lease // nil if the attempt failed
	err   error
	// legacy: the server rejected 2026-07-28 and took the older handshake.
	legacy bool
	// stderr: the last lines a failed attempt's server wrote to stderr.
	stderr []string
}

// dial makes one connection attempt: the Conn, the MCP handshake, the
// catalog. A server that accepts server/discover but rejects 2026-07-28 at
// its first real request is dialled again on the older handshake.
func (s *slot) dial(ctx context.Context, legacy bool) (res dialResult) {
	m := s.m
	if err := m.dialSem.Acquire(ctx, 1); err != nil {
		return dialResult{err: err}
	}
	release := sync.OnceFunc(func() { m.dialSem.Release(1) })
	defer release()
	ctx, cancel := context.WithTimeout(ctx, m.opts.dialTimeout)
	defer cancel()

	// Connections of failed attempts are closed after the dial slot is
	// released: a child that ignores stdin EOF takes the close grace to
	// go, and must not hold up other servers' dials meanwhile.
	var failed []Conn
	defer func() {
		release()
		for _, c := range failed {
			m.closeConn(c)
		}
	}()
	res.lease, res.stderr, res.err = s.dialOnce(ctx, legacy, &failed)
	if res.err != nil && !legacy && mcphttp.IsUnsupportedProtocol(res.err) && ctx.Err() == nil {
		m.opts.logger.Info("mcpfleet: server rejected protocol 2026-07-28; using the initialize handshake",
			"server", s.name)
		res.lease, res.stderr, res.err = s.dialOnce(ctx, true, &failed)
		res.legacy = res.err == nil
	}
	return res
}

// closeConn closes the connection of a failed dial, bounded by the close
// timeout. Nothing was installed, so there is nothing to report.
func (m *Manager) closeConn(c Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.closeTimeout)
	defer cancel()
	_ = c.Close(ctx)
}

// dialOnce makes one attempt on one handshake. A failed attempt's Conn is
// added to failed, for dial to close, and its server's last stderr lines
// are returned with the error.
func (s *slot) dialOnce(ctx context.Context, legacy bool, failed *[]Conn) (*lease, []string, error) {
	m := s.m
	cfg := s.config()
	var auth mcphttp.Authorizer
	if cfg.auth != nil {
		auth = cfg.auth
	}
	conn, err := cfg.spec.dialer(&m.opts, legacy, auth)(ctx)
	if err != nil {
		return nil, nil, wrapCause("dial", err)
	}
	l := &lease{slot: s, conn: conn, kick: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(m.ctx)
	fail := func(step string, err error) (*lease, []string, error) {
		l.cancel()
		err = explain(conn, err)
		*failed = append(*failed, conn)
		return nil, stderrOf(conn), fmt.Errorf("%s: %w", step, err)
	}

	// The host's handlers are bound to this lease: a server request that
	// arrives once it is detached never reaches the host.
	copts := m.clientOptions(l)
	if legacy {
		copts = append(copts, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := mcpclient.NewClient(conn.Transport(), copts...)
	c.OnNotification(l.onNotification)
	// The transport keeps its start context for the life of the connection,
	// so it gets l.ctx; the attempt's ctx still bounds the start itself (an
	// SSE stream whose server never answers): ending it ends l.ctx too.
	stopStart := context.AfterFunc(ctx, l.cancel)
	err = c.Start(l.ctx)
	if !stopStart() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fail("start", err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: m.opts.clientInfo,
	}})
	if err != nil {
		return fail("initialize", err)
	}
	if !legacy && mcp.IsModernProtocol(init.ProtocolVersion) && init.ServerInfo.Name == "" {
		// mcp-go takes any result of server/discover for a yes, and some
		// older servers answer every unknown method with an empty result.
		// A real discover result names the server; this one is a misfire.
		return fail("initialize", fmt.Errorf("server/discover answered without server info: %w",
			mcp.UnsupportedProtocolVersionError{Version: init.ProtocolVersion}))
	}
	l.client = c
	l.protocol = init.ProtocolVersion
	// What the host asked of earlier runtimes holds for this one too, from
	// before it counts as Connected (and, on 2026-07-28 over HTTP, before
	// Ready opens the stream whose filter carries the subscriptions).
	s.restoreLevel(ctx, c)
	s.resubscribe(ctx, c)
	cat := &catalog.Catalog{
		Server:       s.name,
		ServerInfo:   init.ServerInfo,
		Capabilities: init.Capabilities,
		Instructions: init.Instructions,
		FetchedAt:    m.opts.clock.Now(),
	}
	if err := fetchLists(ctx, c, init.Capabilities, dirtyTools|dirtyPrompts|dirtyResources, cat); err != nil {
		return fail("list", err)
	}
	l.catalog = cat
	if hook, ok := conn.(ReadyHook); ok {
		if err := hook.Ready(ctx, c); err != nil {
			return fail("ready", err)
		}
	}
	m.startListen(l)
	return l, nil, nil
}

// fetchLists fetches the lists named by which, every page, into cat. A list
// whose capability the server did not declare is left empty.
func fetchLists(ctx context.Context, c *mcpclient.Client, caps mcp.ServerCapabilities, which uint32, cat *catalog.Catalog) error {
	if which&dirtyTools != 0 && caps.Tools != nil {
		r, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		cat.Tools = r.Tools
	}
	if which&dirtyPrompts != 0 && caps.Prompts != nil {
		r, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			return fmt.Errorf("prompts: %w", err)
		}
		cat.Prompts = r.Prompts
	}
	if which&dirtyResources != 0 && caps.Resources != nil {
		r, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return fmt.Errorf("resources: %w", err)
		}
		cat.Resources = r.Resources
		t, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil && !errors.Is(err, mcp.ErrMethodNotFound) {
			return fmt.Errorf("resource templates: %w", err)
		}
		if t != nil {
			cat.ResourceTemplates = t.ResourceTemplates
		}
	}
	return nil
}
