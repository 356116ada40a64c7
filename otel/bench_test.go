package otel_test

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcpotel "github.com/mcpfleet/mcpfleet/otel"
)

// BenchmarkCallTool is the core's call-overhead benchmark (an echo call to
// an in-process mcp-go server through the Manager) with no Observer, with
// this package's Observer on the API's no-op providers, and on the SDK's:
// a TracerProvider that samples every span into a batch processor whose
// exporter drops them, and a MeterProvider with a reader, so that every
// span and every value is recorded; and on the SDK's without trace context
// in params._meta. Compare with benchstat -col /impl.
func BenchmarkCallTool(b *testing.B) {
	srv := server.NewMCPServer("bench", "1.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(r.GetString("text", "")), nil
		})
	args := map[string]any{"text": "hello"}
	trace := propagation.TraceContext{}

	b.Run("impl=none", func(b *testing.B) {
		benchCalls(b, client.New(), srv, args)
	})
	b.Run("impl=otel-noop", func(b *testing.B) {
		obs, err := mcpotel.New(mcpotel.WithTracerProvider(tracenoop.NewTracerProvider()),
			mcpotel.WithMeterProvider(metricnoop.NewMeterProvider()), mcpotel.WithPropagators(trace))
		if err != nil {
			b.Fatal(err)
		}
		defer obs.Close()
		benchCalls(b, client.New(client.WithObserver(obs)), srv, args)
	})
	// otel-sdk-nometa: the same without trace context in params._meta,
	// to tell the Observer's cost from the cost of carrying _meta.
	for _, bc := range []struct {
		name string
		prop propagation.TextMapPropagator
	}{{"otel-sdk", trace}, {"otel-sdk-nometa", propagation.NewCompositeTextMapPropagator()}} {
		b.Run("impl="+bc.name, func(b *testing.B) {
			ctx := context.Background()
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
			defer func() { _ = tp.Shutdown(ctx) }()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer func() { _ = mp.Shutdown(ctx) }()
			obs, err := mcpotel.New(mcpotel.WithTracerProvider(tp), mcpotel.WithMeterProvider(mp),
				mcpotel.WithPropagators(bc.prop))
			if err != nil {
				b.Fatal(err)
			}
			defer obs.Close()
			benchCalls(b, client.New(client.WithObserver(obs)), srv, args)
		})
	}
}

// benchCalls times calls of "echo" through m, holding one server: srv,
// reporting allocations and the process's CPU time per call, as the core's
// call-overhead benchmarks do.
func benchCalls(b *testing.B, m *client.Manager, srv *server.MCPServer, args any) {
	ctx := context.Background()
	defer m.Close()
	if err := m.Add(ctx, "s", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		b.Fatal(err)
	}
	if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := processCPUTime()
	for b.Loop() {
		if _, err := m.CallTool(ctx, "s", "echo", args); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPUTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// discardSpans is an exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
