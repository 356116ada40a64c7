package client

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpfleet/mcpfleet/internal/failure"
	"reflect"
	"slices"
	"strings"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// CallOption configures one call.
type CallOption func(*callOptions)

type callOptions struct {
	timeout  time.Duration
	progress func(mcp.ProgressNotification) // WithProgress
}

// applyCallOptions applies opts to a callOptions of its own: the options
// take its address, so it goes to the heap, and a call with no options
// should not pay for that.
func applyCallOptions(opts []CallOption) callOptions {
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithCallTimeout bounds this call, overriding the server's spec Timeout.
func WithCallTimeout(d time.Duration) CallOption {
	return func(o *callOptions) { o.timeout = d }
}

// CallTool calls tool on server with args (anything that encodes to a JSON
// object, or nil).
//
// While the server is connecting or reconnecting the call waits for it, up
// to the ready timeout, then fails with *UnavailableError. A request the
// server provably never ran (stale session, connection refused) is retried
// once on the next runtime. A request lost in flight is replayed once only if
// the tool declares readOnlyHint or idempotentHint; otherwise the error
// wraps ErrOutcomeUnknown. A result with IsError set is a result, not an
// error. WithProgress hands the call's progress notifications to a callback.
//
// When ctx ends before the answer, the server is sent notifications/cancelled
// for the request, on every transport: mcp-go sends it over stdio, the
// HTTP transport over HTTP, in the background and bounded (closing the
// runtime waits for it).
//
// A tool that the server's ToolFilter keeps out is not called: the error
// is a *ToolFilteredError, which matches ErrToolNotFound.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args any, opts ...CallOption) (*mcp.CallToolResult, error) {
	if err := m.filteredTool(server, tool); err != nil {
		return nil, withOp("call tool "+tool, server, err)
	}
	var (
		res *mcp.CallToolResult
		err error
	)
	if len(m.opts.interceptors) == 0 {
		res, err = m.callTool(ctx, server, tool, args, opts, nil)
	} else {
		opts := slices.Clone(opts) // the closure must not make the caller's escape
		res, err = intercept(ctx, m, server, "tools/call", tool, "call tool "+tool, args,
			func(ctx context.Context, args any, gen *uint64) (*mcp.CallToolResult, error) {
				return m.callTool(ctx, server, tool, args, opts, gen)
			})
	}
	if err != nil {
		return nil, withOp("call tool "+tool, server, err)
	}
	return res, nil
}

// callTool is CallTool past the interceptors; gen, if not nil, is where the
// generation the request went to is noted.
func (m *Manager) callTool(ctx context.Context, server, tool string, args any, opts []CallOption, gen *uint64) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = omitNil(args)
	return do(ctx, m, server, call{"tools/call", tool}, gen, opts, func(s *slot) bool { return s.replayable(tool) },
		func(ctx context.Context, c *mcpclient.Client) (*mcp.CallToolResult, error) {
			req := req
			req.Params.Meta = withMeta(ctx, req.Params.Meta)
			return c.CallTool(ctx, req)
		})
}

// Call calls a tool by its qualified name in the View (server + separator +
// tool, or the short form the View gave it).
//
// A server with no catalog yet (lazy, or connecting for the first time) is
// known by its prefix before its tools are: a call to prefix + separator +
// tool waits for it as CallTool does (and starts a lazy one), then looks
// the name up again. Short forms are known only from a catalog. With
// interceptors, such a call goes through them before anything starts,
// as a CallTool of the server's tool.
func (m *Manager) Call(ctx context.Context, qualifiedTool string, args any, opts ...CallOption) (*mcp.CallToolResult, error) {
	if t, ok := m.pub.View().Tool(qualifiedTool); ok {
		return m.CallTool(ctx, t.Server, t.Tool.Name, args, opts...)
	}
	if err := m.filteredQualified(qualifiedTool); err != nil {
		return nil, withOp("call "+qualifiedTool, "", err)
	}
	if s, tool := m.catalogless(qualifiedTool); s != nil {
		if len(m.opts.interceptors) > 0 {
			// The interceptors decide before anything is started: the
			// call goes to the server by its own tool name, and CallTool
			// starts the server if they pass it on. A name the server
			// turns out not to have is its error answer, not ErrToolNotFound.
			return m.CallTool(ctx, s.name, tool, args, opts...)
		}
		l, err := s.acquire(ctx)
		if err != nil {
			return nil, withOp("call "+qualifiedTool, s.name, err)
		}
		l.release()
		if t, ok := m.pub.View().Tool(qualifiedTool); ok {
			return m.CallTool(ctx, t.Server, t.Tool.Name, args, opts...)
		}
	}
	return nil, fmt.Errorf("mcpfleet: %w: %q", ErrToolNotFound, qualifiedTool)
}

// catalogless returns the server with no published catalog, in a state a
// call waits on (lazy, connecting), whose tool prefix and the separator
// begin qualifiedTool, if any, and the tool name that follows them. It
// walks the servers: it runs only when the View has no such tool.
func (m *Manager) catalogless(qualifiedTool string) (*slot, string) {
	sep := m.opts.naming.SeparatorOrDefault()
	v := m.pub.View()
	m.mu.RLock()
	defer m.mu.RUnlock()
	for name, s := range m.slots {
		tool, ok := strings.CutPrefix(qualifiedTool, s.toolPrefix()+sep)
		if !ok {
			continue
		}
		if _, ok := v.Catalog(name); ok {
			continue
		}
		s.mu.Lock()
		st := s.state
		s.mu.Unlock()
		switch st {
		case lifecycle.Disconnected, lifecycle.Connecting, lifecycle.Reconnecting:
			return s, tool // a call would wait for it
		}
	}
	return nil, ""
}

// toolPrefix is what the server's qualified tool names begin with, before
// the separator: its ToolPrefix, or its name.
func (s *slot) toolPrefix() string {
	if p := s.config().prefix; p != "" {
		return p
	}
	return s.name
}

// GetPrompt gets a prompt from server, rendered with args. Prompts are
// read-only, so a request lost in flight is replayed once.
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args map[string]string, opts ...CallOption) (*mcp.GetPromptResult, error) {
	var (
		res *mcp.GetPromptResult
		err error
	)
	if len(m.opts.interceptors) == 0 {
		res, err = m.getPrompt(ctx, server, name, args, opts, nil)
	} else {
		opts := slices.Clone(opts)
		var a any
		if args != nil {
			a = args
		}
		res, err = intercept(ctx, m, server, "prompts/get", name, "get prompt "+name, a,
			func(ctx context.Context, args any, gen *uint64) (*mcp.GetPromptResult, error) {
				a, _ := args.(map[string]string) // intercept checked the type
				return m.getPrompt(ctx, server, name, a, opts, gen)
			})
	}
	if err != nil {
		return nil, withOp("get prompt "+name, server, err)
	}
	return res, nil
}

// getPrompt is GetPrompt past the interceptors, as callTool is CallTool.
func (m *Manager) getPrompt(ctx context.Context, server, name string, args map[string]string, opts []CallOption, gen *uint64) (*mcp.GetPromptResult, error) {
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return do(ctx, m, server, call{"prompts/get", name}, gen, opts, alwaysReplayable,
		func(ctx context.Context, c *mcpclient.Client) (*mcp.GetPromptResult, error) {
			req := req
			req.Params.Meta = withMeta(ctx, req.Params.Meta)
			return c.GetPrompt(ctx, req)
		})
}

// ReadResource reads a resource from server. Reads are replayed once if
// lost in flight.
func (m *Manager) ReadResource(ctx context.Context, server, uri string, opts ...CallOption) (*mcp.ReadResourceResult, error) {
	var (
		res *mcp.ReadResourceResult
		err error
	)
	if len(m.opts.interceptors) == 0 {
		res, err = m.readResource(ctx, server, uri, opts, nil)
	} else {
		opts := slices.Clone(opts)
		res, err = intercept(ctx, m, server, "resources/read", uri, "read resource "+uri, nil,
			func(ctx context.Context, _ any, gen *uint64) (*mcp.ReadResourceResult, error) {
				return m.readResource(ctx, server, uri, opts, gen)
			})
	}
	if err != nil {
		return nil, withOp("read resource "+uri, server, err)
	}
	return res, nil
}

// readResource is ReadResource past the interceptors, as callTool is
// CallTool.
func (m *Manager) readResource(ctx context.Context, server, uri string, opts []CallOption, gen *uint64) (*mcp.ReadResourceResult, error) {
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	return do(ctx, m, server, call{"resources/read", uri}, gen, opts, alwaysReplayable,
		func(ctx context.Context, c *mcpclient.Client) (*mcp.ReadResourceResult, error) {
			req := req
			req.Params.Meta = withMeta(ctx, req.Params.Meta)
			return c.ReadResource(ctx, req)
		})
}

func alwaysReplayable(*slot) bool { return true }

// omitNil turns a typed nil (a nil map, say) into an untyped one. Encoded,
// a typed nil is "arguments": null, which some servers reject; an untyped
// nil leaves the field out, which every server accepts as "no arguments".
func omitNil(args any) any {
	switch v := reflect.ValueOf(args); v.Kind() {
	case reflect.Map, reflect.Pointer, reflect.Slice, reflect.Interface:
		if v.IsNil() {
			return nil
		}
	}
	return args
}

// call says what a request is, for Stats and the Observer.
type call struct {
	method, name string
}

// do runs one request against a server's current runtime, with the waiting,
// retry and health rules every request shares, and counts how it ended. If
// gen is not nil (an interceptor asks), the generation of the runtime the
// request was last sent to is noted there.
func do[T any](ctx context.Context, m *Manager, server string, c call, gen *uint64, opts []CallOption,
	replayable func(*slot) bool, send func(context.Context, *mcpclient.Client) (T, error)) (T, error) {
	s, err := m.slot(server)
	if err != nil {
		var zero T
		return zero, err
	}
	obs := m.opts.observer
	var req *Request
	if obs != nil {
		req = &Request{Server: server, Method: c.method, Name: c.name}
		ctx = obs.RequestStart(ctx, req)
		ctx = context.WithValue(ctx, observerMetaKey{}, req)
	} else if gen != nil {
		req = &Request{} // for the attempts' generation alone
	}
	res, err := doOn(ctx, s, req, opts, replayable, send)
	if gen != nil && req.Generation != 0 {
		*gen = req.Generation
	}
	o := outcomeOf(res, err)
	s.st.calls[o].Add(1)
	if obs != nil {
		obs.RequestEnd(ctx, req, o, err)
	}
	return res, err
}

// outcomeOf classifies how a request ended, from what it returned.
func outcomeOf[T any](res T, err error) Outcome {
	switch {
	case err == nil:
		if r, ok := any(res).(*mcp.CallToolResult); ok && r != nil && r.IsError {
			return OutcomeToolError
		}
		return OutcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, ErrServerError):
		return OutcomeServerError
	case errors.Is(err, ErrMessageTooLarge):
		return OutcomeTooLarge
	case errors.Is(err, ErrOutcomeUnknown):
		return OutcomeUnknown
	case errors.Is(err, ErrDisabled), errors.Is(err, ErrClosed):
		return OutcomeDisabled
	}
	return OutcomeUnavailable
}

// doOn is do's request on s: wait for a runtime, send, classify, resend or
// replay at most once each.
func doOn[T any](ctx context.Context, s *slot, req *Request, opts []CallOption,
	replayable func(*slot) bool, send func(context.Context, *mcpclient.Client) (T, error)) (T, error) {
	var zero T
	m, server := s.m, s.name
	cfg := s.config()
	timeout := cfg.spec.Timeout
	var o callOptions
	if len(opts) > 0 {
		o = applyCallOptions(opts)
	}
	if o.timeout > 0 {
		timeout = o.timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if o.progress != nil {
		var done func()
		ctx, done = m.trackProgress(ctx, server, o.progress)
		defer done()
	}
	if sem := cfg.sem; sem != nil {
		if err := sem.Acquire(ctx, 1); err != nil {
			return zero, &ServerError{Server: server, Err: fmt.Errorf("waiting for an in-flight slot: %w", err)}
		}
		defer sem.Release(1)
	}

	// A request provably not sent is sent again once, and a lost one is
	// replayed once if replayable: the two are counted apart, since a
	// replay that finds the server gone is itself not sent.
	resent, replayed := false, false
	var cause error // why the attempt before did not do
	for attempt := 1; ; attempt++ {
		l, err := s.acquire(ctx)
		if err != nil {
			return zero, err
		}
		if attempt > 1 {
			s.st.retries.Add(1)
		}
		if req != nil {
			l.describe(req)
			if obs := m.opts.observer; obs != nil {
				obs.RequestAttempt(ctx, req, attempt, cause)
			}
		}
		res, err := send(ctx, l.client)
		l.release()
		if err == nil {
			l.markAnswered()
			if l.timedOut.Load() {
				s.succeeded(l)
			}
			return res, nil
		}
		cause = err
		if needsUser(err) && ctx.Err() == nil {
			// Not run: the server refused the credentials, and only the
			// user can give better ones.
			s.needsAuthorization(l, err)
			return zero, &ServerError{Server: server, Err: &AuthorizationError{URL: s.authURL(), Cause: err}}
		}
		switch classify(ctx, l.conn, err) {
		case outcomeResult:
			l.markAnswered()
			return zero, serverError(ErrServerError, server, err)
		case outcomeTooLarge:
			// The server answered; the transport discarded the answer as
			// it read it. The connection is fine.
			l.markAnswered()
			return zero, &ServerError{Server: server, Err: tooLarge(err)}
		case outcomeNotSent:
			s.lost(l, err)
			if !resent {
				resent = true
				continue
			}
			s.mu.Lock()
			uerr := s.unavailableLocked(notCanceled(err))
			s.mu.Unlock()
			return zero, uerr
		case outcomeLost:
			err = s.check(l, err)
			if ctx.Err() == nil {
				if !replayed && replayable(s) {
					replayed = true
					continue
				}
				return zero, serverError(ErrOutcomeUnknown, server, notCanceled(err))
			}
			// The caller's context ended while the failure was checked:
			// some transports give up a moment before the deadline.
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.timedOut(l, err)
		}
		return zero, canceledError(ctx, server, err)
	}
}

// notCanceled hides the context errors in the chain of a failure caused by
// a context other than the caller's (the runtime's, ended when it was
// closed; a dial's timeout; a run of call timeouts), so that the error
// cannot pass for the caller's own cancellation with errors.Is. The rest of
// the chain still matches.
func notCanceled(err error) error {
	if err == nil || !failure.Context(err) {
		return err
	}
	return ctxHidden{err}
}

// ctxHidden is an error whose chain matches everything its cause's does but
// the context errors.
type ctxHidden struct{ err error }

func (e ctxHidden) Error() string { return e.err.Error() }

func (e ctxHidden) Is(target error) bool {
	if target == context.Canceled || target == context.DeadlineExceeded {
		return false
	}
	return errors.Is(e.err, target)
}

func (e ctxHidden) As(target any) bool { return errors.As(e.err, target) }

// canceledError is the error of a request whose caller's context ended: it
// wraps the context's error, and no sentinel, since nothing failed but the
// caller's patience.
func canceledError(ctx context.Context, server string, err error) error {
	if err == nil || errors.Is(err, ctx.Err()) {
		if err == nil {
			err = ctx.Err()
		}
		return &ServerError{Server: server, Err: err}
	}
	// Some servers answer with their own error for the cancelled request;
	// keep the context's error testable, and the answer readable.
	return &ServerError{Server: server, Err: fmt.Errorf("%w (%v)", ctx.Err(), err)}
}

// acquire returns the current lease with a call registered on it, waiting
// for Connected up to the ready timeout while the slot is connecting.
func (s *slot) acquire(ctx context.Context) (*lease, error) {
	var (
		timeout <-chan time.Time
		stop    func() bool
	)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	for {
		s.mu.Lock()
		switch s.state {
		case lifecycle.Connected:
			l := s.lease
			select {
			case <-l.conn.Done():
				// Known dead but not yet noticed by its watcher: detach it
				// now rather than send a request into it.
				s.lostLocked(connLost(l.conn))
				s.goCloseLeaseLocked(l)
				s.mu.Unlock()
				continue
			default:
			}
			l.calls.Add(1)
			l.inflight.Add(1)
			s.mu.Unlock()
			return l, nil
		case lifecycle.Disconnected:
			s.connectLocked(lifecycle.Connecting, 0, false)
		case lifecycle.Connecting, lifecycle.Reconnecting:
			s.pullLocked()
		case lifecycle.PermanentlyFailed:
			err := serverError(ErrPermanentlyFailed, s.name, notCanceled(s.lastErr))
			s.mu.Unlock()
			return nil, err
		case lifecycle.NeedsAuthorization:
			err := s.authorizationErrorLocked()
			s.mu.Unlock()
			return nil, err
		case lifecycle.Disabling, lifecycle.Disabled:
			s.mu.Unlock()
			return nil, serverError(ErrDisabled, s.name, nil)
		default:
			s.mu.Unlock()
			return nil, serverError(ErrClosed, s.name, nil)
		}
		ch := s.changed
		s.mu.Unlock()
		if timeout == nil {
			timeout, stop = s.m.opts.clock.NewTimer(s.m.opts.readyTimeout)
		}
		select {
		case <-ch:
		case <-timeout:
			s.mu.Lock()
			err := s.unavailableLocked(nil)
			s.mu.Unlock()
			return nil, err
		case <-ctx.Done():
			s.mu.Lock()
			why := fmt.Errorf("waiting while %s", s.state)
			if s.lastErr != nil {
				why = fmt.Errorf("waiting while %s (last error: %v)", s.state, s.lastErr)
			}
			s.mu.Unlock()
			return nil, canceledError(ctx, s.name, why)
		}
	}
}

// replayable reports whether the published catalog declares tool read-only
// or idempotent, so that a request lost in flight may be sent again.
func (s *slot) replayable(tool string) bool {
	c, ok := s.m.pub.View().Catalog(s.name)
	if !ok {
		return false
	}
	for i := range c.Tools {
		t := &c.Tools[i]
		if t.Name != tool {
			continue
		}
		a := t.Annotations
		return (a.ReadOnlyHint != nil && *a.ReadOnlyHint) || (a.IdempotentHint != nil && *a.IdempotentHint)
	}
	return false
}

type outcome int

const (
	outcomeResult   outcome = iota // the server answered, with an error: a result
	outcomeCanceled                // the caller's context ended
	outcomeNotSent                 // provably never executed: safe to send again
	outcomeLost                    // anything else: the outcome is unknown
	outcomeTooLarge                // answered over the message size limit
)

// classify decides what a failed request on c means. The caller's context
// comes first (mcp-go wraps context errors in *transport.Error too). Then
// only the error's type decides, never its text: mcp-go returns the
// server's JSON-RPC error answer as a plain error
// (JSONRPCErrorDetails.AsError), and every failure under it, wrapped in
// *transport.Error. Of those, only the ones that prove the request was not
// run are "not sent"; every other one is lost.
func classify(ctx context.Context, c Conn, err error) outcome {
	if ctx.Err() != nil {
		return outcomeCanceled
	}
	var te *transport.Error
	if !errors.As(err, &te) {
		return outcomeResult
	}
	if tooLarge(err) != nil {
		return outcomeTooLarge
	}
	if notSent(c, err) {
		return outcomeNotSent
	}
	return outcomeLost
}

// notSent reports whether a transport failure proves the server never ran
// the request: it rejected our session (it forgot it: HTTP 404, or the 400
// forms transport/http turns into it), the request never left (connection
// refused, a failed dial), or c knows it never wrote it.
func notSent(c Conn, err error) bool {
	if errors.Is(err, transport.ErrSessionTerminated) || failure.NeverSent(err) {
		return true
	}
	k, ok := c.(interface{ NotSent(error) bool })
	return ok && k.NotSent(err)
}

// fatal reports whether a failure means c's connection is unusable:
// broken under the request, or so c says of its own transport's errors.
func fatal(c Conn, err error) bool {
	if failure.Broken(err) {
		return true
	}
	k, ok := c.(interface{ Fatal(error) bool })
	return ok && k.Fatal(err)
}

// check looks at l's runtime after a request on it was lost, and detaches it
// if it is dead: its Conn reported its death (waited for briefly: a child's
// exit is reaped a moment after mcp-go sees its stdout close) or mcp-go's
// transport is closed. A live one stays: an HTTP exchange can break while
// the server and its session are fine, and the next request tells which.
// It returns err with the Conn's account of its death, if any.
func (s *slot) check(l *lease, err error) error {
	t := time.NewTimer(deathReportWait)
	select {
	case <-l.conn.Done():
	case <-t.C:
	}
	t.Stop()
	err = explain(l.conn, err)
	if connErr(l.conn) != nil || errors.Is(err, transport.ErrTransportClosed) {
		s.lost(l, err)
	}
	return err
}
