package otel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcpotel "github.com/mcpfleet/mcpfleet/otel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// telemetry is an Observer recording into the SDK's in-memory span
// recorder and a manual metric reader.
type telemetry struct {
	obs    *mcpotel.Observer
	hook   *hook // obs, telling the test what it was told
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

// hook is the Observer under test, telling the test when a request began
// and which dials it was told of, for tests to wait on what the Observer
// knows rather than on time.
type hook struct {
	*mcpotel.Observer
	started chan struct{} // gets a value, if empty, as a request begins

	mu       sync.Mutex
	dialed   map[string]uint64 // the newest generation dialled, by server
	failures int               // failed dials
	changed  chan struct{}     // closed and replaced when dialed or failures change
}

func (h *hook) RequestStart(ctx context.Context, r *client.Request) context.Context {
	ctx = h.Observer.RequestStart(ctx, r)
	select {
	case h.started <- struct{}{}:
	default:
	}
	return ctx
}

func (h *hook) Dial(server string, gen uint64, took time.Duration, err error) {
	h.Observer.Dial(server, gen, took, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failures++
	} else {
		h.dialed[server] = max(h.dialed[server], gen)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// awaitDialed waits until the Observer was told of server's dial of gen.
func (h *hook) awaitDialed(t *testing.T, server string, gen uint64) {
	t.Helper()
	h.await(t, func() bool { return h.dialed[server] >= gen })
}

// awaitFailures waits until the Observer was told of n failed dials.
func (h *hook) awaitFailures(t *testing.T, n int) {
	t.Helper()
	h.await(t, func() bool { return h.failures >= n })
}

// await waits until done, called with h.mu held, holds.
func (h *hook) await(t *testing.T, done func() bool) {
	t.Helper()
	ctx := testCtx(t)
	for {
		h.mu.Lock()
		ok, changed := done(), h.changed
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the Observer was never told what the test waits for")
		}
	}
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	obs, err := mcpotel.New(mcpotel.WithTracerProvider(tel.tp), mcpotel.WithMeterProvider(mp),
		mcpotel.WithPropagators(propagation.TraceContext{}))
	if err != nil {
		t.Fatal(err)
	}
	tel.obs = obs
	tel.hook = &hook{Observer: obs, started: make(chan struct{}, 1),
		dialed: map[string]uint64{}, changed: make(chan struct{})}
	t.Cleanup(func() {
		if err := errors.Join(obs.Close(), tel.tp.Shutdown(context.Background()),
			mp.Shutdown(context.Background())); err != nil {
			t.Error(err)
		}
	})
	return tel
}

// span returns the one ended span named name.
func (tel *telemetry) span(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1 (spans: %v)", len(found), name, spanNames(tel.spans.Ended()))
	}
	return found[0]
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// metrics collects the metrics recorded so far, by name.
func (tel *telemetry) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != mcpotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// attrs turns attributes into a map of their values' Emit strings.
func attrs(kvs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// wantAttrs checks that got has every attribute of want (an empty want
// value: the attribute must be absent).
func wantAttrs(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == "" && ok:
			t.Errorf("%s: %s = %q, want it absent", what, k, g)
		case v != "" && g != v:
			t.Errorf("%s: %s = %q, want %q (all: %v)", what, k, g, v, got)
		}
	}
}

// testServer is an in-process mcp-go server whose connections a test can
// kill, with a tool, a prompt and a resource, and a record of the
// traceparent each tool call brought in its _meta.
type testServer struct {
	*inproc.Server
	mu          sync.Mutex
	traceparent []string
	crashed     bool
}

func newTestServer() *testServer {
	ts := &testServer{}
	srv := server.NewMCPServer("otel-test", "1.0", server.WithToolCapabilities(false),
		server.WithPromptCapabilities(false), server.WithResourceCapabilities(false, false))
	srv.AddTool(mcp.NewTool("get_weather", mcp.WithString("city")),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.mu.Lock()
			defer ts.mu.Unlock()
			var tp string
			if r.Params.Meta != nil {
				tp, _ = r.Params.Meta.AdditionalFields["traceparent"].(string)
			}
			ts.traceparent = append(ts.traceparent, tp)
			return mcp.NewToolResultText("sunny in " + r.GetString("city", "?")), nil
		})
	srv.AddTool(mcp.NewTool("broken"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("the tool failed"), nil
		})
	// The first call kills every connection while the call is in flight,
	// as a crash would; the tool is read-only, so the Manager replays it.
	srv.AddTool(mcp.NewTool("crash_once", mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.mu.Lock()
			first := !ts.crashed
			ts.crashed = true
			ts.mu.Unlock()
			if first {
				ts.Kill(nil)
			}
			return mcp.NewToolResultText("second try"), nil
		})
	srv.AddPrompt(mcp.NewPrompt("greet"),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("greeting",
				[]mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello"))}), nil
		})
	srv.AddResource(mcp.NewResource("file:///hello.txt", "hello"),
		func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "hello"}}, nil
		})
	ts.Server = inproc.New(srv)
	return ts
}

func (ts *testServer) dialer() client.Dialer {
	return func(ctx context.Context) (transport.Conn, error) {
		c, err := ts.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (ts *testServer) traceparents() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.traceparent...)
}

// fastPolicy redials at once and forever.
var fastPolicy = lifecycle.Policy{
	InitialInterval: time.Millisecond,
	MaxInterval:     5 * time.Millisecond,
	Jitter:          -1,
	MaxAttempts:     -1,
	ProbeInterval:   -1,
}

// newManager returns a Manager reporting to tel's Observer, closed when the
// test ends.
func newManager(t *testing.T, tel *telemetry, opts ...client.Option) *client.Manager {
	t.Helper()
	m := client.New(append([]client.Option{client.WithObserver(tel.hook), client.WithPolicy(fastPolicy),
		client.WithTimeouts(client.Timeouts{Ready: 10 * time.Second, Drain: time.Second, Close: time.Second})}, opts...)...)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// addConnected adds server name and waits for it to be Connected, and for
// tel's Observer to have been told of the dial.
func addConnected(t *testing.T, m *client.Manager, tel *telemetry, name string, spec client.ServerSpec) {
	t.Helper()
	ctx := testCtx(t)
	if err := m.Add(ctx, name, spec); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	st, err := m.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	tel.hook.awaitDialed(t, name, st.Generation)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// awaitState waits until an event says server went to state: the Manager
// tells its Observer of every state change before its subscribers, so the
// Observer has seen it too.
func awaitState(t *testing.T, events <-chan client.Event, server string, state lifecycle.State) client.Event {
	t.Helper()
	ctx := testCtx(t)
	for {
		select {
		case e := <-events:
			if e.Kind == client.EventState && e.Server == server && e.To == state {
				return e
			}
		case <-ctx.Done():
			t.Fatalf("%s never went %v", server, state)
		}
	}
}
