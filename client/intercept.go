package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// ErrRefused: an interceptor refused the request. It returned an error
// without passing the request on, so the server never saw it (or, for a
// server's request, the host's handler never did). The interceptor's own
// error is wrapped too, so errors.Is finds both. A refusal is the caller's
// result, never a failure of the server: its state, health and generation
// do not change, nothing is retried, and neither Stats nor the Observer
// count it.
var ErrRefused = errors.New("refused by an interceptor")

// Interceptor puts the host's own policy (approval, audit, redaction, rate
// limits) around a request the host sends a server (see WithInterceptor).
// Requests servers send the host have interceptors of their own kind
// (ServerRequestInterceptor), set by their own option, so that a policy
// written for the host's calls never meets a server's sampling request by
// accident, and each kind gets the request and result types of its
// direction.
//
// An Interceptor may look at c and change its Arguments, then pass it
// on with next and return what next returns, or something else; or not
// call next at all and return an error (a refusal: the caller gets it
// wrapped with ErrRefused, inside a *ServerError naming the server) or a
// result of its own (a cached answer; then it is the caller's result).
//
// next waits for the server, sends, resends and replays exactly as a call
// without interceptors does, and returns what the caller would get: a
// result (a *mcp.CallToolResult with IsError set is a result) or the
// Manager's error (a *ServerError, with its sentinels). An interceptor may
// call next more than once (each is a request of its own), but not after
// it returned.
//
// The result is of the method's type: *mcp.CallToolResult (tools/call),
// *mcp.GetPromptResult (prompts/get), *mcp.ReadResourceResult
// (resources/read), and nil for the methods with no result. Returning
// another type, or nil where a result is due, fails the request with an
// error saying so.
//
// Interceptors run on the caller's goroutine, before the request waits for
// the server, so their time (a user's approval) does not count against the
// call's Timeout, only against ctx.
type Interceptor func(ctx context.Context, c *Call, next Invoker) (any, error)

// Invoker passes a request on: to the next interceptor, and from the last
// one to the server.
type Invoker func(ctx context.Context, c *Call) (any, error)

// Call is a request the host sends a server, as interceptors see it. What
// it is addressed to (server, method, name) cannot be changed: a policy
// decides on it, and tool filters and the replay of read-only tools
// depend on it. The arguments can.
type Call struct {
	server, method, name string
	gen                  uint64

	// Arguments are the request's arguments. An interceptor may replace
	// them before it calls next; the server gets what the last interceptor
	// passed on.
	//
	//   - tools/call: the tool's arguments as given to CallTool, anything
	//     that encodes to a JSON object, or nil;
	//   - prompts/get: a map[string]string (another type fails the request
	//     before it is sent);
	//   - the other methods: nil, and a value set is ignored.
	//
	// To rewrite a tool's arguments whose type is not known, encode them
	// to JSON and decode them into a map[string]any.
	Arguments any
}

// Server is the name the server was added under.
func (c *Call) Server() string { return c.server }

// Method is the MCP method: "tools/call" (mcp.MethodToolsCall),
// "prompts/get", "resources/read", "resources/subscribe",
// "resources/unsubscribe" or "logging/setLevel".
func (c *Call) Method() string { return c.method }

// Name is what the method is about: the tool's name on the server
// (tools/call), the prompt's (prompts/get), the resource's URI, or the log
// level (logging/setLevel).
func (c *Call) Name() string { return c.name }

// Generation is the generation of the server's runtime the request goes
// to. Before next it is the current runtime's, or, while the server has
// none, the last one it had (0 if it never connected): the generation of
// the catalog the View publishes for it. After next returned it is the
// runtime the request was last sent to; a reconnect in between (the
// request waits for one) makes it later.
func (c *Call) Generation() uint64 { return c.gen }

// WithInterceptor adds interceptors around every request the host sends a
// server through the Manager (see Interceptor): CallTool and Call
// (tools/call), GetPrompt (prompts/get), ReadResource (resources/read),
// SubscribeResource and UnsubscribeResource (resources/subscribe,
// resources/unsubscribe), SetLevel (logging/setLevel). The Manager's own
// requests are not intercepted: the handshake, the catalog's list requests,
// the idle probe, and the subscriptions and log level it renews on a new
// runtime. They keep the fleet healthy, and a policy refusing them would
// look like a broken server.
//
// Several interceptors are a chain, run in the order given:
// the first is outermost, sees the request first and the result last.
// Several WithInterceptor options append to one chain. Nil ones are
// skipped. With none, a request costs nothing more. Defaults to none.
//
// Interceptors run outside the Observer and Stats: those see what goes to
// the servers, as the interceptors rewrote it, and not what they refused
// or answered themselves.
func WithInterceptor(ics ...Interceptor) Option {
	return func(o *options) {
		for _, ic := range ics {
			if ic != nil {
				o.interceptors = append(o.interceptors, ic)
			}
		}
	}
}

// ServerRequestInterceptor runs around a request a server sends the host
// (see WithServerRequestInterceptor). It may look at r and change its
// Params, then pass it on with next (the host's handler, the last in the
// chain) and return what next returns or something else; or not call next
// and return an error (a refusal: the server gets it, wrapped with
// ErrRefused, as its request's error) or a result of its own.
//
// The result is of the method's type: *mcp.CreateMessageResult
// (sampling/createMessage), *mcp.ElicitationResult (elicitation/create),
// *mcp.ListRootsResult (roots/list).
//
// It runs after the Manager admitted the request (it comes from the
// server's current runtime, within its Limits) and counts as open with the
// host until it returns; ctx ends when the server gives up on the request
// or its runtime is detached.
type ServerRequestInterceptor func(ctx context.Context, r *ServerRequest, next ServerRequestInvoker) (any, error)

// ServerRequestInvoker passes a server's request on: to the next
// interceptor, and from the last one to the host's handler.
type ServerRequestInvoker func(ctx context.Context, r *ServerRequest) (any, error)

// ServerRequest is a request a server sends the host, as interceptors see
// it.
type ServerRequest struct {
	server, method string
	gen            uint64

	// Params are the request's parameters, which an interceptor may change
	// (or replace with others of the same type) before it calls next:
	// *mcp.CreateMessageParams (sampling/createMessage),
	// *mcp.ElicitationParams (elicitation/create), nil (roots/list). A
	// changed elicitation mode is checked again against the host's.
	Params any
}

// Server is the name the server was added under.
func (r *ServerRequest) Server() string { return r.server }

// Method is the MCP method: "sampling/createMessage",
// "elicitation/create" or "roots/list".
func (r *ServerRequest) Method() string { return r.method }

// Generation is the generation of the server's runtime the request came
// from: always its current one, as requests of detached runtimes are
// refused before they reach interceptors.
func (r *ServerRequest) Generation() uint64 { return r.gen }

// WithServerRequestInterceptor adds interceptors around every request a
// server sends the host (see ServerRequestInterceptor), in a chain run in
// the order given; several such options append. Nil ones are skipped. They
// only run for the capabilities the host declares: WithSamplingHandler,
// WithElicitationHandler, WithRoots. Defaults to none.
func WithServerRequestInterceptor(ics ...ServerRequestInterceptor) Option {
	return func(o *options) {
		for _, ic := range ics {
			if ic != nil {
				o.serverInterceptors = append(o.serverInterceptors, ic)
			}
		}
	}
}

// intercept runs the host's interceptors around r on s: the second step of
// the request pipeline (see run). The last link sends the request with the
// arguments the chain passes on, noting the generation it went to. Errors
// are named with the operation, as run names them, so that interceptors
// see the error their caller will.
func intercept[T any](ctx context.Context, s *slot, r request[T], opts []CallOption) (T, error) {
	var zero T
	server, op := s.name, r.op+" "+r.name
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	// A request in the chain is use, awaiting an approval included: the
	// idle check must not close the runtime it is about to go to.
	s.intercepting.Add(1)
	defer func() {
		s.mu.Lock()
		if l := s.lease; l != nil {
			l.used()
		}
		s.mu.Unlock()
		s.intercepting.Add(-1)
	}()
	c := &struct {
		Call
		passed atomic.Bool // the request got past every interceptor
	}{Call: Call{server: server, method: r.method, name: r.name, gen: gen, Arguments: r.args}}
	last := func(ctx context.Context, cc *Call) (any, error) {
		if cc == nil {
			cc = &c.Call
		}
		c.passed.Store(true) // what fails from here on is no refusal
		args := cc.Arguments
		if r.method == string(mcp.MethodPromptsGet) && args != nil {
			if _, ok := args.(map[string]string); !ok {
				return nil, withOp(op, server, fmt.Errorf("an interceptor set prompt arguments of type %T, want map[string]string", args))
			}
		}
		if r.accepted != nil {
			r.accepted(s)
		}
		res, err := do(ctx, s, r, args, opts, &cc.gen)
		if err != nil {
			return nil, withOp(op, server, err)
		}
		if _, none := any(res).(struct{}); none {
			return nil, nil
		}
		return res, nil
	}
	out, err := chain(ctx, s.m.opts.interceptors, &c.Call, last)
	if err != nil {
		if !c.passed.Load() {
			err = serverError(ErrRefused, server, err)
		}
		return zero, err
	}
	if _, none := any(zero).(struct{}); none {
		return zero, nil
	}
	res, ok := out.(T)
	if !ok || omitNil(out) == nil { // omitNil: a typed nil too
		return zero, withOp(op, server, fmt.Errorf("an interceptor returned %T for %s, want %T", out, r.method, zero))
	}
	return res, nil
}

// chain runs ics around last, the first outermost.
func chain(ctx context.Context, ics []Interceptor, c *Call, last Invoker) (any, error) {
	if len(ics) == 0 {
		return last(ctx, c)
	}
	return ics[0](ctx, c, func(ctx context.Context, c *Call) (any, error) {
		return chain(ctx, ics[1:], c, last)
	})
}

// serverChain runs ics around last, the first outermost.
func serverChain(ctx context.Context, ics []ServerRequestInterceptor, r *ServerRequest, last ServerRequestInvoker) (any, error) {
	if len(ics) == 0 {
		return last(ctx, r)
	}
	return ics[0](ctx, r, func(ctx context.Context, r *ServerRequest) (any, error) {
		return serverChain(ctx, ics[1:], r, last)
	})
}

// interceptServer runs the host's server-request interceptors around the
// answer to a request of l's server; answer gets the params the chain
// passes on.
func interceptServer[P, T any](ctx context.Context, h *leaseHandlers, method string, params *P,
	answer func(ctx context.Context, p *P) (*T, error)) (*T, error) {
	r := &ServerRequest{server: h.l.slot.name, method: method, gen: h.l.gen}
	if params != nil {
		r.Params = params
	}
	var passed atomic.Bool
	last := func(ctx context.Context, rr *ServerRequest) (any, error) {
		if rr == nil {
			rr = r
		}
		passed.Store(true) // what fails from here on is no refusal
		p, ok := rr.Params.(*P)
		if params != nil && (!ok || p == nil) {
			return nil, fmt.Errorf("an interceptor set %s params of type %T, want %T", method, rr.Params, params)
		}
		res, err := answer(ctx, p)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	out, err := serverChain(ctx, h.m.opts.serverInterceptors, r, last)
	if err != nil {
		if !passed.Load() {
			err = fmt.Errorf("%s %w: %w", method, ErrRefused, err)
		}
		return nil, err
	}
	res, ok := out.(*T)
	if !ok || res == nil {
		return nil, fmt.Errorf("an interceptor returned %T for %s, want %T", out, method, res)
	}
	return res, nil
}
