package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/jsonkind"
	"github.com/mcpfleet/mcpfleet/llm"
)

type callOption = client.CallOption

// invokeFunc makes the upstream call of a tools/call with args.
type invokeFunc func(ctx context.Context, args any, opts ...callOption) (*mcp.CallToolResult, error)

// Errors of a call's life.
var (
	// errSessionEnded is the cause of the calls cancelled because their
	// downstream session ended (disconnected, deleted, closed).
	errSessionEnded = errors.New("mcpfleet: gateway: the downstream session ended")
	// errRequestEnded is the cause of a call cancelled because the
	// downstream request waiting for it ended (cancelled by the client,
	// or its connection closed).
	errRequestEnded = errors.New("mcpfleet: gateway: the downstream request ended")
	// errInputTimeout is the cause of a call cancelled because its
	// 2026-07-28 client did not come back with the input its server asked
	// for within the input timeout.
	errInputTimeout = errors.New("mcpfleet: gateway: the client did not answer the server's request in time")
)

// call is one downstream request in flight on an upstream server: a
// tools/call (which may span several rounds on the 2026-07-28 protocol,
// when its server asks the client something) or a prompts/get or
// resources/read. Its upstream request runs on a goroutine of its own
// under ctx, which ends when the call is done, when the downstream request
// or session ends, or when the client does not come back in time.
type call struct {
	// Set at creation, read-only.
	sess    *session
	method  string // tools/call, prompts/get, resources/read
	server  string
	name    string // the tool's or prompt's own name; "" for a resource
	started time.Time
	// modern: the downstream client speaks 2026-07-28, so the server's
	// requests reach it as input_required results of this call (carrier
	// says the method has such a result: tools/call). Otherwise they go
	// to its session as requests of the gateway's own.
	modern, carrier bool
	caps            mcp.ClientCapabilities
	progressToken   mcp.ProgressToken
	ctx             context.Context // &cctx
	cctx            callContext
	cancel          context.CancelCauseFunc
	// done is closed when res and err are set. It and wake exist only for
	// a modern carrier (a tools/call of a 2026-07-28 client), the one kind
	// of call that a downstream request waits on (wait) and that a server's
	// request reaches (enqueue); a call of any other kind runs on its
	// downstream request's goroutine and needs neither.
	done chan struct{}
	res  *mcp.CallToolResult
	err  error

	mu sync.Mutex // guards the fields below
	// token is the requestState of the call's rounds, made at the first.
	token string
	// handler is the context of the downstream request waiting on the
	// call, nil between rounds. Progress and the session requests of
	// legacy clients go with it.
	handler context.Context
	stop    func() bool // ends the link from handler's end to cancel
	timer   *time.Timer // between rounds: the input timeout
	// queued are the server's requests not yet sent to the client; sent
	// those sent in the last round, by input id, waiting for answers.
	queued []*ask
	sent   map[string]*ask
	nextID int
	wake   chan struct{} // signalled (capacity 1) when an ask is queued; see done
}

// ask is one request of a server's for the client, carried by a call.
type ask struct {
	id     string
	req    mcp.InputRequest
	answer chan askAnswer // capacity 1
}

type askAnswer struct {
	res mcp.InputResponse
	err error
}

// callKey carries the call in its upstream context: a server request
// that comes in the context of a call (the 2026-07-28 protocol answers
// input requests of a result in the call's context) is that call's.
type callKey struct{}

// callContext is a call's upstream context: what context.WithValue(ctx,
// callKey{}, c) would be, in the call's own allocation.
type callContext struct {
	context.Context
	c *call
}

// Value returns the call for callKey, and asks the parent for any other
// key (the context package's own too: a child's cancellation links to the
// parent's as through a WithValue).
func (x *callContext) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return x.c
	}
	return x.Context.Value(key)
}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// callTable holds the calls in flight: by upstream server, for the
// Forwarder to attribute a server's requests and for a session's end to
// cancel its calls, and by token, for the rounds of 2026-07-28 clients.
type callTable struct {
	mu sync.Mutex
	// byServer keeps a server's set when its last call ends, so that a
	// call does not make a map: up to keptSets empty sets are kept.
	byServer map[string]map[*call]struct{}
	byToken  map[string]*call
}

// keptSets bounds the servers whose empty call sets the callTable keeps.
const keptSets = 1024

func (t *callTable) init() {
	t.byServer = map[string]map[*call]struct{}{}
	t.byToken = map[string]*call{}
}

func (t *callTable) add(c *call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	set := t.byServer[c.server]
	if set == nil {
		set = map[*call]struct{}{}
		t.byServer[c.server] = set
	}
	set[c] = struct{}{}
}

func (t *callTable) remove(c *call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if set := t.byServer[c.server]; set != nil {
		delete(set, c)
		if len(set) == 0 && len(t.byServer) > keptSets {
			delete(t.byServer, c.server)
		}
	}
	c.mu.Lock()
	token := c.token
	c.mu.Unlock()
	if token != "" {
		delete(t.byToken, token)
	}
}

// onServer returns the calls in flight on srvName, oldest first.
func (t *callTable) onServer(srvName string) []*call {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*call, 0, len(t.byServer[srvName]))
	for c := range t.byServer[srvName] {
		out = append(out, c)
	}
	sortCalls(out)
	return out
}

// ofSession returns the calls in flight of sess.
func (t *callTable) ofSession(sess *session) []*call {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*call
	for _, set := range t.byServer {
		for c := range set {
			if c.sess == sess {
				out = append(out, c)
			}
		}
	}
	return out
}

// endSession cancels the calls of sess, which has ended (its ended flag
// is set before: a call that start registers after this walk sees it).
func (t *callTable) endSession(sess *session) {
	for _, c := range t.ofSession(sess) {
		c.cancel(errSessionEnded)
	}
}

// token returns c's requestState, making and registering it at the first
// round.
func (t *callTable) token(c *call) string {
	c.mu.Lock()
	tok := c.token
	c.mu.Unlock()
	if tok != "" {
		return tok
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tok = "mcpfleet-" + hex.EncodeToString(b[:])
	t.mu.Lock()
	t.byToken[tok] = c
	t.mu.Unlock()
	c.mu.Lock()
	c.token = tok
	c.mu.Unlock()
	return tok
}

// resume returns the call of a requestState, if it is still in flight and
// belongs to sess.
func (t *callTable) resume(token string, sess *session) *call {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byToken[token]
	if c == nil || c.sess != sess {
		return nil
	}
	return c
}

func sortCalls(cs []*call) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].started.Before(cs[j-1].started); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// start makes the call of the downstream request in ctx on srvName: it
// is counted against the session's limit, registered for the Forwarder,
// and its upstream context ends with the session (callTable.endSession),
// the gateway and cancel. The caller runs the upstream request and calls
// finish.
func (g *Gateway) start(ctx context.Context, method, srvName, name string, carrier bool) (*call, error) {
	sess, err := g.sessions.of(ctx)
	if err != nil {
		g.refused(method, srvName, name, err)
		return nil, err
	}
	if err := sess.acquire(); err != nil {
		g.refused(method, srvName, name, err)
		return nil, err
	}
	c := &call{sess: sess, method: method, server: srvName, name: name, started: time.Now(), carrier: carrier}
	c.modern = server.IsModernRequest(ctx)
	if c.modern && carrier {
		c.done, c.wake = make(chan struct{}), make(chan struct{}, 1)
	}
	if info, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		c.caps = info.GetClientCapabilities()
	}
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.ClientCapabilities != nil {
		c.caps = *pi.ClientCapabilities
	}
	c.cctx.c = c
	c.cctx.Context, c.cancel = context.WithCancelCause(g.ctx)
	c.ctx = &c.cctx
	g.calls.add(c)
	if sess.ended.Load() {
		c.cancel(errSessionEnded) // it ended before the walk could see c
	}
	return c, nil
}

// refused tells the Observer of a request that never started.
func (g *Gateway) refused(method, srvName, name string, err error) {
	g.obs.Call(CallInfo{Identity: g.who, Method: method, Server: srvName, Name: name, Outcome: outcomeOf(nil, err), Err: err})
}

// finish records the call's outcome and releases what start took.
func (g *Gateway) finish(c *call, res *mcp.CallToolResult, err error) {
	g.calls.remove(c)
	c.sess.release()
	g.obs.Call(CallInfo{Identity: g.who, Method: c.method, Server: c.server, Name: c.name,
		Outcome: outcomeOf(res, err), Duration: time.Since(c.started), Err: err})
	c.mu.Lock()
	c.res, c.err = res, err
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stop != nil {
		c.stop()
	}
	queued, sent := c.queued, c.sent
	c.queued, c.sent = nil, nil
	c.mu.Unlock()
	if c.done != nil {
		close(c.done)
	}
	c.cancel(context.Canceled)
	for _, a := range queued {
		a.answer <- askAnswer{err: errCallEnded}
	}
	for _, a := range sent {
		a.answer <- askAnswer{err: errCallEnded}
	}
}

var errCallEnded = errors.New("mcpfleet: gateway: the downstream call that the request belonged to ended before the client answered")

// request runs a prompts/get or resources/read of the downstream request
// in ctx: one round, on the caller's goroutine, under the session's limit,
// ended with the request or the session. A failure is returned as it is,
// for mcp-go to send as a JSON-RPC error.
func (g *Gateway) request(ctx context.Context, method, srvName, name string, do func(context.Context) error) error {
	if err := g.check(srvName, ""); err != nil {
		g.refused(method, srvName, name, err)
		return err
	}
	c, err := g.start(ctx, method, srvName, name, false)
	if err != nil {
		return err
	}
	c.attach(ctx)
	err = do(c.ctx)
	g.finish(c, nil, err)
	return err
}

// callTool runs the tools/call req of the downstream request in ctx on
// srvName. A first round starts the upstream call; a round that echoes a
// requestState hands the client's answers to the server's requests and
// waits on. Either returns the result, an isError result that explains a
// failure, or, on the 2026-07-28 protocol, an input_required result with
// the server's requests for the client.
func (g *Gateway) callTool(ctx context.Context, req mcp.CallToolRequest, srvName, tool, qualified string, invoke invokeFunc) (*mcp.CallToolResult, error) {
	if err := g.check(srvName, tool); err != nil {
		g.refused(string(mcp.MethodToolsCall), srvName, tool, err)
		return nil, err
	}
	if err := argumentsObject(req.GetRawArguments()); err != nil {
		// As a schema's refusal is (SEP-1303): a result the model reads
		// and can correct, and the server is never asked.
		return mcp.NewToolResultError(fmt.Sprintf("%s: %v", qualified, err)), nil
	}
	token := progressToken(req)
	res, err := g.callRounds(ctx, req.Params.MultiRoundTripParams, token, srvName, tool, req.GetRawArguments(), invoke)
	if token != nil || req.Params.RequestState != "" { // a later round carries the first's progress
		if n := g.notesOf(ctx); n != nil {
			n.await(ctx) // the call's progress written before its result (see notes.go)
		}
	}
	switch {
	case err == nil:
		return res, nil
	case neverStarted(err):
		return nil, err // a JSON-RPC error
	case errors.Is(err, client.ErrNeedsAuthorization) && g.o.member.authorize != nil:
		if res, err, ok := g.needsAuthorization(ctx, srvName, qualified); ok {
			return res, err
		}
	}
	return llm.ErrorResult(llm.Explain(qualified, err, time.Time{})), nil
}

// needsAuthorization sends the person whose call needs srvName authorized
// to its authorization server, as a Team's gateway does: the client is
// asked to open the URL (a URL-mode elicitation, -32042, for a 2025-11-25
// client that supports them), else the tool's error gives it. The URL is
// this person's own authorization (its state and PKCE verifier are their
// fleet's), and the Team's callback completes it for them alone. It
// reports false if no authorization could be started.
func (g *Gateway) needsAuthorization(ctx context.Context, srvName, qualified string) (*mcp.CallToolResult, error, bool) {
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u, err := g.m.StartAuthorization(actx, srvName)
	if err != nil {
		g.log.Warn("mcpfleet: gateway: starting an upstream's authorization", "server", srvName, "err", err)
		return nil, nil, false
	}
	g.o.member.authorize(srvName, u)
	msg := fmt.Sprintf("Server %s needs you to authorize access to your account there: open %s, approve, then call %s again.", srvName, u, qualified)
	if caps := clientCaps(ctx); !server.IsModernRequest(ctx) && caps.Elicitation != nil && caps.Elicitation.URL != nil {
		id := "mcpfleet-auth-" + srvName
		if pu, err := url.Parse(u); err == nil && pu.Query().Get("state") != "" {
			id = "mcpfleet-auth-" + pu.Query().Get("state")
		}
		return nil, mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{{
			Mode: mcp.ElicitationModeURL, ElicitationID: id, URL: u, Message: msg}}}, true
	}
	return llm.ErrorResult(msg), nil, true
}

// clientCaps returns the capabilities the downstream client of ctx
// declared.
func clientCaps(ctx context.Context) mcp.ClientCapabilities {
	var caps mcp.ClientCapabilities
	if info, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		caps = info.GetClientCapabilities()
	}
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.ClientCapabilities != nil {
		caps = *pi.ClientCapabilities
	}
	return caps
}

// neverStarted reports whether err is the error of a call that never
// started: over a session's limit, an unknown requestState, the gateway
// closed.
func neverStarted(err error) bool {
	var limit *limitError
	return errors.As(err, &limit) || errors.Is(err, errUnknownState) || errors.Is(err, ErrClosed) || errors.Is(err, errSessionGone)
}

// errUnknownState is the error of a round whose requestState names no call
// in flight of the session.
var errUnknownState = errors.New("mcpfleet: gateway: the requestState names no call in flight of this session (it ended, timed out, or belongs to another)")

// callRounds is callTool with the error as an error.
func (g *Gateway) callRounds(ctx context.Context, round mcp.MultiRoundTripParams, token mcp.ProgressToken, srvName, tool string, args any, invoke invokeFunc) (*mcp.CallToolResult, error) {
	if g.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if round.RequestState != "" {
		sess, err := g.sessions.of(ctx)
		if err != nil {
			return nil, errUnknownState
		}
		c := g.calls.resume(round.RequestState, sess)
		if c == nil {
			return nil, errUnknownState
		}
		c.attach(ctx)
		c.answer(round.InputResponses)
		return g.wait(ctx, c)
	}
	c, err := g.start(ctx, string(mcp.MethodToolsCall), srvName, tool, true)
	if err != nil {
		return nil, err
	}
	c.progressToken = token
	var opts []callOption
	if token != nil {
		opts = append(opts, client.WithProgress(c.progress(g)))
	}
	c.attach(ctx)
	if !c.modern || g.o.forwarder == nil {
		// The server's requests, if any, go to the session itself (or
		// nowhere): no round can end before the call does, so it runs on
		// the caller's goroutine.
		res, err := invoke(c.ctx, args, opts...)
		g.finish(c, res, err)
		return res, err
	}
	g.bg.Go(func() {
		res, err := invoke(c.ctx, args, opts...)
		g.finish(c, res, err)
	})
	return g.wait(ctx, c)
}

// wait waits, for the downstream request in ctx, for c's result or for a
// request of its server's for the client, which ends the round with an
// input_required result (2026-07-28 clients only). If the downstream
// request ends first, so does the call.
func (g *Gateway) wait(ctx context.Context, c *call) (*mcp.CallToolResult, error) {
	for {
		select {
		case <-c.done:
			return c.res, c.err
		default:
		}
		select {
		case <-c.done:
			return c.res, c.err
		case <-c.wake:
			if reqs := c.round(); len(reqs) > 0 {
				tok := g.calls.token(c)
				c.detach(g.o.inputTimeout)
				res := &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
					MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: tok}}
				return res, nil
			}
		case <-ctx.Done():
			c.cancel(errRequestEnded)
			return nil, context.Cause(ctx)
		}
	}
}

// attach makes the downstream request in ctx the one waiting on c: its
// end cancels the call, progress goes to it, and the input timeout stops.
func (c *call) attach(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.stop != nil {
		c.stop()
	}
	c.handler = ctx
	c.stop = context.AfterFunc(ctx, func() { c.cancel(errRequestEnded) })
}

// detach ends a round: no downstream request waits on c until the client
// comes back, which it must within timeout.
func (c *call) detach(timeout time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	c.handler = nil
	c.timer = time.AfterFunc(timeout, func() { c.cancel(errInputTimeout) })
}

// handlerContext returns the context of the downstream request waiting on
// c, or nil between rounds.
func (c *call) handlerContext() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.handler
}

// enqueue adds a server's request for the client to c, for the next round.
func (c *call) enqueue(req mcp.InputRequest) (*ask, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return nil, errCallEnded
	default:
	}
	c.nextID++
	a := &ask{id: "mcpfleet-" + strconv.Itoa(c.nextID), req: req, answer: make(chan askAnswer, 1)}
	c.queued = append(c.queued, a)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return a, nil
}

// withdraw takes a back: its server gave up on it.
func (c *call) withdraw(a *ask) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.queued {
		if q == a {
			c.queued = append(c.queued[:i], c.queued[i+1:]...)
			break
		}
	}
	delete(c.sent, a.id)
}

// round takes the queued requests into a round: they are sent, and wait
// for their answers in the next.
func (c *call) round() mcp.InputRequests {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queued) == 0 && len(c.sent) == 0 {
		return nil
	}
	if c.sent == nil {
		c.sent = map[string]*ask{}
	}
	reqs := make(mcp.InputRequests, len(c.queued)+len(c.sent))
	for _, a := range c.sent { // not answered in the last round: asked again
		reqs[a.id] = a.req
	}
	for _, a := range c.queued {
		c.sent[a.id] = a
		reqs[a.id] = a.req
	}
	c.queued = nil
	return reqs
}

// answer hands the client's answers of a round to the requests they
// answer.
func (c *call) answer(responses mcp.InputResponses) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, r := range responses {
		a := c.sent[id]
		if a == nil {
			continue
		}
		delete(c.sent, id)
		err := r.DecodeFor(a.req.Method)
		a.answer <- askAnswer{res: r, err: err}
	}
	if len(c.sent) > 0 { // unanswered: into the next round
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// progress returns the WithProgress callback of c: each report goes to
// the downstream request waiting on c, under the client's own token.
func (c *call) progress(g *Gateway) func(mcp.ProgressNotification) {
	return func(p mcp.ProgressNotification) {
		ctx := c.handlerContext()
		if ctx == nil {
			return // between rounds: nobody to tell
		}
		params := map[string]any{"progressToken": c.progressToken, "progress": p.Params.Progress}
		if p.Params.Total != 0 {
			params["total"] = p.Params.Total
		}
		if p.Params.Message != "" {
			params["message"] = p.Params.Message
		}
		if g.srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params) == nil {
			if n := g.notesOf(ctx); n != nil {
				n.sent.Add(1)
			}
		}
	}
}

// progressToken returns the progress token the client gave req, if any.
func progressToken(req mcp.CallToolRequest) mcp.ProgressToken {
	if req.Params.Meta == nil {
		return nil
	}
	return req.Params.Meta.ProgressToken
}

// argumentsObject checks a tools/call's arguments as they were decoded:
// absent, null or an object. Anything else ([1, 2], "text") no server's
// input schema accepts, and the Manager would send it as it is.
func argumentsObject(args any) error {
	switch a := args.(type) {
	case nil, map[string]any:
		return nil
	case json.RawMessage: // the task front's, undecoded
		var v any
		if err := json.Unmarshal(a, &v); err != nil {
			return fmt.Errorf("arguments: %w", err)
		}
		return argumentsObject(v)
	}
	return fmt.Errorf("arguments must be a JSON object of named arguments, not %s", jsonkind.Of(args))
}
