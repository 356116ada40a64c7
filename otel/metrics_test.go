package otel_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// The metrics of a server's life: calls, a crash with two failed redials,
// a recovery, another call, and the Manager's close.
func TestMetrics(t *testing.T) {
	tel := newTelemetry(t)
	ts := newTestServer()
	m := newManager(t, tel)
	evs, stop := m.Events(64)
	defer stop()
	addConnected(t, m, tel, "weather", client.ServerSpec{Dialer: ts.dialer()})
	ctx := testCtx(t)
	call := func(tool string) {
		t.Helper()
		if _, err := m.CallTool(ctx, "weather", tool, map[string]any{"city": "Oslo"}); err != nil {
			t.Fatal(err)
		}
	}
	call("get_weather")
	call("get_weather")
	call("broken")
	st, _ := m.Status("weather")

	ts.SetDialError(errors.New("server down"))
	ts.Kill(nil)
	awaitState(t, evs, "weather", lifecycle.Reconnecting)
	tel.hook.awaitFailures(t, 2)
	ts.SetDialError(nil)
	awaitState(t, evs, "weather", lifecycle.Connected)
	tel.hook.awaitDialed(t, "weather", 2)
	call("get_weather")

	got := tel.metrics(t)

	// Servers by state: one Connected, every other state reported as zero.
	servers := points[int64](t, got, "mcpfleet.server.count", "{server}")
	if len(servers) != len(lifecycle.States())-1 {
		t.Errorf("%d servers-by-state points, want one per state but Closed", len(servers))
	}
	for _, p := range servers {
		want := int64(0)
		if state(p.Attributes.ToSlice()) == "Connected" {
			want = 1
		}
		if p.Value != want {
			t.Errorf("servers %v: %d, want %d", p.Attributes.ToSlice(), p.Value, want)
		}
	}

	// Requests: by tool and outcome, without the session or generation.
	ops := histogram(t, got, "mcp.client.operation.duration")
	wantCounts(t, ops, map[string]uint64{"get_weather/": 3, "broken/tool_error": 1},
		func(a map[string]string) string { return a["gen_ai.tool.name"] + "/" + a["error.type"] })
	for _, p := range ops.DataPoints {
		wantAttrs(t, "operation", attrs(p.Attributes.ToSlice()), map[string]string{
			"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
			"mcpfleet.server": "weather", "mcp.protocol.version": st.Protocol,
			"mcp.session.id": "", "mcpfleet.generation": ""})
		if !slices.Equal(p.Bounds, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}) {
			t.Errorf("bounds %v, want the MCP conventions'", p.Bounds)
		}
	}

	wantCounts(t, histogram(t, got, "mcpfleet.server.dial.duration"), map[string]uint64{"": 2, "*errors.errorString": 2},
		func(a map[string]string) string { return a["error.type"] })
	wantCounts(t, histogram(t, got, "mcpfleet.server.recovery.duration"), map[string]uint64{"weather": 1},
		func(a map[string]string) string { return a["mcpfleet.server"] })
	reconnects := points[int64](t, got, "mcpfleet.server.reconnects", "{reconnect}")
	if len(reconnects) != 1 || reconnects[0].Value != 1 {
		t.Errorf("reconnects %+v, want 1", reconnects)
	}
	// The first session ended with the crash, the second not yet.
	wantCounts(t, histogram(t, got, "mcp.client.session.duration"), map[string]uint64{"weather/lost": 1},
		func(a map[string]string) string { return a["mcpfleet.server"] + "/" + sessionEnd(a) })

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	got = tel.metrics(t)
	// Closing ended the second session, without an error; the server is
	// gone from the counts.
	wantCounts(t, histogram(t, got, "mcp.client.session.duration"), map[string]uint64{"weather/lost": 1, "weather/ok": 1},
		func(a map[string]string) string { return a["mcpfleet.server"] + "/" + sessionEnd(a) })
	for _, p := range histogram(t, got, "mcp.client.session.duration").DataPoints {
		wantAttrs(t, "session", attrs(p.Attributes.ToSlice()), map[string]string{"mcp.protocol.version": st.Protocol})
		t.Logf("session: %v", attrs(p.Attributes.ToSlice()))
	}
	for _, p := range points[int64](t, got, "mcpfleet.server.count", "{server}") {
		if p.Value != 0 {
			t.Errorf("after close, servers %v: %d", p.Attributes.ToSlice(), p.Value)
		}
	}
}

// A session closed for going idle ends without an error.type: nothing
// failed.
func TestMetricsIdleSession(t *testing.T) {
	tel := newTelemetry(t)
	tel.obs.StateChange("s", lifecycle.Connecting, lifecycle.Connected, 1, nil)
	tel.obs.StateChange("s", lifecycle.Connected, lifecycle.Disconnected, 1,
		fmt.Errorf("%w: no use for 1m0s", client.ErrIdleTimeout))
	wantCounts(t, histogram(t, tel.metrics(t), "mcp.client.session.duration"), map[string]uint64{"s/ok": 1},
		func(a map[string]string) string { return a["mcpfleet.server"] + "/" + sessionEnd(a) })
}

func sessionEnd(a map[string]string) string {
	if a["error.type"] != "" {
		return "lost"
	}
	return "ok"
}

func state(kvs []attribute.KeyValue) string { return attrs(kvs)["mcpfleet.server.state"] }

// points returns the data points of the sum or gauge named name, checking
// its unit.
func points[N int64 | float64](t *testing.T, got map[string]metricdata.Metrics, name, unit string) []metricdata.DataPoint[N] {
	t.Helper()
	m, ok := got[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	if m.Unit != unit {
		t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[N]:
		return d.DataPoints
	case metricdata.Gauge[N]:
		return d.DataPoints
	}
	t.Fatalf("%s: data %T", name, m.Data)
	return nil
}

// histogram returns the histogram named name, checking it is in seconds.
func histogram(t *testing.T, got map[string]metricdata.Metrics, name string) metricdata.Histogram[float64] {
	t.Helper()
	m, ok := got[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok || m.Unit != "s" {
		t.Fatalf("%s: %T in %q, want a histogram in seconds", name, m.Data, m.Unit)
	}
	return h
}

// wantCounts checks the histogram's counts, summed by key(attributes).
func wantCounts(t *testing.T, h metricdata.Histogram[float64], want map[string]uint64, key func(map[string]string) string) {
	t.Helper()
	got := map[string]uint64{}
	for _, p := range h.DataPoints {
		got[key(attrs(p.Attributes.ToSlice()))] += p.Count
	}
	if !maps.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}
