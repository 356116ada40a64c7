package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// interceptTestServer is a testServer with a prompt and a resource, so that
// every kind of request has something to reach.
func interceptTestServer() *testServer {
	ts := newTestServer()
	srv := ts.MCPServer()
	srv.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("name")),
		func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello "+r.Params.Arguments["name"])),
			}), nil
		})
	srv.AddResource(mcp.NewResource("test://r", "r"),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://r", Text: "content"}}, nil
		})
	return ts
}

// requestLog is an Observer that records the requests it saw.
type requestLog struct {
	nopObserver
	mu    sync.Mutex
	names []string
}

func (o *requestLog) RequestStart(ctx context.Context, r *Request) context.Context {
	o.mu.Lock()
	o.names = append(o.names, r.Method+" "+r.Name)
	o.mu.Unlock()
	return ctx
}

func (o *requestLog) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.names)
}

type nopObserver struct{}

func (nopObserver) RequestStart(ctx context.Context, _ *Request) context.Context { return ctx }
func (nopObserver) RequestAttempt(context.Context, *Request, int, error)         {}
func (nopObserver) RequestEnd(context.Context, *Request, Outcome, error)         {}
func (nopObserver) StateChange(string, lifecycle.State, lifecycle.State, uint64, error) {
}
func (nopObserver) Dial(string, uint64, time.Duration, error) {}

// TestInterceptorRewritesArguments: an interceptor replaces a tool's and a
// prompt's arguments, and the server sees the new ones.
func TestInterceptorRewritesArguments(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	upper := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		switch a := c.Arguments.(type) {
		case map[string]any:
			b := map[string]any{}
			for k, v := range a {
				b[k] = strings.ToUpper(fmt.Sprint(v))
			}
			c.Arguments = b
		case map[string]string:
			c.Arguments = map[string]string{"name": "Grace"}
		}
		return next(ctx, c)
	}
	m := newTestManager(t, WithInterceptor(upper))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)

	args := map[string]any{"text": "hello"}
	res, err := m.CallTool(ctx, "s", "echo", args)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "HELLO" {
		t.Fatalf("the server echoed %q, want the rewritten HELLO", got)
	}
	if args["text"] != "hello" {
		t.Fatalf("the caller's arguments changed: %v", args)
	}
	p, err := m.GetPrompt(ctx, "s", "greet", map[string]string{"name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Messages[0].Content.(mcp.TextContent).Text; got != "hello Grace" {
		t.Fatalf("the prompt says %q, want the rewritten name", got)
	}
}

// TestInterceptorRefuses: an interceptor refuses a destructive tool. The
// caller gets its error, wrapped with ErrRefused in a *ServerError naming
// the server; the server never saw the call; the slot stays Connected on
// its generation with its health untouched, and neither Stats nor the
// Observer count the request. Refusals of methods with no result (a
// subscription, a log level) work alike, and a refused subscription or
// level is not remembered.
func TestInterceptorRefuses(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	errNo := errors.New("the user said no")
	var mu sync.Mutex
	var seen []string
	policy := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		mu.Lock()
		seen = append(seen, c.Method()+" "+c.Name())
		mu.Unlock()
		switch c.Method() {
		case string(mcp.MethodToolsCall):
			if c.Name() == "echo" {
				return next(ctx, c)
			}
		case string(mcp.MethodPromptsGet), string(mcp.MethodResourcesRead):
			return next(ctx, c)
		}
		return nil, errNo
	}
	obs := &requestLog{}
	m := newTestManager(t, WithInterceptor(policy), WithObserver(obs))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	before, _ := m.Status("s")
	s, _ := m.slot("s")
	s.mu.Lock()
	health := s.health
	s.mu.Unlock()

	res, err := m.CallTool(ctx, "s", "incr", nil)
	if err == nil {
		t.Fatalf("a refused call returned %v", res)
	}
	var se *ServerError
	if !errors.Is(err, errNo) || !errors.Is(err, ErrRefused) || !errors.As(err, &se) || se.Server != "s" {
		t.Fatalf("refusal: %v (%T)", err, err)
	}
	t.Logf("refusal: %v", err)
	if want := `mcpfleet: server "s": call tool incr: refused by an interceptor: the user said no`; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if n := ts.calls.Load(); n != 0 {
		t.Fatalf("the server ran %d calls", n)
	}

	// The other methods: each is intercepted and refused (or passed on).
	if _, err := m.GetPrompt(ctx, "s", "greet", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ReadResource(ctx, "s", "test://r"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error { return m.SubscribeResource(ctx, "s", "test://r") },
		func() error { return m.UnsubscribeResource(ctx, "s", "test://r") },
		func() error { return m.SetLevel(ctx, "s", mcp.LoggingLevelDebug) },
	} {
		if err := f(); !errors.Is(err, ErrRefused) || !errors.Is(err, errNo) {
			t.Fatalf("refused request: %v", err)
		}
	}
	if subs, _ := m.Subscriptions("s"); len(subs) != 0 {
		t.Errorf("a refused subscription is remembered: %v", subs)
	}
	s.mu.Lock()
	level := s.logLevelLocked()
	s.mu.Unlock()
	if level != "" {
		t.Errorf("a refused level is remembered: %q", level)
	}
	mu.Lock()
	want := []string{"tools/call incr", "prompts/get greet", "resources/read test://r",
		"resources/subscribe test://r", "resources/unsubscribe test://r", "logging/setLevel debug"}
	if !slices.Equal(seen, want) {
		t.Errorf("the interceptor saw %q, want %q", seen, want)
	}
	mu.Unlock()

	// Nothing about the server changed.
	after, _ := m.Status("s")
	if after.State != lifecycle.Connected || after.Generation != before.Generation || after.LastError != nil || after.Attempt != 0 {
		t.Fatalf("status after refusals: %+v", after)
	}
	s.mu.Lock()
	healthAfter := s.health
	s.mu.Unlock()
	if healthAfter != health {
		t.Errorf("health changed: %+v, was %+v", healthAfter, health)
	}
	st := m.Stats().Total
	if st.Calls[OutcomeOK] != 2 || st.Requests() != 2 || st.Reconnects != 0 || st.Dials != 1 {
		t.Errorf("stats count refusals: %+v", st)
	}
	if got, want := obs.seen(), []string{"prompts/get greet", "resources/read test://r"}; !slices.Equal(got, want) {
		t.Errorf("the Observer saw %q, want only what reached the server: %q", got, want)
	}
	for _, e := range rec.snapshot() {
		if e.Kind == EventState && e.To != lifecycle.Connected && e.To != lifecycle.Connecting {
			t.Errorf("state event after a refusal: %+v", e)
		}
	}
	// And it still answers, on the same runtime.
	mustCall(ctx, t, m, "echo", map[string]any{"text": "still here"})
	if st, _ := m.Status("s"); st.Generation != before.Generation {
		t.Errorf("generation %d after refusals, was %d", st.Generation, before.Generation)
	}
}

// TestInterceptorObserves: an interceptor that only watches sees each
// request's result or error as the caller gets it: a result, a tool's
// error result (a result, IsError set), and a transport failure (the
// connection died under the call: ErrOutcomeUnknown).
func TestInterceptorObserves(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	type seen struct {
		tool string
		res  *mcp.CallToolResult
		err  error
	}
	var mu sync.Mutex
	var log []seen
	audit := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		res, err := next(ctx, c)
		r, _ := res.(*mcp.CallToolResult)
		mu.Lock()
		log = append(log, seen{c.Name(), r, err})
		mu.Unlock()
		return res, err
	}
	m := newTestManager(t, WithInterceptor(audit))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)

	if _, err := m.CallTool(ctx, "s", "echo", map[string]any{"text": "hi"}); err != nil {
		t.Fatal(err)
	}
	res, err := m.CallTool(ctx, "s", "fail", nil)
	if err != nil || !res.IsError {
		t.Fatalf("fail: %v, %v", res, err)
	}
	_, crashErr := m.CallTool(ctx, "s", "crash", nil)
	if !errors.Is(crashErr, ErrOutcomeUnknown) {
		t.Fatalf("crash: %v", crashErr)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(log) != 3 {
		t.Fatalf("the interceptor saw %d requests, want 3", len(log))
	}
	if e := log[0]; e.tool != "echo" || e.err != nil || e.res == nil || text(e.res) != "hi" {
		t.Errorf("echo seen as %+v", e)
	}
	if e := log[1]; e.tool != "fail" || e.err != nil || e.res == nil || !e.res.IsError {
		t.Errorf("the tool error seen as %+v", e)
	}
	var se *ServerError
	if e := log[2]; e.tool != "crash" || e.res != nil || !errors.Is(e.err, ErrOutcomeUnknown) || errors.Is(e.err, ErrRefused) ||
		!errors.As(e.err, &se) || se.Server != "s" || se.Op != "call tool crash" {
		t.Errorf("the transport failure seen as %+v", e)
	}
	if log[2].err.Error() != crashErr.Error() {
		t.Errorf("the interceptor saw %q, the caller got %q", log[2].err, crashErr)
	}
}

// TestInterceptorOrder: interceptors of several options form one chain in
// the order given, the first outermost; each sees what the one before it
// passed on.
func TestInterceptorOrder(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	var trace []string
	tag := func(name string) Interceptor {
		return func(ctx context.Context, c *Call, next Invoker) (any, error) {
			args := c.Arguments.(map[string]any)
			trace = append(trace, name+">"+args["text"].(string))
			c.Arguments = map[string]any{"text": args["text"].(string) + name}
			res, err := next(ctx, c)
			trace = append(trace, "<"+name)
			return res, err
		}
	}
	m := newTestManager(t, WithInterceptor(tag("a"), nil, tag("b")), WithInterceptor(tag("c")))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	if got := strings.TrimSpace(mustCall(ctx, t, m, "echo", map[string]any{"text": "x"})); got != "xabc" {
		t.Errorf("the server got %q, want xabc", got)
	}
	if want := []string{"a>x", "b>xa", "c>xab", "<c", "<b", "<a"}; !slices.Equal(trace, want) {
		t.Errorf("order %q, want %q", trace, want)
	}
}

// TestInterceptorGeneration: before next an interceptor sees the
// generation of the runtime the request goes to (0 for a lazy server never
// connected), after it the one it went to.
func TestInterceptorGeneration(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	var before, after []uint64
	gens := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		before = append(before, c.Generation())
		res, err := next(ctx, c)
		after = append(after, c.Generation())
		return res, err
	}
	m := newTestManager(t, WithInterceptor(gens))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), Lazy: true})
	mustCall(ctx, t, m, "echo", map[string]any{"text": "1"}) // starts it
	mustCall(ctx, t, m, "echo", map[string]any{"text": "1"})
	if err := m.Reconnect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "s", lifecycle.Connected)
	if st, _ := m.Status("s"); st.Generation != 2 {
		t.Fatalf("generation %d after Reconnect", st.Generation)
	}
	mustCall(ctx, t, m, "echo", map[string]any{"text": "2"})
	if want := []uint64{0, 1, 2}; !slices.Equal(before, want) {
		t.Errorf("generations before next %v, want %v", before, want)
	}
	if want := []uint64{1, 1, 2}; !slices.Equal(after, want) {
		t.Errorf("generations after next %v, want %v", after, want)
	}
}

// TestInterceptorResults: an interceptor may answer without the server (a
// cache), and a result of the wrong type is an error saying so, not a
// panic or a nil result.
func TestInterceptorResults(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	short := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		switch c.Name() {
		case "cached":
			return mcp.NewToolResultText("from the cache"), nil
		case "wrong":
			return "a string", nil
		case "none":
			return nil, nil
		case "typed-nil":
			return (*mcp.CallToolResult)(nil), nil
		case "greet":
			c.Arguments = map[string]any{"name": 1}
		}
		return next(ctx, c)
	}
	m := newTestManager(t, WithInterceptor(short))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	if got := strings.TrimSpace(mustCall(ctx, t, m, "cached", nil)); got != "from the cache" {
		t.Errorf("cached: %q", got)
	}
	for _, tool := range []string{"wrong", "none", "typed-nil"} {
		res, err := m.CallTool(ctx, "s", tool, nil)
		if err == nil || res != nil || !strings.Contains(err.Error(), "interceptor returned") || errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, %v", tool, res, err)
		}
	}
	_, err := m.GetPrompt(ctx, "s", "greet", nil)
	if err == nil || !strings.Contains(err.Error(), "want map[string]string") || errors.Is(err, ErrRefused) {
		t.Errorf("prompt arguments of the wrong type: %v", err)
	}
	if st := m.Stats().Total; st.Requests() != 0 {
		t.Errorf("requests that never reached the server were counted: %+v", st.Calls)
	}
}

// TestServerRequestInterceptorSampling: a server's sampling requests go
// through the server-request interceptors, which see the server, the
// method and the generation, and can rewrite the request (the host's
// handler sees the new prompt) or refuse it (the server gets the error,
// the handler is not called). Roots and elicitation go through them too;
// an elicitation rewritten to a mode the host did not declare is refused
// before the handler.
func TestServerRequestInterceptorSampling(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var (
		mu      sync.Mutex
		prompts []string
		seen    []string
		refuse  = true
	)
	sample := func(_ context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		mu.Lock()
		prompts = append(prompts, req.Messages[0].Content.(mcp.TextContent).Text)
		mu.Unlock()
		return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
			Content: mcp.NewTextContent("ok")}, Model: "test"}, nil
	}
	policy := func(ctx context.Context, r *ServerRequest, next ServerRequestInvoker) (any, error) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %d", r.Server(), r.Method(), r.Generation()))
		no := refuse
		mu.Unlock()
		switch p := r.Params.(type) {
		case *mcp.CreateMessageParams:
			if no {
				return nil, errors.New("sampling is off for this server")
			}
			p.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("rewritten")}}
		case *mcp.ElicitationParams:
			p.Mode = string(mcp.ElicitationModeURL) // not declared: checked again
		case nil:
			if r.Method() != string(mcp.MethodListRoots) {
				t.Errorf("nil params for %s", r.Method())
			}
		}
		return next(ctx, r)
	}
	elicited := 0
	elicit := func(context.Context, string, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		mu.Lock()
		elicited++
		mu.Unlock()
		return &mcp.ElicitationResult{}, nil
	}
	m := newTestManager(t, WithSamplingHandler(sample), WithRoots(mcp.Root{URI: "file:///tmp", Name: "tmp"}),
		WithElicitationHandler(elicit), WithServerRequestInterceptor(policy))
	mustAdd(t, m, "s", faultSpec(faultserver.ModeFlood))
	mustWait(t, m, "s", lifecycle.Connected)

	ans := asked(ctx, t, m, "s", "sampling", 1)
	if ans.OK != 0 || ans.Error != 1 || !errorsAll(ans, "refused by an interceptor", "sampling is off for this server") {
		t.Errorf("refused sampling: the server saw %+v", ans)
	}
	mu.Lock()
	if len(prompts) != 0 {
		t.Errorf("the host's handler saw a refused request: %q", prompts)
	}
	refuse = false
	mu.Unlock()
	if ans := asked(ctx, t, m, "s", "sampling", 1); ans.OK != 1 {
		t.Errorf("rewritten sampling: the server saw %+v", ans)
	}
	if ans := asked(ctx, t, m, "s", "roots", 1); ans.OK != 1 {
		t.Errorf("roots: the server saw %+v", ans)
	}
	if ans := asked(ctx, t, m, "s", "elicitation", 1); ans.Error != 1 || !errorsAll(ans, `elicitation mode "url" not supported`) {
		t.Errorf("elicitation rewritten to an undeclared mode: the server saw %+v", ans)
	}
	mu.Lock()
	defer mu.Unlock()
	if elicited != 0 {
		t.Errorf("the host's handler got an elicitation in an undeclared mode")
	}
	if want := []string{"rewritten"}; !slices.Equal(prompts, want) {
		t.Errorf("the host's handler saw %q, want %q", prompts, want)
	}
	want := []string{"s sampling/createMessage 1", "s sampling/createMessage 1", "s roots/list 1", "s elicitation/create 1"}
	if !slices.Equal(seen, want) {
		t.Errorf("the interceptor saw %q, want %q", seen, want)
	}
	if st, _ := m.Status("s"); st.State != lifecycle.Connected || st.Generation != 1 {
		t.Errorf("status after a refused sampling: %+v", st)
	}
}

// TestInterceptorConcurrent: interceptors run on each caller's goroutine
// with a Call of its own; calls at once, across a reconnect, each see
// their own arguments and a generation that only grows.
func TestInterceptorConcurrent(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ts := interceptTestServer()
	tagged := func(ctx context.Context, c *Call, next Invoker) (any, error) {
		a := c.Arguments.(map[string]any)
		c.Arguments = map[string]any{"text": a["text"].(string) + "!"}
		g := c.Generation()
		res, err := next(ctx, c)
		if err == nil && c.Generation() < g {
			t.Errorf("generation went from %d to %d", g, c.Generation())
		}
		return res, err
	}
	m := newTestManager(t, WithInterceptor(tagged))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				want := fmt.Sprintf("%d.%d", g, i)
				res, err := m.CallTool(ctx, "s", "echo", map[string]any{"text": want})
				if err != nil {
					t.Errorf("%s: %v", want, err)
					return
				}
				if got := text(res); got != want+"!" {
					t.Errorf("got %q, want %q", got, want+"!")
				}
			}
		})
	}
	if err := m.Reconnect(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// BenchmarkInterceptChain times the interceptor machinery and the
// pipeline around it, with a send that answers at once on a connected
// server: what a chain of n pass-through interceptors adds to a request,
// apart from the exchange (see BENCHMARKS.md).
func BenchmarkInterceptChain(b *testing.B) {
	ctx := context.Background()
	pass := func(ctx context.Context, c *Call, next Invoker) (any, error) { return next(ctx, c) }
	res := &mcp.CallToolResult{}
	args := map[string]any{"text": "hello"}
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("interceptors=%d", n), func(b *testing.B) {
			m := New(WithInterceptor(slices.Repeat([]Interceptor{pass}, n)...))
			defer m.Close()
			if err := m.Add(ctx, "s", ServerSpec{Dialer: newTestServer().dialer()}); err != nil {
				b.Fatal(err)
			}
			if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
				b.Fatal(err)
			}
			s, err := m.slot("s")
			if err != nil {
				b.Fatal(err)
			}
			r := request[*mcp.CallToolResult]{method: "tools/call", name: "echo", op: opCallTool, args: args,
				replay: toolReplayable,
				send: func(context.Context, *slot, *mcpclient.Client, string, any) (*mcp.CallToolResult, error) {
					return res, nil
				}}
			b.ReportAllocs()
			for b.Loop() {
				_, err := intercept(ctx, s, r, nil)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
