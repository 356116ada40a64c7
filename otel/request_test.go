package otel_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcpotel "github.com/mcpfleet/mcpfleet/otel"
)

// A tool call, a prompt and a resource read are each one CLIENT span named
// and attributed as the MCP conventions say, with mcpfleet's server name
// and generation; none failed, so none has error.type or a status.
func TestRequestSpans(t *testing.T) {
	tel := newTelemetry(t)
	ts := newTestServer()
	m := newManager(t, tel)
	addConnected(t, m, tel, "weather", client.ServerSpec{Dialer: ts.dialer()})
	ctx := testCtx(t)

	if _, err := m.CallTool(ctx, "weather", "get_weather", map[string]any{"city": "Oslo"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetPrompt(ctx, "weather", "greet", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ReadResource(ctx, "weather", "file:///hello.txt"); err != nil {
		t.Fatal(err)
	}

	st, err := m.Status("weather")
	if err != nil {
		t.Fatal(err)
	}
	common := map[string]string{
		"mcpfleet.server":      "weather",
		"mcpfleet.generation":  "1",
		"mcpfleet.transport":   "dialer",
		"mcp.protocol.version": st.Protocol,
		"error.type":           "",
		"network.transport":    "", // a Dialer's transport is not known
	}
	for _, tc := range []struct {
		name string
		want map[string]string
	}{
		{"tools/call get_weather", map[string]string{
			"mcp.method.name":       "tools/call",
			"gen_ai.tool.name":      "get_weather",
			"gen_ai.operation.name": "execute_tool",
			"gen_ai.prompt.name":    "",
		}},
		{"prompts/get greet", map[string]string{
			"mcp.method.name":       "prompts/get",
			"gen_ai.prompt.name":    "greet",
			"gen_ai.tool.name":      "",
			"gen_ai.operation.name": "",
		}},
		// The URI stays out of the name: span names are low in cardinality.
		{"resources/read", map[string]string{
			"mcp.method.name":       "resources/read",
			"mcp.resource.uri":      "file:///hello.txt",
			"gen_ai.operation.name": "",
		}},
	} {
		s := tel.span(t, tc.name)
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s: kind %v, want client", tc.name, s.SpanKind())
		}
		if s.Status().Code != codes.Unset {
			t.Errorf("%s: status %v, want unset", tc.name, s.Status())
		}
		if s.InstrumentationScope().Name != mcpotel.ScopeName {
			t.Errorf("%s: scope %q", tc.name, s.InstrumentationScope().Name)
		}
		got := attrs(s.Attributes())
		wantAttrs(t, tc.name, got, common)
		wantAttrs(t, tc.name, got, tc.want)
		if len(s.Events()) != 0 {
			t.Errorf("%s: events %v, want none", tc.name, s.Events())
		}
	}
	if st.Protocol == "" {
		t.Error("the status has no protocol version to compare with")
	}
}

// The client span is a child of the caller's, and its context reaches the
// server in params._meta: the server's handler extracts it and sees the
// client span's trace and span IDs.
func TestTraceContextReachesServer(t *testing.T) {
	tel := newTelemetry(t)
	ts := newTestServer()
	m := newManager(t, tel)
	addConnected(t, m, tel, "weather", client.ServerSpec{Dialer: ts.dialer()})

	ctx, parent := tel.tp.Tracer("host").Start(testCtx(t), "agent step")
	if _, err := m.CallTool(ctx, "weather", "get_weather", map[string]any{"city": "Oslo"}); err != nil {
		t.Fatal(err)
	}
	parent.End()

	s := tel.span(t, "tools/call get_weather")
	if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("the client span's parent is %v, want the caller's span %v", s.Parent(), parent.SpanContext())
	}
	tps := ts.traceparents()
	if len(tps) != 1 || tps[0] == "" {
		t.Fatalf("the server saw traceparents %q", tps)
	}
	remote := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": tps[0]}))
	if remote.TraceID() != s.SpanContext().TraceID() || remote.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("the server continues trace %v span %v, want the client span's %v %v",
			remote.TraceID(), remote.SpanID(), s.SpanContext().TraceID(), s.SpanContext().SpanID())
	}
	t.Logf("the server saw traceparent %s", tps[0])
}

// Failed requests have error.type and an Error status: a tool error (the
// conventions count isError as a failure), a JSON-RPC error with its code,
// a call to a disabled server.
func TestFailedRequestSpans(t *testing.T) {
	tel := newTelemetry(t)
	ts := newTestServer()
	m := newManager(t, tel)
	addConnected(t, m, tel, "weather", client.ServerSpec{Dialer: ts.dialer()})
	ctx := testCtx(t)

	res, err := m.CallTool(ctx, "weather", "broken", nil)
	if err != nil || !res.IsError {
		t.Fatalf("broken: %v, %v", res, err)
	}
	_, promptErr := m.GetPrompt(ctx, "weather", "no_such_prompt", nil)
	if !errors.Is(promptErr, client.ErrServerError) {
		t.Fatalf("missing prompt: %v", promptErr)
	}
	if err := m.Disable(ctx, "weather"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(ctx, "weather", "get_weather", nil); !errors.Is(err, client.ErrDisabled) {
		t.Fatalf("disabled: %v", err)
	}

	s := tel.span(t, "tools/call broken")
	wantAttrs(t, s.Name(), attrs(s.Attributes()), map[string]string{"error.type": "tool_error", "gen_ai.tool.name": "broken"})
	if s.Status().Code != codes.Error {
		t.Errorf("%s: status %v", s.Name(), s.Status())
	}

	s = tel.span(t, "prompts/get no_such_prompt")
	got := attrs(s.Attributes())
	code := got["rpc.response.status_code"]
	if _, err := strconv.Atoi(code); err != nil || got["error.type"] != code {
		t.Errorf("%s: error.type %q, rpc.response.status_code %q: want the JSON-RPC code in both", s.Name(), got["error.type"], code)
	}
	if s.Status().Code != codes.Error || s.Status().Description == "" || s.Status().Description == promptErr.Error() {
		t.Errorf("%s: status %+v, want Error with the server's message (not the whole %q)", s.Name(), s.Status(), promptErr)
	}
	t.Logf("%s: error.type %s, status %q", s.Name(), code, s.Status().Description)

	s = tel.span(t, "tools/call get_weather")
	wantAttrs(t, s.Name(), attrs(s.Attributes()), map[string]string{"error.type": "disabled", "mcpfleet.generation": ""})
	if s.Status().Code != codes.Error {
		t.Errorf("%s: status %v", s.Name(), s.Status())
	}
}

// A read-only call whose connection dies in flight is replayed on the next
// runtime: one span, with a retry event naming the new generation and the
// cause, and the span's generation is the one that answered.
func TestReplayedCallSpan(t *testing.T) {
	tel := newTelemetry(t)
	ts := newTestServer()
	m := newManager(t, tel)
	addConnected(t, m, tel, "weather", client.ServerSpec{Dialer: ts.dialer()})

	if _, err := m.CallTool(testCtx(t), "weather", "crash_once", nil); err != nil {
		t.Fatal(err)
	}
	s := tel.span(t, "tools/call crash_once")
	wantAttrs(t, s.Name(), attrs(s.Attributes()), map[string]string{"mcpfleet.generation": "2", "error.type": ""})
	ev := events(s, mcpotel.EventRetry)
	if len(ev) != 1 {
		t.Fatalf("retry events %v, want 1", s.Events())
	}
	got := attrs(ev[0].Attributes)
	wantAttrs(t, "retry event", got, map[string]string{"mcpfleet.attempt": "2", "mcpfleet.generation": "2"})
	if got["mcpfleet.retry.cause"] == "" || got["error.type"] == "" {
		t.Errorf("retry event %v: no cause", got)
	}
	t.Logf("retry event: %v", got)
}

// A call made while the server is reconnecting waits for it: its span has
// a wait event with the state it found, and went to the new generation.
func TestWaitForReconnectSpan(t *testing.T) {
	tel := newTelemetry(t)
	ts := newTestServer()
	m := newManager(t, tel)
	evs, stop := m.Events(64)
	defer stop()
	addConnected(t, m, tel, "weather", client.ServerSpec{Dialer: ts.dialer()})

	ts.SetDialError(errors.New("server down"))
	ts.Kill(nil)
	awaitState(t, evs, "weather", lifecycle.Reconnecting)

	done := make(chan error, 1)
	go func() {
		_, err := m.CallTool(testCtx(t), "weather", "get_weather", map[string]any{"city": "Oslo"})
		done <- err
	}()
	<-tel.hook.started // the call began while the server was down
	ts.SetDialError(nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	s := tel.span(t, "tools/call get_weather")
	wantAttrs(t, s.Name(), attrs(s.Attributes()), map[string]string{"mcpfleet.generation": "2", "error.type": ""})
	ev := events(s, mcpotel.EventWait)
	if len(ev) != 1 || len(events(s, mcpotel.EventRetry)) != 0 {
		t.Fatalf("events %v, want one wait", s.Events())
	}
	got := attrs(ev[0].Attributes)
	wantAttrs(t, "wait event", got, map[string]string{"mcpfleet.server.state": "Reconnecting", "mcpfleet.generation": "2"})
	if w, err := strconv.ParseFloat(got["mcpfleet.wait.duration"], 64); err != nil || w <= 0 {
		t.Errorf("wait duration %q", got["mcpfleet.wait.duration"])
	}
}

func events(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}
