package otel_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcpotel "github.com/mcpfleet/mcpfleet/otel"
)

// TestGatewayMetrics: a Team's served side, recorded: sessions, calls by
// identity, server, tool and outcome (a denied one among them), their
// durations, the policy's decisions by rule, a refused credential, and
// each upstream's connection state as a gauge, which follows the server
// going down.
func TestGatewayMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := mcpotel.NewGatewayObserver(mcpotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		obs.Close()
		mp.Shutdown(context.Background())
	})
	told := &upstreamHook{GatewayObserver: obs, changed: make(chan struct{}, 1)}
	collect := func() map[string]metricdata.Metrics {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]metricdata.Metrics{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				out[m.Name] = m
			}
		}
		return out
	}

	// The upstream: tools that answer, fail, and a tool the policy closes.
	up := server.NewMCPServer("up", "1", server.WithToolCapabilities(true))
	up.AddTool(mcp.NewTool("get_weather"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("sunny"), nil
	})
	up.AddTool(mcp.NewTool("broken"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("broken"), nil
	})
	up.AddTool(mcp.NewTool("delete_city"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("gone"), nil
	})
	upSrv := httptest.NewServer(server.NewStreamableHTTPServer(up))
	defer upSrv.Close()

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "keys.json")
	key := strings.Repeat("k", 32)
	if err := os.WriteFile(keyFile, []byte(fmt.Sprintf(`{"keys": [{"identity": "alice", "groups": ["eng"], "key": %q}]}`, key)), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := gateway.LoadAPIKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := fleet.ParseTemplate([]byte(fmt.Sprintf(`{"mcpServers": {"weather": {"url": %q}}}`, upSrv.URL+"/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	team, err := gateway.NewTeam(gateway.TeamConfig{
		Fleet:          fleet.Config{Template: tmpl, Options: []client.Option{client.WithTimeouts(client.Timeouts{Ready: 100 * time.Millisecond})}},
		Authenticators: []gateway.Authenticator{keys},
		Resource:       url,
		Policy: &gateway.Policy{Rules: []gateway.PolicyRule{{Name: "eng", Groups: []string{"eng"},
			Tools: client.ToolFilter{Deny: []string{"delete_*"}}}}},
		Options:  []gateway.Option{gateway.WithObserver(told)},
		Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: team, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer func() {
		team.Shutdown(context.Background())
		hs.Close()
		team.Close()
	}()

	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr)
	ctx := testCtx(t)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	call := func(tool string) error {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		_, err := c.CallTool(ctx, req)
		return err
	}
	for _, tool := range []string{"weather__get_weather", "weather__get_weather", "weather__broken"} {
		if err := call(tool); err != nil {
			t.Fatal(err)
		}
	}
	if err := call("weather__delete_city"); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("the denied call: %v", err)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	got := collect()
	sessions := points[int64](t, got, "mcpfleet.gateway.sessions", "{session}")
	if len(sessions) != 1 || sessions[0].Value != 1 || attrs(sessions[0].Attributes.ToSlice())["mcpfleet.identity"] != "alice" {
		t.Errorf("sessions: %+v", sessions)
	}
	calls := map[string]int64{}
	for _, p := range points[int64](t, got, "mcpfleet.gateway.calls", "{request}") {
		a := attrs(p.Attributes.ToSlice())
		calls[a["mcpfleet.identity"]+" "+a["mcpfleet.server"]+" "+a["gen_ai.tool.name"]+" "+a["mcpfleet.outcome"]] += p.Value
	}
	wantCalls := map[string]int64{"alice weather get_weather ok": 2, "alice weather broken tool_error": 1,
		"alice weather delete_city denied": 1}
	if fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
		t.Errorf("calls %v, want %v", calls, wantCalls)
	}
	wantCounts(t, histogram(t, got, "mcp.server.operation.duration"), map[string]uint64{"get_weather/": 2, "broken/tool_error": 1},
		func(a map[string]string) string { return a["gen_ai.tool.name"] + "/" + a["error.type"] })
	decisions := map[string]int64{}
	for _, p := range points[int64](t, got, "mcpfleet.gateway.policy.decisions", "{decision}") {
		a := attrs(p.Attributes.ToSlice())
		decisions[a["mcpfleet.policy.rule"]+" "+a["mcpfleet.policy.decision"]] += p.Value
	}
	if decisions["eng allowed"] != 3 || decisions["eng denied"] != 1 {
		t.Errorf("decisions %v", decisions)
	}
	refused := points[int64](t, got, "mcpfleet.gateway.auth.refused", "{request}")
	if len(refused) != 1 || refused[0].Value != 1 || attrs(refused[0].Attributes.ToSlice())["mcpfleet.auth.reason"] != "missing" {
		t.Errorf("refused: %+v", refused)
	}
	upstreamState := func() map[string]int64 {
		out := map[string]int64{}
		for _, p := range points[int64](t, collect(), "mcpfleet.gateway.upstream.state", "{fleet}") {
			a := attrs(p.Attributes.ToSlice())
			if p.Value != 0 {
				out[a["mcpfleet.server"]+" "+a["mcpfleet.server.state"]] = p.Value
			}
		}
		return out
	}
	if got := upstreamState(); fmt.Sprint(got) != "map[weather Connected:1]" {
		t.Errorf("upstream states: %v", got)
	}

	// The upstream goes down: the gauge follows.
	g := team.Gateway("alice")
	evs, stop := g.Manager().Events(16)
	defer stop()
	upSrv.CloseClientConnections()
	upSrv.Close()
	if err := call("weather__get_weather"); err != nil {
		t.Fatal(err) // an error result, not an error
	}
	for ev := range evs {
		if ev.Kind == client.EventState && ev.To != lifecycle.Connected {
			break
		}
	}
	// The Observer is told from the gateway's follower, after the event.
	for s := upstreamState(); s["weather Connected"] != 0; s = upstreamState() {
		select {
		case <-told.changed:
		case <-ctx.Done():
			t.Fatalf("the gauge still says Connected: %v", s)
		}
	}
	t.Logf("after the upstream went down: %v", upstreamState())
}

// upstreamHook tells the test when the Observer was told of an upstream's
// state.
type upstreamHook struct {
	*mcpotel.GatewayObserver
	changed chan struct{} // capacity 1
}

func (h *upstreamHook) UpstreamState(u gateway.UpstreamInfo) {
	h.GatewayObserver.UpstreamState(u)
	select {
	case h.changed <- struct{}{}:
	default:
	}
}
