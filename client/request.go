package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// CallOption configures one call.
type CallOption func(*callOptions)

type callOptions struct {
	timeout  time.Duration
	progress func(mcp.ProgressNotification) // WithProgress
	task     bool                           // WithTask
	taskTTL  time.Duration                  // WithTaskTTL
	started  func(*Task)                    // WithTaskStarted
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
//
// A tool that declares execution.taskSupport "required" runs as an MCP
// task, transparently, and so does any tool called WithTask: the call
// waits for the task's outcome, polling across reconnects, and returns it
// as Task.Wait does; ctx (and the call's timeout) bound the whole, and if
// it ends first the server is asked to cancel the task. A server that
// cannot run the tool as a task fails such a call with ErrTaskUnsupported.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args any, opts ...CallOption) (*mcp.CallToolResult, error) {
	if err := m.filteredTool(server, tool); err != nil {
		return nil, withOp(opCallTool+" "+tool, server, err)
	}
	task, known := m.taskCall(server, tool, opts)
	return run(ctx, m, server, request[*mcp.CallToolResult]{
		method: string(mcp.MethodToolsCall), name: tool, op: opCallTool, args: args,
		replay: toolReplayable, send: sendCallTool, task: task, taskUnknown: !known,
	}, opts)
}

// opCallTool is how errors name a tools/call, followed by the tool's name
// on its server: the same whether the host called CallTool or Call.
const opCallTool = "call tool"

func sendCallTool(ctx context.Context, _ *slot, c *mcpclient.Client, tool string, args any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = omitNil(args)
	req.Params.Meta = withMeta(ctx, req.Params.Meta)
	return c.CallTool(ctx, req)
}

// Call calls a tool by its qualified name in the View (server + separator +
// tool, or the short form the View gave it).
//
// A server with no catalog published (lazy, connecting for the first
// time, disabled, failed) is known by its prefix before its tools are: a
// call to prefix + separator + tool is a CallTool of tool on that server,
// which waits for a server that is starting (and starts a lazy one) and
// fails fast, with the cause, on one that is disabled or failed. Short
// forms are known only from a catalog. With interceptors, such a call goes
// through them before anything starts, as a CallTool of the server's tool.
func (m *Manager) Call(ctx context.Context, qualifiedTool string, args any, opts ...CallOption) (*mcp.CallToolResult, error) {
	if t, ok := m.pub.View().Tool(qualifiedTool); ok {
		return m.CallTool(ctx, t.Server, t.Tool.Name, args, opts...)
	}
	if err := m.filteredQualified(qualifiedTool); err != nil {
		return nil, withOp(opCallTool+" "+qualifiedTool, "", err)
	}
	s, tool := m.catalogless(qualifiedTool)
	if s == nil {
		return nil, withOp(opCallTool+" "+qualifiedTool, "", ErrToolNotFound)
	}
	if len(m.opts.interceptors) > 0 {
		// The interceptors decide before anything is started: the call
		// goes to the server by its own tool name, and CallTool starts
		// the server if they pass it on. A name the server turns out not
		// to have is its error answer, not ErrToolNotFound.
		return m.CallTool(ctx, s.name, tool, args, opts...)
	}
	l, err := s.acquire(ctx)
	if err != nil {
		// Counted and observed as CallTool counts a call that no runtime
		// came for.
		ctx, req := s.requestStart(ctx, string(mcp.MethodToolsCall), tool)
		s.requestEnd(ctx, req, outcomeOf[*mcp.CallToolResult](nil, err), err)
		return nil, withOp(opCallTool+" "+tool, s.name, err)
	}
	l.release()
	if t, ok := m.pub.View().Tool(qualifiedTool); ok {
		return m.CallTool(ctx, t.Server, t.Tool.Name, args, opts...)
	}
	return nil, withOp(opCallTool+" "+tool, s.name, ErrToolNotFound)
}

// catalogless returns the server with no published catalog whose tool
// prefix and the separator begin qualifiedTool, if any, and the tool name
// that follows them. It walks the servers: it runs only when the View has
// no such tool.
func (m *Manager) catalogless(qualifiedTool string) (*slot, string) {
	sep := m.opts.naming.SeparatorOrDefault()
	v := m.pub.View()
	slots, _ := m.slotList()
	for _, s := range slots {
		tool, ok := strings.CutPrefix(qualifiedTool, s.toolPrefix()+sep)
		if !ok {
			continue
		}
		if _, ok := v.Catalog(s.name); ok {
			continue
		}
		return s, tool
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
	r := request[*mcp.GetPromptResult]{
		method: string(mcp.MethodPromptsGet), name: name, op: "get prompt",
		replay: alwaysReplayable, send: sendGetPrompt,
	}
	if args != nil {
		r.args = args // a nil map stays an untyped nil for the interceptors
	}
	return run(ctx, m, server, r, opts)
}

func sendGetPrompt(ctx context.Context, _ *slot, c *mcpclient.Client, name string, args any) (*mcp.GetPromptResult, error) {
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments, _ = args.(map[string]string) // intercept checked the type
	req.Params.Meta = withMeta(ctx, req.Params.Meta)
	return c.GetPrompt(ctx, req)
}

// ReadResource reads a resource from server. Reads are replayed once if
// lost in flight.
func (m *Manager) ReadResource(ctx context.Context, server, uri string, opts ...CallOption) (*mcp.ReadResourceResult, error) {
	return run(ctx, m, server, request[*mcp.ReadResourceResult]{
		method: string(mcp.MethodResourcesRead), name: uri, op: "read resource",
		replay: alwaysReplayable, send: sendReadResource,
	}, opts)
}

func sendReadResource(ctx context.Context, _ *slot, c *mcpclient.Client, uri string, _ any) (*mcp.ReadResourceResult, error) {
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	req.Params.Meta = withMeta(ctx, req.Params.Meta)
	return c.ReadResource(ctx, req)
}

// request is one of the host's requests to a server, as the request
// pipeline runs it. Every public request method (CallTool and Call,
// GetPrompt, ReadResource, SubscribeResource, UnsubscribeResource,
// SetLevel) builds one and hands it to run; what differs between them is
// here and nowhere else.
type request[T any] struct {
	method string // the MCP method: "tools/call"
	name   string // what it is about: a tool's name, a prompt's, a URI, a level
	// op names the operation in errors, followed by name: "call tool".
	op string
	// args are the arguments, as the interceptors see them and may
	// change them; send gets what they passed on.
	args any
	// replay reports whether a request lost in flight may be sent again.
	replay func(s *slot, name string) bool
	// accepted, if set, runs once the interceptors passed the request on
	// (at once without interceptors), before it waits for the server: for
	// what is remembered of a request only if it was not refused.
	accepted func(s *slot)
	// send makes the request on a runtime's client.
	send func(ctx context.Context, s *slot, c *mcpclient.Client, name string, args any) (T, error)
	// task runs a tools/call as an MCP task and waits for its outcome
	// (callAsTask) instead of sending it: a tool that requires a task, or a
	// call made WithTask.
	task bool
	// taskUnknown: whether the tool requires a task was not known when
	// the call began (no catalog published); do asks the runtime's.
	taskUnknown bool
	// patient marks a request that waits on the server's work for as long
	// as it takes (the tasks/result of a task that waits for input): the
	// server's call Timeout does not bound it, and its context ending is no
	// sign of ill health.
	patient bool
}

// run is the request pipeline. Every request the host sends a server goes
// through it, in this order, top-down:
//
//  1. the server is looked up (ErrUnknownServer, ErrClosed);
//  2. the host's interceptors, if any, see the request and may refuse
//     it, answer it or change its arguments (intercept.go);
//  3. do counts it for Stats and tells the Observer, and doOn waits for a
//     runtime (acquire, which asks state.go's admitLocked), sends, and on
//     a failure asks failure.go what it means and reports it to the slot
//     (state.go: lost, timedOut, needsAuthorization), which decides what
//     becomes of the runtime; then it resends or replays at most once each;
//  4. an error is named with the operation (withOp).
func run[T any](ctx context.Context, m *Manager, server string, r request[T], opts []CallOption) (T, error) {
	var (
		zero T
		res  T
	)
	s, err := m.slot(server)
	if err == nil {
		if len(m.opts.interceptors) == 0 {
			if r.accepted != nil {
				r.accepted(s)
			}
			res, err = do(ctx, s, r, r.args, opts, nil)
		} else {
			res, err = intercept(ctx, s, r, opts)
		}
	}
	if err != nil {
		return zero, withOp(r.op+" "+r.name, server, err)
	}
	return res, nil
}

func alwaysReplayable(*slot, string) bool { return true }

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

// do runs r with args on s's current runtime, with the waiting, retry and
// health rules every request shares, and counts how it ended. If gen is
// not nil (an interceptor asks), the generation of the runtime the request
// was last sent to is noted there.
func do[T any](ctx context.Context, s *slot, r request[T], args any, opts []CallOption, gen *uint64) (T, error) {
	ctx, req := s.requestStart(ctx, r.method, r.name)
	if req == nil && gen != nil {
		req = &Request{} // for the attempts' generation alone
	}
	var (
		res T
		err error
	)
	if r.taskUnknown {
		// The call's timeout bounds the wait for the runtime that decides
		// as well as the call, as one.
		o := applyCallOptions(opts)
		if timeout := callTimeout(s.config(), &o); timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		r.task, err = s.taskRequired(ctx, r.name)
	}
	switch {
	case err != nil: // no runtime came: the error the request's own wait gives
	case r.task:
		var out *mcp.CallToolResult
		out, err = s.m.callAsTask(ctx, s, req, r.name, args, opts)
		res, _ = any(out).(T)
	default:
		res, err = doOn(ctx, s, req, r, args, opts)
	}
	if gen != nil && req.Generation != 0 {
		*gen = req.Generation
	}
	s.requestEnd(ctx, req, outcomeOf(res, err), err)
	return res, err
}

// requestStart tells the observer, if any, that a request begins, and
// returns the request it is told of (nil without an observer) and ctx as
// the observer and the request's metadata carry it.
func (s *slot) requestStart(ctx context.Context, method, name string) (context.Context, *Request) {
	obs := s.m.opts.observer
	if obs == nil {
		return ctx, nil
	}
	req := &Request{Server: s.name, Method: method, Name: name}
	ctx = obs.RequestStart(ctx, req)
	return context.WithValue(ctx, observerMetaKey{}, req), req
}

// requestEnd counts how a request ended, in the server's Stats, and tells
// the observer.
func (s *slot) requestEnd(ctx context.Context, req *Request, o Outcome, err error) {
	s.st.calls[o].Add(1)
	if obs := s.m.opts.observer; obs != nil {
		obs.RequestEnd(ctx, req, o, err)
	}
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
	case errors.Is(err, ErrTaskLost):
		return OutcomeUnknown // the task may or may not have run to its end
	case errors.Is(err, ErrTaskCancelled):
		return OutcomeCanceled
	case errors.Is(err, ErrServerError), errors.Is(err, ErrTaskFailed), errors.Is(err, ErrTaskUnsupported):
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

// doOn is do's request on s: wait for a runtime (acquire), one attempt
// (sendOnce), and the retry rule (retryRule) to decide whether it goes
// again: resend or replay, at most once each, or stop.
func doOn[T any](ctx context.Context, s *slot, req *Request, r request[T], args any, opts []CallOption) (T, error) {
	var zero T
	m, server := s.m, s.name
	cfg := s.config()
	var o callOptions
	if len(opts) > 0 {
		o = applyCallOptions(opts)
	}
	timeout := callTimeout(cfg, &o)
	if r.patient {
		timeout = o.timeout // not the server's
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

	var (
		rule  retryRule
		cause error // why the attempt before did not do
	)
	for n := 1; ; n++ {
		l, err := s.acquire(ctx)
		if err != nil {
			return zero, err
		}
		if n > 1 {
			s.st.retries.Add(1)
		}
		if req != nil {
			l.describe(req)
			if obs := m.opts.observer; obs != nil {
				obs.RequestAttempt(ctx, req, n, cause)
			}
		}
		a := sendOnce(ctx, s, r, l, args)
		if a.err == nil {
			return a.res, nil
		}
		if !rule.again(a.fail, func() bool { return r.replay(s, r.name) }) {
			return zero, a.final(s)
		}
		cause = a.cause
	}
}

// attemptFailure is what the failure of one attempt means for the request.
type attemptFailure int

const (
	failFinal   attemptFailure = iota // the error is the request's
	failNotSent                       // provably not run: may be sent again
	failLost                          // lost in flight: may be replayed, if replayable
)

// retryRule decides whether a failed attempt goes again, as grpc-go's
// shouldRetry does beside its csAttempt: a request provably not sent is
// sent again once (resend), and a lost one is replayed once if replayable
// (replay); anything else stops. The two are counted apart, since a replay
// that finds the server gone is itself not sent.
type retryRule struct{ resent, replayed bool }

// again reports whether the request goes again after a failure f, and
// counts the retry it allows.
func (r *retryRule) again(f attemptFailure, replayable func() bool) bool {
	switch {
	case f == failNotSent && !r.resent:
		r.resent = true
		return true
	case f == failLost && !r.replayed && replayable():
		r.replayed = true
		return true
	}
	return false
}

// attempt is how one attempt ended.
type attempt[T any] struct {
	res  T
	err  error // nil: res is the answer
	fail attemptFailure
	// cause is what the Observer is told of at the next attempt.
	cause error
}

// final is the request's error once no retry is left: the attempt's own,
// or, for one that may not go again, what its failure means to the host.
func (a attempt[T]) final(s *slot) error {
	switch {
	case a.err == errDetachedBeforeSend:
		// Detached under it twice: the slot's own last cause says why.
		return s.unavailable(nil)
	case a.fail == failNotSent:
		return s.unavailable(notCanceled(a.err))
	case a.fail == failLost:
		return serverError(ErrOutcomeUnknown, s.name, notCanceled(a.err))
	}
	return a.err
}

// sendOnce is one attempt: it sends r on l, which acquire registered it on,
// and releases l. A failure is reported to the slot (state.go decides what
// becomes of the runtime) and classified for the retry rule; an error
// that is the request's whatever the rule says comes with failFinal.
func sendOnce[T any](ctx context.Context, s *slot, r request[T], l *lease, args any) attempt[T] {
	var zero T
	server := s.name
	if l.ctx.Err() != nil {
		// Detached since it was acquired (a loss, a Reconnect, a
		// Disable): nothing goes out on it, and the request was not
		// sent, so the next runtime takes it.
		l.release()
		return attempt[T]{err: errDetachedBeforeSend, fail: failNotSent, cause: errDetachedBeforeSend}
	}
	res, err := r.send(ctx, s, l.client, r.name, args)
	l.release()
	if err == nil {
		l.markAnswered()
		if l.timedOut.Load() {
			s.succeeded(l)
		}
		return attempt[T]{res: res}
	}
	cause := err
	err = plain(err)
	final := func(err error) attempt[T] { return attempt[T]{res: zero, err: err, fail: failFinal, cause: cause} }
	if needsUser(err) && ctx.Err() == nil {
		// Not run: the server refused the credentials, and only the
		// user can give better ones.
		s.needsAuthorization(l, err)
		return final(&ServerError{Server: server, Err: &AuthorizationError{URL: s.authURL(), Cause: err}})
	}
	switch classify(ctx, l.conn, err) {
	case outcomeResult:
		l.markAnswered()
		return final(serverError(ErrServerError, server, err))
	case outcomeTooLarge:
		// The server answered; the transport discarded the answer as
		// it read it. The connection is fine.
		l.markAnswered()
		return final(&ServerError{Server: server, Err: tooLarge(err)})
	case outcomeNotSent:
		s.lost(l, err)
		return attempt[T]{err: err, fail: failNotSent, cause: cause}
	case outcomeLost:
		err = s.check(l, err)
		if ctx.Err() == nil {
			return attempt[T]{err: err, fail: failLost, cause: cause}
		}
		// The caller's context ended while the failure was checked:
		// some transports give up a moment before the deadline.
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !r.patient {
		s.timedOut(l, err)
	}
	return final(canceledError(ctx, server, err))
}

// errDetachedBeforeSend is the cause an Observer is told of for an attempt
// whose runtime was detached between its acquire and its send.
var errDetachedBeforeSend = errors.New("the runtime was replaced before the request went out")

// callTimeout is what bounds a call with options o on a server configured
// with cfg: the call's own timeout (WithCallTimeout), or else the server's
// Timeout; 0 for none.
func callTimeout(cfg *slotConfig, o *callOptions) time.Duration {
	if o.timeout > 0 {
		return o.timeout
	}
	return cfg.spec.Timeout
}

// acquire returns the current lease with a call registered on it, waiting
// for Connected up to the ready timeout while the slot is connecting. It
// asks the slot (admitLocked) and never moves the state machine itself:
// starting a lazy server, pulling a dial forward and declaring a dead
// runtime lost are the slot's decisions, made in state.go.
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
		l, err := s.admitLocked()
		if l != nil || err != nil {
			s.mu.Unlock()
			if err != nil {
				return nil, &ServerError{Server: s.name, Err: err}
			}
			return l, nil
		}
		ch := s.changed
		s.mu.Unlock()
		if timeout == nil {
			timeout, stop = s.m.opts.clock.NewTimer(s.m.opts.readyTimeout)
		}
		select {
		case <-ch:
		case <-timeout:
			return nil, s.unavailable(nil)
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

// toolReplayable reports whether the published catalog declares tool
// read-only or idempotent, so that a request lost in flight may be sent
// again.
func toolReplayable(s *slot, tool string) bool {
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
