// Package otel reports what an mcpfleet Manager does as OpenTelemetry traces
// and metrics, named and attributed as the OpenTelemetry semantic
// conventions for the Model Context Protocol say (semconv v1.41.0, the
// newest version the Go semconv packages carry the MCP conventions in; from
// v1.42.0 on they live in the GenAI conventions' own repository).
//
// New returns an Observer; pass it to the Manager with client.WithObserver.
// It lives in a Go module of its own so that the core module does not
// depend on OpenTelemetry.
//
// # Traces
//
// Every request (tools/call, prompts/get, resources/read, ...) is one span of
// kind CLIENT, a child of the span in the caller's context, named
// "{mcp.method.name} {target}" where the target is the tool's or the
// prompt's name ("tools/call get_weather"), and "{mcp.method.name}" alone
// otherwise (a resource URI is not put in the name: the conventions keep
// span names low in cardinality). Its attributes:
//
//   - mcp.method.name; gen_ai.tool.name and gen_ai.operation.name
//     "execute_tool" for a tool call; gen_ai.prompt.name for a prompt;
//     mcp.resource.uri for a resource read or (un)subscription;
//   - of the runtime the request last went to: mcp.session.id (where the
//     transport has a session), mcp.protocol.version, network.transport
//     ("pipe" for stdio, "tcp" for HTTP and SSE), network.protocol.name
//     ("http"), server.address and server.port (HTTP);
//   - on failure, error.type and an Error status (see below);
//   - mcpfleet's own: mcpfleet.server (the server's name in the Manager),
//     mcpfleet.generation (the runtime generation), mcpfleet.transport
//     ("stdio", "http", "sse" or "dialer").
//
// jsonrpc.request.id, which the conventions ask for, is not set: mcp-go
// numbers requests inside its client and does not tell the Manager.
//
// Two span events tell what the request went through: "mcpfleet.wait" when
// it waited for the server to (re)connect before it could be sent, that is
// when its first attempt went to a runtime dialled after it began (with
// mcpfleet.server.state, the state it found the server in, and
// mcpfleet.wait.duration in seconds), and "mcpfleet.retry" when it was sent
// again transparently, resent after provably not reaching a runtime (a
// stale HTTP session) or replayed after a loss (with mcpfleet.attempt,
// mcpfleet.generation, error.type and mcpfleet.retry.cause, why the attempt
// before did not do).
//
// # Errors
//
// error.type is set if and only if the request failed, with these values
// (the conventions ask instrumentations to list them):
//
//   - "tool_error": the tool ran and its result has isError set; the
//     conventions count this as a failure, so the span's status is Error;
//   - the JSON-RPC error code ("-32602") when the server answered with an
//     error whose code mcp-go keeps; rpc.response.status_code carries it
//     too. "server_error" when the code is one mcp-go does not keep;
//   - mcpfleet's outcome classes: "outcome_unknown" (lost in flight, not
//     replayable), "unavailable", "disabled", "timeout", "canceled",
//     "too_large" (the answer was over the message size limit).
//
// # Trace context
//
// The span's context is injected with the configured propagator (the
// global one by default, which propagates nothing until the host sets one:
// set propagation.TraceContext{} there or with WithPropagators) into the
// request's params._meta: "traceparent", "tracestate" (and "baggage" if the
// propagator carries it), unprefixed, as the conventions and SEP-414 say. A
// server that extracts it from _meta continues the trace.
//
// # Metrics
//
// From the MCP conventions, both histograms in seconds with the
// conventions' bucket boundaries:
//
//   - mcp.client.operation.duration: one value per request, from its start
//     to its end (a wait for a reconnect included), with mcp.method.name,
//     gen_ai.tool.name, gen_ai.operation.name, gen_ai.prompt.name,
//     error.type, rpc.response.status_code, mcp.protocol.version,
//     network.transport, network.protocol.name, server.address,
//     server.port, and mcpfleet.server;
//   - mcp.client.session.duration: one value per runtime generation, from
//     its Connected state change to the state change that leaves it, with
//     error.type if a failure ended it, mcpfleet.server, and the runtime's
//     protocol version and network attributes once a request on that
//     runtime told them.
//
// mcpfleet's own lifecycle metrics, all with mcpfleet.server except the
// first:
//
//   - mcpfleet.server.count (UpDownCounter, observed): servers by state, in
//     mcpfleet.server.state ("Connected", "Reconnecting", ...), every
//     state reported, zero included;
//   - mcpfleet.server.reconnects (Counter): runtimes lost (Connected to
//     Reconnecting);
//   - mcpfleet.server.recovery.duration (Histogram, s): from losing a
//     runtime to the next one connecting;
//   - mcpfleet.server.dial.duration (Histogram, s): connection attempts,
//     with error.type on the failed ones.
//
// A failure that ended a session or a dial is classed, with errors.Is and
// errors.As, as "misconfigured" (a mistake no retry fixes), "http_404"
// (the HTTP status of a failed answer), "process_exited", "stream_lost",
// "stale_session", "not_sent", "timeout", "canceled", "too_many_timeouts",
// "catalog_too_large", "out_of_resources" or "needs_authorization"; any
// other failure by the Go type of its innermost error.
//
// State changes reach an Observer from the Manager's event goroutine, a
// moment after they happen: session and recovery durations are timed at
// delivery.
package otel
