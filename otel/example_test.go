package otel_test

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcpotel "github.com/mcpfleet/mcpfleet/otel"
)

// A Manager reporting to OpenTelemetry: every request is a CLIENT span
// named and attributed by the MCP semantic conventions, and the server
// gets the span's trace context in params._meta. A host would give New its
// own TracerProvider and MeterProvider with exporters (or set the global
// ones); here the spans go to an in-memory recorder to be printed.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(ctx) }()

	obs, err := mcpotel.New(mcpotel.WithTracerProvider(tp),
		mcpotel.WithPropagators(propagation.TraceContext{}))
	if err != nil {
		panic(err)
	}
	defer func() { _ = obs.Close() }()
	m := client.New(client.WithObserver(obs))
	defer func() { _ = m.Close() }()

	srv := server.NewMCPServer("weather", "1.0")
	srv.AddTool(mcp.NewTool("get_weather", mcp.WithString("city")),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, traced := r.Params.Meta.AdditionalFields["traceparent"]
			return mcp.NewToolResultText(fmt.Sprintf("sunny (traced: %v)", traced)), nil
		})
	if err := m.Add(ctx, "weather", client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "weather", lifecycle.Connected); err != nil {
		panic(err)
	}
	res, err := m.CallTool(ctx, "weather", "get_weather", map[string]any{"city": "Oslo"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)

	s := spans.Ended()[0]
	a := attrs(s.Attributes())
	fmt.Println(s.Name(), s.SpanKind())
	fmt.Println(a["mcp.method.name"], a["gen_ai.tool.name"], a["gen_ai.operation.name"], a["mcpfleet.server"])
	// Output:
	// sunny (traced: true)
	// tools/call get_weather client
	// tools/call get_weather execute_tool weather
}
