package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
)

// Forwarder forwards the requests a fleet's servers make of their host
// (sampling/createMessage, elicitation/create, roots/list) to the
// downstream client that caused them. Make one with NewForwarder, make the
// Manager with its ClientOptions, and give it to New with WithForwarder:
//
//	fw := gateway.NewForwarder()
//	m := client.New(fw.ClientOptions()...)
//	g := gateway.New(m, gateway.WithForwarder(fw))
//
// A server's request goes to one downstream session, chosen so:
//
//  1. A request that comes within a call of the gateway's goes to that
//     call's client. On the 2026-07-28 protocol a server asks in the
//     result of the call itself (input_required), and the Manager answers
//     in the call's context, so the request names its call exactly.
//  2. Otherwise (the older protocols send requests on the connection, not
//     tied to a call) it goes to the session whose calls are in flight on
//     that server, if every call in flight there is of one session; to the
//     oldest of them, which is one of that client's calls either way.
//  3. With no call in flight on the server, it goes to the only
//     downstream session, if there is exactly one with an MCP session (a
//     host that runs the gateway over stdio has exactly one).
//
// Anything else cannot be attributed to one session, and the server gets a
// JSON-RPC error that says why: calls of several sessions are in flight on
// it, or none is and several (or no) sessions are connected. So is a
// request the chosen client cannot answer: it did not declare the
// capability, or (on 2026-07-28) the call that would carry it is a
// prompts/get or resources/read, whose results cannot.
//
// A client on 2026-07-28 gets the request in an input_required result of
// its tools/call, and answers by calling again with the answers (its SDK
// does this itself); a client on an older protocol gets it as a request of
// the gateway's, on the stream of its call where the transport has one.
type Forwarder struct {
	g atomic.Pointer[Gateway]
}

// NewForwarder returns a Forwarder that refuses every request until a
// Gateway is made with it (WithForwarder).
func NewForwarder() *Forwarder { return &Forwarder{} }

// ClientOptions are the Manager options that make the Manager declare
// sampling, elicitation (form and URL) and roots to every server, and hand
// their requests to f.
func (f *Forwarder) ClientOptions() []client.Option {
	return []client.Option{
		client.WithSamplingHandler(f.sample),
		client.WithElicitationHandler(f.elicit, client.ElicitForm, client.ElicitURL),
		client.WithRoots(),
		client.WithServerRequestInterceptor(f.intercept),
	}
}

// errNoAnswer is the error of a request whose client sent an answer of
// the wrong kind.
var errNoAnswer = errors.New("mcpfleet: gateway: the downstream client's answer was not of the kind asked for")

// destination is where a server's request goes: a call that carries it to a
// 2026-07-28 client, or a session that gets it as a request of its own
// (ctx is the context to send it in: the call's downstream request, so
// that it goes on that request's stream).
type destination struct {
	carrier *call
	cs      server.ClientSession
	ctx     context.Context
	caps    mcp.ClientCapabilities
}

// route chooses the destination of a request of srvName's (see
// Forwarder).
func (f *Forwarder) route(ctx context.Context, srvName string, method mcp.MCPMethod) (destination, error) {
	refuse := func(format string, args ...any) (destination, error) {
		return destination{}, fmt.Errorf("mcpfleet: gateway: %s from server %q refused: %s", method, srvName,
			fmt.Sprintf(format, args...))
	}
	g := f.g.Load()
	if g == nil {
		return refuse("no gateway serves this fleet")
	}
	c := callFrom(ctx)
	if c == nil {
		calls := g.calls.onServer(srvName)
		sessions := map[*session]struct{}{}
		for _, x := range calls {
			sessions[x.sess] = struct{}{}
		}
		switch {
		case len(sessions) == 1:
			c = calls[0]
		case len(sessions) > 1:
			return refuse("calls of %d downstream sessions are in flight on it, and the request does not say which it belongs to", len(sessions))
		default:
			reg := g.sessions.registered()
			if len(reg) != 1 {
				return refuse("no downstream call is in flight on it, and %d downstream sessions are connected, so none can be chosen", len(reg))
			}
			cs := reg[0].clientSession()
			if cs == nil {
				return refuse("the downstream session has no way to receive requests")
			}
			d := destination{cs: cs, ctx: ctx}
			if info, ok := cs.(server.SessionWithClientInfo); ok {
				d.caps = info.GetClientCapabilities()
			}
			return d, nil
		}
	}
	if c.modern {
		if !c.carrier {
			return refuse("the downstream client speaks the 2026-07-28 protocol, where only a tools/call can carry a request to it, and the call in flight is not one")
		}
		return destination{carrier: c, caps: c.caps}, nil
	}
	cs := c.sess.clientSession()
	if cs == nil {
		return refuse("the downstream client has no session to receive requests on")
	}
	hctx := c.handlerContext()
	if hctx == nil {
		hctx = c.ctx
	}
	return destination{cs: cs, ctx: hctx, caps: c.caps}, nil
}

// within returns a context with the values of d.ctx (the downstream
// request's: its stream, its session) that ends when either d.ctx or ctx
// (the server's request) ends, and the function that releases it.
func (d destination) within(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(d.ctx))
	stop1 := context.AfterFunc(d.ctx, cancel)
	stop2 := context.AfterFunc(ctx, cancel)
	return out, func() { stop1(); stop2(); cancel() }
}

// ask sends req to the destination's carrier call and waits for the
// client's answer.
func (d destination) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a, err := d.carrier.enqueue(req)
	if err != nil {
		return mcp.InputResponse{}, err
	}
	select {
	case ans := <-a.answer:
		return ans.res, ans.err
	case <-ctx.Done():
		d.carrier.withdraw(a)
		return mcp.InputResponse{}, ctx.Err()
	}
}

func (f *Forwarder) sample(ctx context.Context, srvName string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	d, err := f.route(ctx, srvName, mcp.MethodSamplingCreateMessage)
	if err != nil {
		return nil, err
	}
	if d.caps.Sampling == nil {
		return nil, fmt.Errorf("mcpfleet: gateway: sampling/createMessage from server %q refused: the downstream client did not declare sampling", srvName)
	}
	if d.carrier != nil {
		ans, err := d.ask(ctx, mcp.NewSamplingInputRequest(req.CreateMessageParams))
		if err == nil && ans.Sampling == nil {
			err = errNoAnswer
		}
		return ans.Sampling, err
	}
	s, ok := d.cs.(server.SessionWithSampling)
	if !ok {
		return nil, fmt.Errorf("mcpfleet: gateway: sampling/createMessage from server %q refused: the downstream transport cannot send requests", srvName)
	}
	ctx, done := d.within(ctx)
	defer done()
	return s.RequestSampling(ctx, req)
}

func (f *Forwarder) elicit(ctx context.Context, srvName string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	d, err := f.route(ctx, srvName, mcp.MethodElicitationCreate)
	if err != nil {
		return nil, err
	}
	mode := req.Params.Mode
	if d.caps.Elicitation == nil || (mode == mcp.ElicitationModeURL && d.caps.Elicitation.URL == nil) {
		if mode == "" {
			mode = mcp.ElicitationModeForm
		}
		return nil, fmt.Errorf("mcpfleet: gateway: elicitation/create (%s) from server %q refused: the downstream client did not declare elicitation in that mode", mode, srvName)
	}
	if d.carrier != nil {
		ans, err := d.ask(ctx, mcp.NewElicitationInputRequest(req.Params))
		if err == nil && ans.Elicitation == nil {
			err = errNoAnswer
		}
		return ans.Elicitation, err
	}
	s, ok := d.cs.(server.SessionWithElicitation)
	if !ok {
		return nil, fmt.Errorf("mcpfleet: gateway: elicitation/create from server %q refused: the downstream transport cannot send requests", srvName)
	}
	ctx, done := d.within(ctx)
	defer done()
	return s.RequestElicitation(ctx, req)
}

// intercept answers roots/list with the roots of the client the request
// is attributed to; the Manager's own roots are never used.
func (f *Forwarder) intercept(ctx context.Context, r *client.ServerRequest, next client.ServerRequestInvoker) (any, error) {
	if r.Method() != string(mcp.MethodListRoots) {
		return next(ctx, r)
	}
	d, err := f.route(ctx, r.Server(), mcp.MethodListRoots)
	if err != nil {
		return nil, err
	}
	if d.caps.Roots == nil {
		return nil, fmt.Errorf("mcpfleet: gateway: roots/list from server %q refused: the downstream client did not declare roots", r.Server())
	}
	if d.carrier != nil {
		ans, err := d.ask(ctx, mcp.NewRootsInputRequest())
		if err == nil && ans.Roots == nil {
			err = errNoAnswer
		}
		if err != nil {
			return nil, err
		}
		return ans.Roots, nil
	}
	s, ok := d.cs.(server.SessionWithRoots)
	if !ok {
		return nil, fmt.Errorf("mcpfleet: gateway: roots/list from server %q refused: the downstream transport cannot send requests", r.Server())
	}
	ctx, done := d.within(ctx)
	defer done()
	return s.ListRoots(ctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
}
