// Package http connects to MCP servers over Streamable HTTP (both protocol
// generations mcp-go speaks: 2026-07-28 and the initialize handshake) and
// the legacy HTTP+SSE transport, and reports when such a connection is
// known to be dead.
//
// A Conn satisfies the client package's Conn and ReadyHook interfaces. It
// hands the Manager an mcp-go transport that is not started yet, and keeps
// what mcp-go does not report in view: the server forgetting the session,
// and the notification stream breaking off. On the older protocol a broken
// stream is reopened in its session (session.go): a restart shows as the
// server's 404 for the session, or as a server that cannot be reached, in
// well under a second and before the next call; a cut alone does not end
// the Conn. Each Conn has its own HTTP connection pool, closed with it, so
// a dial after a server restart never inherits a dead keep-alive
// connection.
//
// Credentials stay with the server's origin (scheme, host and port): a
// redirect to another origin, https to http included, is refused
// (ErrCrossOriginRedirect), so neither the Authorizer's token nor the
// spec's headers nor a request's body ever reach it; the Authorizer is
// asked only for requests to the server's origin. Every error a Conn
// returns, and every record it and mcp-go under it log, has the URLs in it
// redacted: userinfo and query values (an api_key=...) replaced.
package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	nethttp "net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/frame"
	"github.com/mcpfleet/mcpfleet/internal/quiet"
	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// Conn is one HTTP connection to an MCP server. Create it with Dial, speak
// MCP over Transport with an mcp-go client, call Ready after Initialize,
// and Close it when done.
type Conn struct {
	spec   Spec
	opts   options
	origin string       // the server URL's: the Authorizer's credentials go only there
	log    *slog.Logger // redacts every URL

	pool *nethttp.Transport // this Conn's own connections
	tr   transport.Interface

	// life ends at Close; the notification stream and the Listen goroutine
	// run under it.
	life       context.Context
	cancelLife context.CancelFunc
	// abort ends when a Close call's context ends: it cuts the DELETE short.
	abort       context.Context
	cancelAbort context.CancelFunc

	stream *streamState

	done     chan struct{}
	failOnce sync.Once
	errMu    sync.Mutex // guards err
	err      error

	closing   atomic.Bool
	closeOnce sync.Once
	closed    chan struct{} // closed when teardown finished

	// listenMu guards the fields below and orders the Listen runs: each
	// run supersedes the one before it, and starts only once that one has
	// returned, so the last run started is the one that stays.
	listenMu      sync.Mutex
	listenStarted bool       // Ready started listening (or found nothing to listen for)
	listening     *listenRun // the latest run; nil before the first
	resources     []string   // the resource subscriptions of the stream
	listeners     sync.WaitGroup

	notes cancelNotes // notifications/cancelled under way

	// tooLarge holds the answers that were over the size limit (see
	// limitBody).
	tooLarge frame.TooLargeAnswers

	onResume atomic.Pointer[func()] // OnResume's callback
	reopens  atomic.Int64           // the notification stream reopened in its session
	onReopen atomic.Pointer[func()] // OnStreamReopen's callback
	// gaveUp is set when Ready stopped waiting for the stream: a stream
	// that opens after it tells OnStreamReopen's callback, since what the
	// server sent before it opened went nowhere.
	gaveUp atomic.Bool

	// discoverFailed is why server/discover failed without the server's
	// answer (noteDiscover); nil when it did not.
	discoverFailed atomic.Pointer[error]

	// The session (session.go).
	keep        atomic.Bool  // KeepSession: Close sends no DELETE
	joined      atomic.Bool  // the Conn went on in the session of WithRejoin
	rejoinState atomic.Int32 // rejoinUndecided, rejoinJoined, rejoinDone
}

// Dial checks that the server is reachable and returns a Conn whose
// transport is not started yet. While nothing listens at spec.URL it fails
// fast with an error for which isNotSent is true. The Conn outlives ctx:
// only Close ends it.
func Dial(ctx context.Context, spec Spec, opts ...Option) (*Conn, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	dialer := &net.Dialer{Timeout: o.dialTimeout, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if o.wrapDial != nil {
		dial = o.wrapDial(dial)
	}
	pool := &nethttp.Transport{
		Proxy:                 nethttp.ProxyFromEnvironment,
		DialContext:           dialTracked(dial),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if err := probe(ctx, dialer, pool, spec.URL); err != nil {
		if o.rejoin != nil && connRefused(err) {
			err = &goneError{err: err}
		}
		return nil, redact.Error(&Error{Op: "dial", URL: redact.URL(spec.URL), Err: err}, spec.URL)
	}
	u, _ := url.Parse(spec.URL) // Validate parsed it
	// Every record the Conn and mcp-go under it write goes through the
	// redaction: mcp-go logs the errors of its requests, which quote the
	// URL, query and all.
	logger := redact.Logger(o.logger, spec.URL)

	c := &Conn{
		spec:   spec,
		opts:   o,
		origin: origin(u),
		log:    logger.With("url", redact.URL(spec.URL)),
		pool:   pool,
		stream: newStreamState(),
		done:   make(chan struct{}),
		closed: make(chan struct{}),
	}
	c.life, c.cancelLife = context.WithCancel(context.Background())
	c.abort, c.cancelAbort = context.WithCancel(context.Background())
	c.notes.ctx, c.notes.stop = context.WithCancel(c.life)
	httpClient := &nethttp.Client{
		Transport:     &roundTripper{c: c, base: listenWatch{base: pool}},
		CheckRedirect: checkRedirect,
	}
	headers := make(map[string]string, len(spec.Headers))
	for k, v := range spec.Headers {
		headers[k] = v
	}

	switch spec.Kind {
	case SSE:
		sseOpts := []transport.ClientOption{
			transport.WithHTTPClient(httpClient),
			transport.WithHeaders(headers),
			transport.WithSSELogger(quiet.Debug(logger)),
		}
		if spec.Timeout > 0 {
			sseOpts = append(sseOpts, transport.WithResponseTimeout(spec.Timeout))
		}
		t, err := transport.NewSSE(spec.URL, sseOpts...)
		if err != nil {
			c.release()
			return nil, c.redact(fmt.Errorf("http: %w", err))
		}
		c.tr = &sseTransport{SSE: t, c: c}
	default:
		t, err := transport.NewStreamableHTTP(spec.URL,
			transport.WithHTTPBasicClient(httpClient),
			transport.WithHTTPHeaders(headers),
			transport.WithHTTPLogger(quiet.Debug(logger)),
			// Continuous listening is what makes mcp-go open the GET stream
			// on the older protocol. mcp-go would take it to rule out
			// 2026-07-28, so streamableTransport hides that; on 2026-07-28
			// the transport skips the GET stream by itself.
			transport.WithContinuousListening(),
		)
		if err != nil {
			c.release()
			return nil, c.redact(fmt.Errorf("http: %w", err))
		}
		c.tr = &streamableTransport{StreamableHTTP: t, c: c}
	}
	return c, nil
}

// probe opens and closes one TCP connection to the server (or its proxy),
// so that Dial fails fast while nothing listens there.
func probe(ctx context.Context, dialer *net.Dialer, pool *nethttp.Transport, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	target := u
	if proxy, err := pool.Proxy(&nethttp.Request{URL: u}); err == nil && proxy != nil {
		target = proxy
	}
	host := target.Host
	if target.Port() == "" {
		port := "80"
		if target.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(target.Hostname(), port)
	}
	conn, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return err
	}
	return conn.Close()
}

// Transport returns the mcp-go transport to build a client on. It is not
// started; start it once (mcpclient.Client.Start does). Its Start ignores
// the deadline of the context it is given once it returned: the stream it
// opens lives until Close.
func (c *Conn) Transport() transport.Interface { return c.tr }

// Spec returns the spec the Conn was dialed with.
func (c *Conn) Spec() Spec { return c.spec }

// Done is closed as soon as the connection is known to be dead: the
// notification stream broke off and could not be reopened in its session
// (on 2026-07-28: broke off), the server forgot the session, or Close was
// called. A failed call alone does not close it.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why Done was closed; it wraps ErrStreamLost, ErrStaleSession
// (which also matches transport.ErrSessionTerminated) or ErrClosed. It is
// nil while Done is open.
func (c *Conn) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// Ready opens the notification stream once the handshake succeeded, and
// waits (up to the stream open timeout) until the server accepted it or
// said it does not offer one. On 2026-07-28 it runs Listen for list_changed
// notifications (and the resource subscriptions cl has pending, see
// SubscribeResource); on the
// older protocol the transport's own GET stream is awaited; for SSE the
// stream is open since Start.
//
// It fails when the server rejects 2026-07-28 at this first real request
// (isUnsupportedProtocol is then true: dial again with WithLegacyProtocol),
// and when the connection died meanwhile. A server that offers no stream is
// not an error, but then a restart shows only at the next call.
func (c *Conn) Ready(ctx context.Context, cl *mcpclient.Client) error {
	return c.redact(c.ready(ctx, cl))
}

func (c *Conn) ready(ctx context.Context, cl *mcpclient.Client) error {
	if c.spec.Kind == SSE {
		return c.Err()
	}
	modern := mcp.IsModernProtocol(cl.ProtocolVersion())
	if modern {
		c.startListen(cl)
	}
	timer := time.NewTimer(c.opts.streamOpenTimeout)
	defer timer.Stop()
	for {
		phase, why, changed := c.stream.get()
		switch phase {
		case streamOpen:
			return nil
		case streamEnded:
			return fmt.Errorf("http: notification stream: %w", why)
		case streamRefused:
			if isUnsupportedProtocol(why) {
				return fmt.Errorf("http: subscriptions/listen: %w", why)
			}
			c.log.Info("mcpfleet: server offers no notification stream; a restart will show at the next call",
				"protocol", cl.ProtocolVersion(), "why", why)
			return nil
		}
		select {
		case <-changed:
		case <-c.done:
			return c.Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			c.gaveUp.Store(true) // before the phase is read again: an open after it sees the flag
			if phase, _, _ := c.stream.get(); phase != streamPending {
				continue
			}
			c.log.Warn("mcpfleet: notification stream did not open in time; going on without waiting (its opening will be told as a reopening)",
				"protocol", cl.ProtocolVersion(), "timeout", c.opts.streamOpenTimeout)
			return nil
		}
	}
}

// errNothingToListen is why a Conn has no stream when the server declares
// no list_changed capability and nothing is subscribed.
var errNothingToListen = errors.New("the server declares no list_changed notifications and nothing is subscribed")

// startListen runs cl.Listen until Close, once per Conn; SubscribeResource
// and UnsubscribeResource may replace the run with one for a new filter.
func (c *Conn) startListen(cl *mcpclient.Client) {
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	if c.listenStarted || c.life.Err() != nil {
		return
	}
	c.listenStarted = true
	for _, uri := range cl.PendingSubscriptionFilter().ResourceSubscriptions {
		if !slices.Contains(c.resources, uri) {
			c.resources = append(c.resources, uri)
		}
	}
	// Ask only for what the server offers. A server ends at once a stream
	// with nothing in it to deliver (the protocol says so), and that end
	// must not read as the connection's death: with nothing to ask for,
	// there is no stream at all.
	filter := c.filterLocked(cl)
	if filter.IsEmpty() {
		c.stream.set(streamRefused, errNothingToListen)
		return
	}
	c.listenLocked(cl, filter, nil)
}

// filterLocked is the Listen filter for what the server declares: its
// list_changed kinds, and c's resource subscriptions if it offers
// resources/subscribe. c.listenMu is held.
func (c *Conn) filterLocked(cl *mcpclient.Client) mcp.SubscriptionFilter {
	caps := cl.GetServerCapabilities()
	var filter mcp.SubscriptionFilter
	filter.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	filter.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	filter.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
	if caps.Resources != nil && caps.Resources.Subscribe {
		filter.ResourceSubscriptions = slices.Clone(c.resources)
	}
	return filter
}

// listenRun is one cl.Listen call of a Conn.
type listenRun struct {
	cancel   context.CancelFunc
	opened   chan struct{} // closed when the server accepted the stream
	openOnce sync.Once
	done     chan struct{} // closed when the run is over
	// err is why the run ended, set before done is closed; nil when it
	// was superseded or the Conn closed.
	err error
	// rollback is the run that listens with the previous filter again
	// after the server refused this one's; set before done is closed.
	rollback *listenRun
}

func (r *listenRun) open() { r.openOnce.Do(func() { close(r.opened) }) }

func (r *listenRun) isOpen() bool {
	select {
	case <-r.opened:
		return true
	default:
		return false
	}
}

// listenRunKey marks the context of a run's Listen call, so that
// listenWatch can tell the run its stream opened.
type listenRunKey struct{}

// listenLocked starts a run of cl.Listen for filter that supersedes the
// current one: that one is cancelled at once, and the new one calls Listen
// once it has returned. (mcp-go's Listen supersedes an earlier call by
// itself, but two calls racing could end in the wrong order.) A superseded
// run ends with a context error, which is not the stream's loss. If the
// server refuses the new filter and rollback is not nil, the resource
// subscriptions go back to rollback and the stream is opened again with
// them. c.listenMu is held and c is not closed.
func (c *Conn) listenLocked(cl *mcpclient.Client, filter mcp.SubscriptionFilter, rollback []string) *listenRun {
	prev := c.listening
	if prev != nil {
		prev.cancel()
	}
	ctx, cancel := context.WithCancel(c.life)
	r := &listenRun{cancel: cancel, opened: make(chan struct{}), done: make(chan struct{})}
	c.listening = r
	c.listeners.Add(1)
	go func() {
		defer c.listeners.Done()
		defer close(r.done)
		defer cancel()
		if prev != nil {
			<-prev.done
		}
		if ctx.Err() != nil {
			return // superseded before it began, or closed
		}
		err := cl.Listen(context.WithValue(ctx, listenRunKey{}, r), filter)
		switch {
		case c.life.Err() != nil || c.closing.Load() || ctx.Err() != nil:
			return // closed, or superseded by a later run
		case err != nil && isContextErr(err):
			return // superseded by a Listen call on cl from elsewhere
		case err == nil:
			err = errors.New("server ended subscriptions/listen")
		}
		r.err = err
		if !r.isOpen() && rollback != nil && !isTransportFatal(err) {
			// The server refused the new filter: the previous stream is
			// gone, but the connection is not. Listen as before.
			c.listenMu.Lock()
			if c.listening == r && c.life.Err() == nil && !c.closing.Load() {
				c.resources = rollback
				if f := c.filterLocked(cl); !f.IsEmpty() {
					r.rollback = c.listenLocked(cl, f, nil)
				}
			}
			c.listenMu.Unlock()
			return
		}
		if r.isOpen() {
			// The stream was open and broke off. streamBody has usually
			// seen it first; this also covers a stream opened after Ready
			// found nothing to listen for.
			c.streamLost(err)
			c.fail(fmt.Errorf("%w: %w", ErrStreamLost, err))
			return
		}
		c.streamFailed(err)
	}()
	return r
}

// SubscribeResource adds uri to the resource subscriptions of the
// 2026-07-28 notification stream, and re-opens the stream with them at
// once: on that protocol resources/subscribe is gone, the URIs ride in the
// filter of subscriptions/listen, and a filter is fixed when the stream
// opens. It returns once the server accepted the new stream (or the stream
// open timeout passed; ctx bounds the wait), so notifications/resources/updated
// for uri come from then on. Notifications sent while the old stream is
// being replaced may be lost. Replacing the stream never counts as its
// loss.
//
// It fails, without subscribing, when the server does not declare
// resources.subscribe, and when it refuses the new stream; the stream is
// then opened again as it was before it returns. Before Ready it only records uri, which
// Ready then listens for; it does nothing on the older protocol (use
// resources/subscribe there) and for SSE.
func (c *Conn) SubscribeResource(ctx context.Context, cl *mcpclient.Client, uri string) error {
	return c.redact(c.changeResources(ctx, cl, uri, true))
}

// UnsubscribeResource removes uri from the resource subscriptions of the
// 2026-07-28 notification stream and re-opens the stream without it, as
// SubscribeResource does. Once it returns, the stream carries no more
// updates for uri.
func (c *Conn) UnsubscribeResource(ctx context.Context, cl *mcpclient.Client, uri string) error {
	return c.redact(c.changeResources(ctx, cl, uri, false))
}

func (c *Conn) changeResources(ctx context.Context, cl *mcpclient.Client, uri string, subscribe bool) error {
	if c.spec.Kind == SSE || !mcp.IsModernProtocol(cl.ProtocolVersion()) {
		return nil
	}
	if subscribe {
		if caps := cl.GetServerCapabilities(); caps.Resources == nil || !caps.Resources.Subscribe {
			return fmt.Errorf("http: subscribe to %s: %w", uri, errNoResourceSubscriptions)
		}
	}
	c.listenMu.Lock()
	if c.life.Err() != nil || c.closing.Load() {
		c.listenMu.Unlock()
		return ErrClosed
	}
	if slices.Contains(c.resources, uri) == subscribe {
		c.listenMu.Unlock()
		return nil
	}
	before := slices.Clone(c.resources)
	if subscribe {
		c.resources = append(c.resources, uri)
	} else {
		c.resources = slices.DeleteFunc(c.resources, func(u string) bool { return u == uri })
	}
	if !c.listenStarted {
		c.listenMu.Unlock()
		return nil
	}
	filter := c.filterLocked(cl)
	if filter.IsEmpty() {
		// Nothing left to listen for: end the stream rather than have
		// the server end an empty one.
		if c.listening != nil {
			c.listening.cancel()
		}
		c.listenMu.Unlock()
		return nil
	}
	r := c.listenLocked(cl, filter, before)
	c.listenMu.Unlock()
	return c.awaitListen(ctx, r)
}

// errNoResourceSubscriptions is why SubscribeResource fails on a server
// that does not offer resource subscriptions.
var errNoResourceSubscriptions = errors.New("the server does not declare resources.subscribe")

// awaitListen waits until run r, or the run that superseded it, has its
// stream open, bounded by ctx and the stream open timeout.
func (c *Conn) awaitListen(ctx context.Context, r *listenRun) error {
	timer := time.NewTimer(c.opts.streamOpenTimeout)
	defer timer.Stop()
	for {
		select {
		case <-r.opened:
			return nil
		case <-r.done:
			if r.isOpen() {
				return nil
			}
			if r.err != nil {
				err := fmt.Errorf("http: subscriptions/listen: %w", r.err)
				if r.rollback != nil {
					// Refused: return once the stream is back as it was.
					select {
					case <-r.rollback.opened:
					case <-r.rollback.done:
					case <-c.done:
					case <-ctx.Done():
					case <-timer.C:
					}
				}
				return err
			}
			if err := c.Err(); err != nil {
				return err
			}
			c.listenMu.Lock()
			next := c.listening
			c.listenMu.Unlock()
			if next == r {
				// Ended by an unsubscribe that left nothing to listen for,
				// or by Close.
				return nil
			}
			r = next // it carries this change too
		case <-c.done:
			return c.Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			c.log.Warn("mcpfleet: notification stream did not reopen in time; going on without waiting",
				"timeout", c.opts.streamOpenTimeout)
			return nil
		}
	}
}

// listenWatch tells a Listen run that the server accepted its stream: the
// answer is an event stream, which a server starts only once it set the
// subscriptions up (mcp-go writes the headers with the acknowledgement).
type listenWatch struct{ base nethttp.RoundTripper }

func (w listenWatch) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil || resp.StatusCode != nethttp.StatusOK {
		return resp, err
	}
	if r, ok := req.Context().Value(listenRunKey{}).(*listenRun); ok {
		if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType == "text/event-stream" {
			r.open()
		}
	}
	return resp, nil
}

// streamFailed records that the stream could not be opened, or broke off
// if it was open.
func (c *Conn) streamFailed(err error) {
	if c.stream.set(streamRefused, err) {
		return
	}
	c.streamLost(err)
}

// streamLost records that the open stream broke off: the connection is dead.
func (c *Conn) streamLost(err error) {
	if c.stream.set(streamEnded, err) {
		c.fail(fmt.Errorf("%w: %w", ErrStreamLost, err))
	}
}

// redact returns err with the URLs in it redacted, the server's above all
// (see internal/redact): every error that leaves the Conn goes through it,
// so that no URL secret reaches the Manager's status, events or logs.
func (c *Conn) redact(err error) error { return redact.Error(err, c.spec.URL) }

// fail closes Done with err, once.
func (c *Conn) fail(err error) {
	err = c.redact(&Error{URL: redact.URL(c.spec.URL), Err: err})
	c.failOnce.Do(func() {
		c.errMu.Lock()
		c.err = err
		c.errMu.Unlock()
		close(c.done)
		// Idle connections to a dead server are dead too: dropping them
		// makes the next request dial, and fail as not sent while the
		// server is down, rather than fail with EOF on a dead keep-alive.
		c.pool.CloseIdleConnections()
		if !errors.Is(err, ErrClosed) {
			c.log.Info("mcpfleet: http connection lost", "err", err)
		}
	})
}

// Close tears the connection down: it sends the session DELETE where a
// session exists and the host ends it (not after KeepSession, nor after
// the Conn failed: see SessionKeeper), bounded by the delete timeout and
// ctx; it ends the
// notification stream and every request in flight, and closes the Conn's
// connections. It returns by the time ctx ends at the latest, and is safe
// to call more than once and concurrently.
func (c *Conn) Close(ctx context.Context) error {
	stop := context.AfterFunc(ctx, c.cancelAbort)
	defer stop()
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		go c.teardown()
	})
	select {
	case <-c.closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Conn) teardown() {
	defer close(c.closed)
	c.notes.closeAndWait()
	_ = c.tr.Close() // the DELETE, for a legacy streamable HTTP session
	// Under listenMu: no Listen run starts once life has ended.
	c.listenMu.Lock()
	c.cancelLife()
	c.listenMu.Unlock()
	c.listeners.Wait()
	c.fail(ErrClosed)
	c.release()
}

// release frees the connection pool and the contexts.
func (c *Conn) release() {
	if c.cancelLife != nil {
		c.cancelLife()
		c.cancelAbort()
	}
	c.pool.CloseIdleConnections()
}

// streamableTransport is mcp-go's Streamable HTTP transport as a Conn
// needs it.
type streamableTransport struct {
	*transport.StreamableHTTP
	c *Conn
}

// Start starts the transport under the Conn's lifetime rather than ctx's:
// mcp-go runs the older protocol's GET stream under the context Start gets.
func (t *streamableTransport) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.c.redact(t.StreamableHTTP.Start(t.c.life))
}

// SendNotification sends n; its error quotes no URL secret.
func (t *streamableTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return t.c.redact(t.StreamableHTTP.SendNotification(ctx, n))
}

// Close ends the session; its error quotes no URL secret.
func (t *streamableTransport) Close() error { return t.c.redact(t.StreamableHTTP.Close()) }

// RequiresLegacyProtocol hides that continuous listening is on (mcp-go
// would skip 2026-07-28 for it), unless WithLegacyProtocol asked for
// exactly that.
func (t *streamableTransport) RequiresLegacyProtocol() bool { return t.c.opts.legacy }

// sseTransport is mcp-go's SSE transport as a Conn needs it.
type sseTransport struct {
	*transport.SSE
	c *Conn
}

// Start opens the event stream. ctx bounds the start; the stream then
// lives until Close, not until ctx ends (mcp-go reads it under the context
// Start gets).
func (t *sseTransport) Start(ctx context.Context) error {
	streamCtx, cancel := context.WithCancel(t.c.life)
	streamCtx, ex := withExchange(streamCtx)
	stop := context.AfterFunc(ctx, cancel)
	err := t.SSE.Start(streamCtx)
	if !stop() && err == nil {
		// ctx ended just as Start succeeded, and took the stream with it.
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		// The stream's GET is the legacy transport's handshake.
		return t.c.redact(t.c.describe(ctx, ex, true, err))
	}
	context.AfterFunc(t.c.life, cancel)
	return nil
}

// SendNotification sends n; its error quotes no URL secret.
func (t *sseTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return t.c.redact(t.SSE.SendNotification(ctx, n))
}

// Close ends the stream; its error quotes no URL secret.
func (t *sseTransport) Close() error { return t.c.redact(t.SSE.Close()) }

// SetConnectionLostHandler hands handler the stream's loss with no URL
// secret in it.
func (t *sseTransport) SetConnectionLostHandler(handler func(error)) {
	t.SSE.SetConnectionLostHandler(func(err error) { handler(t.c.redact(err)) })
}
