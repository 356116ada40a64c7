package client

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/internal/failure"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// dialResult is what one connection attempt found out. The dial writes
// nothing of the slot's: its runner hands the result to the slot, which
// applies it under its lock (slot.applyDial).
type dialResult struct {
	lease *lease // nil if the attempt failed
	err   error
	// legacy: the server rejected 2026-07-28 and took the older handshake.
	legacy bool
	// stderr: the last lines a failed attempt's server wrote to stderr.
	stderr []string
	// exitedAtStart, for an attempt whose server exited before it
	// answered the handshake, says how it exited ("exit status 3"), so
	// that the connect loop can tell a server that cannot start (the
	// same exit three times in a row) from an outage.
	exitedAtStart string
	// rejoinDeclined: the attempt was to rejoin a session, and the server
	// no longer knows it (a new one was started).
	rejoinDeclined bool
}

// dial makes one connection attempt: the Conn, the MCP handshake, the
// catalog. A server that accepts server/discover but rejects 2026-07-28 at
// its first real request is dialled again on the older handshake.
func (r *runner) dial(ctx context.Context, legacy bool) (res dialResult) {
	m := r.s.m
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
	var failed []transport.Conn
	defer func() {
		release()
		for _, c := range failed {
			m.closeConn(c)
		}
	}()
	res = r.dialOnce(ctx, legacy, &failed)
	if res.err != nil && !legacy && unsupportedProtocol(res.err) && ctx.Err() == nil {
		m.opts.logger.Debug("mcpfleet: server rejected protocol 2026-07-28; using the initialize handshake",
			"server", r.s.name)
		res = r.dialOnce(ctx, true, &failed)
		res.legacy = res.err == nil
	}
	return res
}

// unsupportedProtocol reports whether err is JSON-RPC -32022, a server
// that refuses the protocol version asked for: one that answered
// server/discover and refused 2026-07-28 at its first real request (the
// official Go SDK's servers do) is dialled again on the older handshake.
func unsupportedProtocol(err error) bool {
	var unsupported mcp.UnsupportedProtocolVersionError
	return errors.As(err, &unsupported)
}

// closeConn closes the connection of a failed dial, bounded by the close
// timeout. Nothing was installed, so there is nothing to report.
func (m *Manager) closeConn(c transport.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.closeTimeout)
	defer cancel()
	if k, ok := c.(transport.SessionKeeper); ok && k.Rejoined() {
		// The session is the lost runtime's, which the next dial rejoins.
		k.KeepSession()
	}
	_ = c.Close(ctx)
}

// dialOnce makes one attempt on one handshake. A failed attempt's Conn is
// added to failed, for dial to close, and its server's last stderr lines
// are returned with the error.
func (r *runner) dialOnce(ctx context.Context, legacy bool, failed *[]transport.Conn) dialResult {
	s, m := r.s, r.s.m
	cfg := s.config()
	var auth mcphttp.Authorizer
	if cfg.auth != nil {
		auth = cfg.auth
	}
	s.mu.Lock()
	rejoin := s.rejoin
	s.mu.Unlock()
	if rejoin != nil {
		legacy = true // a session is of the older protocol
	}
	conn, err := cfg.spec.dialer(&m.opts, legacy, cfg.limits, auth, rejoin)(ctx)
	if err != nil {
		return dialResult{err: err} // the transport's error names its step
	}
	l := &lease{slot: s, conn: conn, kick: make(chan struct{}, 1)}
	if rs, ok := conn.(transport.Resumer); ok {
		rs.OnResume(s.st.resumed)
	}
	if k, ok := conn.(transport.SessionKeeper); ok {
		k.OnStreamReopen(l.onStreamReopen)
	}
	l.ctx, l.cancel = context.WithCancel(m.ctx)
	began := m.opts.clock.Now()
	declined := false // the session to rejoin is gone: this attempt started one
	fail := func(step string, err error) dialResult {
		l.cancel()
		err = explain(conn, plain(err))
		*failed = append(*failed, conn)
		res := dialResult{stderr: stderrOf(conn), rejoinDeclined: declined}
		if step == "start" || step == "initialize" {
			res.exitedAtStart = exitedHow(conn)
		}
		res.err = handshakeError(ctx, conn, step, m.opts.clock.Now().Sub(began), err)
		return res
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
	declined = rejoin != nil && !rejoined(conn)
	// What the host asked of earlier runtimes holds for this one too, from
	// before it counts as Connected (and, on 2026-07-28 over HTTP, before
	// Ready opens the stream whose filter carries the subscriptions). A
	// runtime that rejoined the session of the one before it has it all
	// there already.
	if !rejoined(conn) {
		s.restoreLevel(ctx, c)
		s.resubscribe(ctx, c)
	}
	cat := &catalog.Catalog{
		Server:       s.name,
		ServerInfo:   init.ServerInfo,
		Capabilities: init.Capabilities,
		Instructions: init.Instructions,
		FetchedAt:    m.opts.clock.Now(),
	}
	// The stream first, then the lists: a change between the two is then
	// in the lists or announced on the stream. Listed first, a tool added
	// before the stream opened went unseen until the next change (a
	// 2026-07-28 server sends list_changed only to a stream that listens;
	// transport/http's Ready waits until the server took it). The Manager's
	// own stream (stdio, in process) is awaited likewise: until the server
	// acknowledged it.
	if hook, ok := conn.(transport.ReadyHook); ok {
		if err := hook.Ready(ctx, c); err != nil {
			return fail("ready", err)
		}
	}
	if err := m.awaitListen(ctx, l, m.startListen(l)); err != nil {
		return fail("listen", err)
	}
	if err := fetchLists(ctx, m.listTools(s, c), c, init.Capabilities, dirtyTools|dirtyPrompts|dirtyResources, cfg.limits, cat); err != nil {
		return fail("list", err)
	}
	l.catalog = cat
	return dialResult{lease: l, rejoinDeclined: declined}
}

// fetchLists fetches the lists named by which, every page, into cat,
// within limits; tools lists a page of tools (Manager.listTools). A list whose capability the server did not declare is
// left empty.
func fetchLists(ctx context.Context, tools func(context.Context, mcp.ListToolsRequest) (*mcp.ListToolsResult, error),
	c *mcpclient.Client, caps mcp.ServerCapabilities, which uint32, limits Limits, cat *catalog.Catalog) error {
	var err error
	if which&dirtyTools != 0 && caps.Tools != nil {
		if cat.Tools, err = fetchPages(ctx, limits, "tools", tools, toolsPage); err != nil {
			return err
		}
	}
	if which&dirtyPrompts != 0 && caps.Prompts != nil {
		if cat.Prompts, err = fetchPages(ctx, limits, "prompts", c.ListPromptsByPage, promptsPage); err != nil {
			return err
		}
	}
	if which&dirtyResources != 0 && caps.Resources != nil {
		if cat.Resources, err = fetchPages(ctx, limits, "resources", c.ListResourcesByPage, resourcesPage); err != nil {
			return err
		}
		cat.ResourceTemplates, err = fetchPages(ctx, limits, "resource templates", c.ListResourceTemplatesByPage, templatesPage)
		if errors.Is(err, mcp.ErrMethodNotFound) {
			cat.ResourceTemplates, err = nil, nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// listRequest is the shape of mcp-go's list requests (ListToolsRequest
// and the others): a page's cursor, and headers.
type listRequest interface {
	~struct {
		mcp.PaginatedRequest
		Header nethttp.Header `json:"-"`
	}
}

// The items and the next cursor of a page of each list, for fetchPages.
func toolsPage(r *mcp.ListToolsResult) ([]mcp.Tool, mcp.Cursor) {
	return r.Tools, r.NextCursor
}
func promptsPage(r *mcp.ListPromptsResult) ([]mcp.Prompt, mcp.Cursor) {
	return r.Prompts, r.NextCursor
}
func resourcesPage(r *mcp.ListResourcesResult) ([]mcp.Resource, mcp.Cursor) {
	return r.Resources, r.NextCursor
}
func templatesPage(r *mcp.ListResourceTemplatesResult) ([]mcp.ResourceTemplate, mcp.Cursor) {
	return r.ResourceTemplates, r.NextCursor
}

// fetchPages fetches every page of one list with list, one of mcp-go's
// List…ByPage methods; page takes the items and the next cursor out of
// its answer. It fetches at most limits.MaxCatalogPages pages and
// limits.MaxCatalogItems items, and never a cursor twice, so that a
// server that pages without end, or offers an absurd catalog, costs a
// bounded amount and gets an error that says which limit it broke.
func fetchPages[Req listRequest, Res, T any](ctx context.Context, limits Limits, what string,
	list func(context.Context, Req) (*Res, error), page func(*Res) ([]T, mcp.Cursor)) ([]T, error) {
	var (
		all    []T
		cursor mcp.Cursor
		seen   = map[mcp.Cursor]bool{}
	)
	for pages := 1; ; pages++ {
		r, err := list(ctx, Req{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cursor}}})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		items, next := page(r)
		all = append(all, items...)
		if on(limits.MaxCatalogItems) && len(all) > limits.MaxCatalogItems {
			return nil, fmt.Errorf("%s: %w: more than %d (Limits.MaxCatalogItems)", what, ErrCatalogTooLarge, limits.MaxCatalogItems)
		}
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: %w: the server sent the cursor of an earlier page again", what, ErrCatalogTooLarge)
		}
		if on(limits.MaxCatalogPages) && pages >= limits.MaxCatalogPages {
			return nil, fmt.Errorf("%s: %w: more than %d pages (Limits.MaxCatalogPages)", what, ErrCatalogTooLarge, limits.MaxCatalogPages)
		}
		seen[next] = true
		cursor = next
	}
}

// handshakeError is the error of a dial that failed at step (start,
// initialize, list, ready), with what the server did meanwhile where that
// explains it: a step that ran out of time says what it waited for and
// for how long; the lines a stdio server wrote to stdout that were not
// JSON-RPC are quoted (a banner, or a server meant for another transport),
// and its stderr, when no exit already quoted it.
func handshakeError(ctx context.Context, c transport.Conn, step string, took time.Duration, err error) error {
	e := &dialStepError{step: step, err: err}
	if ctx.Err() != nil && failure.Context(err) {
		e.waited = took
	}
	if r, ok := c.(transport.Reporter); ok {
		if !errors.Is(err, transport.ErrNotMCP) { // which quotes the line itself
			e.stray, e.strayTotal = r.Stray()
		}
		if connErr(c) == nil {
			e.stderr = r.Stderr()
			if len(e.stderr) > stderrQuoted {
				e.stderr = e.stderr[len(e.stderr)-stderrQuoted:]
			}
		}
	}
	return e
}

// stderrQuoted is how many of a live server's last stderr lines the error
// of a handshake that timed out quotes.
const stderrQuoted = 5

// dialStepError is handshakeError's error. It wraps the step's own error.
type dialStepError struct {
	step   string
	err    error
	waited time.Duration // set when the step ran out of time

	stray      []string // the first lines on stdout that were not JSON-RPC
	strayTotal int
	stderr     []string // of a server that is still running
}

// waitedFor says what each step of a dial waits for.
var waitedFor = map[string]string{
	"start":      "the transport to start",
	"initialize": "an answer to initialize",
	"list":       "the catalog (tools/list and the other lists)",
	"ready":      "the notification stream to open",
}

func (e *dialStepError) Error() string {
	var b strings.Builder
	b.WriteString(e.step)
	b.WriteString(": ")
	if e.waited > 0 {
		fmt.Fprintf(&b, "gave up after %v waiting for %s", e.waited.Round(time.Millisecond), waitedFor[e.step])
		if e.strayTotal == 0 && len(e.stderr) == 0 {
			b.WriteString("; the server wrote nothing meanwhile")
		}
	} else {
		b.WriteString(e.err.Error())
	}
	if e.strayTotal > 0 {
		lines := "1 line"
		if e.strayTotal > 1 {
			lines = strconv.Itoa(e.strayTotal) + " lines"
		}
		fmt.Fprintf(&b, "; the server wrote %s to stdout that %s not JSON-RPC, first %q (a stdio server may write only JSON-RPC messages to stdout: is it a server for another transport, or does it need an argument to speak stdio?)",
			lines, map[bool]string{true: "are", false: "is"}[e.strayTotal > 1], e.stray[0])
	}
	if len(e.stderr) > 0 {
		b.WriteString("; stderr: ")
		b.WriteString(strings.Join(e.stderr, " | "))
	}
	return b.String()
}

func (e *dialStepError) Unwrap() error { return e.err }

// exitedHow says how the server of a connection that died exited ("exit
// status 3", "signal SIGSEGV"), or "" if it is alive, was closed by us, or
// its transport has no process.
func exitedHow(c transport.Conn) string {
	var ee *stdio.ExitError
	if err := connErr(c); err == nil || !errors.As(err, &ee) || ee.Closed {
		return ""
	}
	if ee.Signal != 0 {
		return "signal " + ee.Signal.String()
	}
	return "exit status " + strconv.Itoa(ee.Code)
}
