package otel

import (
	"context"
	"errors"
	"strconv"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// mcpfleet's own attributes, for what the conventions have no name for.
const (
	// ServerKey is the server's name in the Manager.
	ServerKey = attribute.Key("mcpfleet.server")
	// GenerationKey is the runtime generation a request went to.
	GenerationKey = attribute.Key("mcpfleet.generation")
	// TransportKey is the Manager's name for the transport: "stdio",
	// "http", "sse" or "dialer".
	TransportKey = attribute.Key("mcpfleet.transport")
	// StateKey is a server's lifecycle state ("Connected", ...).
	StateKey = attribute.Key("mcpfleet.server.state")
	// AttemptKey numbers the attempts of a request, from 1.
	AttemptKey = attribute.Key("mcpfleet.attempt")
	// RetryCauseKey says why the attempt before a retry did not do.
	RetryCauseKey = attribute.Key("mcpfleet.retry.cause")
	// WaitDurationKey is how long a request waited for the server to
	// (re)connect, in seconds.
	WaitDurationKey = attribute.Key("mcpfleet.wait.duration")
)

// The span events a request may have.
const (
	// EventWait: the request waited for the server to (re)connect.
	EventWait = "mcpfleet.wait"
	// EventRetry: the request was sent again transparently.
	EventRetry = "mcpfleet.retry"
)

// target returns the request's low-cardinality target for the span name,
// if it has one: the tool's or the prompt's name.
func target(r *client.Request) string {
	switch r.Method {
	case "tools/call", "prompts/get":
		return r.Name
	}
	return ""
}

// spanName is "{mcp.method.name} {target}", or the method alone.
func spanName(r *client.Request) string {
	if t := target(r); t != "" {
		return r.Method + " " + t
	}
	return r.Method
}

// targetAttrs appends what the request is about, for the span and the
// duration metric alike: the tool or the prompt.
func targetAttrs(kv []attribute.KeyValue, r *client.Request) []attribute.KeyValue {
	switch r.Method {
	case "tools/call":
		kv = append(kv, semconv.GenAIToolNameKey.String(r.Name), semconv.GenAIOperationNameExecuteTool)
	case "prompts/get":
		kv = append(kv, semconv.GenAIPromptNameKey.String(r.Name))
	}
	return kv
}

// runtimeAttrs appends what the conventions record of the runtime the
// request last went to. The session ID is the span's alone: it would make
// the metrics' cardinality grow with every reconnect.
func runtimeAttrs(kv []attribute.KeyValue, r *client.Request) []attribute.KeyValue {
	if r.Protocol != "" {
		kv = append(kv, semconv.McpProtocolVersionKey.String(r.Protocol))
	}
	switch r.Transport {
	case "stdio":
		kv = append(kv, semconv.NetworkTransportPipe)
	case "http", "sse":
		kv = append(kv, semconv.NetworkTransportTCP, semconv.NetworkProtocolNameKey.String("http"))
	}
	if r.Address != "" {
		kv = append(kv, semconv.ServerAddressKey.String(r.Address))
		if r.Port != 0 {
			kv = append(kv, semconv.ServerPortKey.Int(r.Port))
		}
	}
	return kv
}

// errorAttrs appends error.type, and rpc.response.status_code when the
// server answered with a JSON-RPC error whose code is known, for a request
// that did not succeed. It returns the status description too.
func errorAttrs(kv []attribute.KeyValue, o client.Outcome, err error) ([]attribute.KeyValue, string) {
	if o == client.OutcomeOK {
		return kv, ""
	}
	if o == client.OutcomeServerError {
		if code, ok := jsonrpcCode(err); ok {
			c := strconv.Itoa(code)
			return append(kv, semconv.ErrorTypeKey.String(c), semconv.RPCResponseStatusCodeKey.String(c)), serverMessage(err)
		}
	}
	kv = append(kv, semconv.ErrorTypeKey.String(o.String()))
	if err == nil {
		return kv, o.String()
	}
	if o == client.OutcomeServerError {
		return kv, serverMessage(err)
	}
	return kv, err.Error()
}

// jsonrpcCodes are the JSON-RPC error codes mcp-go turns into errors a
// caller can tell apart; for any other code it keeps only the message.
var jsonrpcCodes = []struct {
	err  error
	code int
}{
	{mcp.ErrParseError, mcp.PARSE_ERROR},
	{mcp.ErrInvalidRequest, mcp.INVALID_REQUEST},
	{mcp.ErrMethodNotFound, mcp.METHOD_NOT_FOUND},
	{mcp.ErrInvalidParams, mcp.INVALID_PARAMS},
	{mcp.ErrInternalError, mcp.INTERNAL_ERROR},
	{mcp.ErrRequestInterrupted, mcp.REQUEST_INTERRUPTED},
	{mcp.ErrResourceNotFound, mcp.RESOURCE_NOT_FOUND},
}

// jsonrpcCode returns the JSON-RPC error code the server answered with, if
// mcp-go kept it.
func jsonrpcCode(err error) (int, bool) {
	for _, c := range jsonrpcCodes {
		if errors.Is(err, c.err) {
			return c.code, true
		}
	}
	var (
		mismatch   mcp.HeaderMismatchError
		capability mcp.MissingRequiredClientCapabilityError
		version    mcp.UnsupportedProtocolVersionError
		url        mcp.URLElicitationRequiredError
	)
	switch {
	case errors.As(err, &mismatch):
		return mcp.HEADER_MISMATCH, true
	case errors.As(err, &capability):
		return mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, true
	case errors.As(err, &version):
		return mcp.UNSUPPORTED_PROTOCOL_VERSION, true
	case errors.As(err, &url):
		return mcp.URL_ELICITATION_REQUIRED, true
	}
	return 0, false
}

// serverMessage returns the server's own error, the one wrapped next to
// client.ErrServerError, as the conventions want the status description to
// be the JSON-RPC error's message; the whole error if it is not found.
func serverMessage(err error) string {
	for e := err; e != nil; {
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			errs := u.Unwrap()
			if len(errs) == 2 && errs[0] == client.ErrServerError {
				return errs[1].Error()
			}
			if len(errs) == 0 {
				return err.Error()
			}
			e = errs[0]
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		default:
			return err.Error()
		}
	}
	return err.Error()
}

// failureType is error.type for a failure that ended a session, a dial or
// an attempt: mcpfleet's name for the class of failure, found with
// errors.Is and errors.As on the core's sentinels and the transports'
// typed errors; for any other, the conventions' rule for Go errors (the
// type) applied to the innermost error, under every wrapper that only
// says what was being done.
func failureType(err error) attribute.KeyValue {
	var httpErr *mcphttp.Error
	var exit *stdio.ExitError
	var class string
	switch {
	case errors.Is(err, client.ErrTooManyTimeouts):
		class = "too_many_timeouts"
	case errors.Is(err, mcphttp.ErrStaleSession), errors.Is(err, mcptransport.ErrSessionTerminated):
		class = "stale_session"
	case errors.Is(err, client.ErrCatalogTooLarge):
		class = "catalog_too_large"
	case errors.Is(err, context.DeadlineExceeded):
		class = "timeout"
	case errors.Is(err, context.Canceled):
		class = "canceled"
	case errors.Is(err, transport.ErrMisconfigured):
		class = "misconfigured"
	case errors.As(err, &httpErr) && httpErr.Status != 0:
		class = "http_" + strconv.Itoa(httpErr.Status)
	case errors.As(err, &exit):
		class = "process_exited"
	case errors.Is(err, mcphttp.ErrStreamLost):
		class = "stream_lost"
	case errors.Is(err, transport.ErrNotSent):
		class = "not_sent"
	case errors.Is(err, stdio.ErrOutOfResources):
		class = "out_of_resources"
	case errors.Is(err, client.ErrNeedsAuthorization):
		class = "needs_authorization"
	default:
		return semconv.ErrorType(innermost(err))
	}
	return semconv.ErrorTypeKey.String(class)
}

// innermost follows err's chain to its end (the first branch of a joined
// error).
func innermost(err error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				next = errs[0]
			}
		}
		if next == nil {
			return err
		}
		err = next
	}
}
