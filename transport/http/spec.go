package http

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// Kind is the HTTP transport a server speaks.
type Kind int

const (
	// StreamableHTTP is the Streamable HTTP transport, both protocol
	// generations (2026-07-28 and the initialize handshake). It is the
	// default.
	StreamableHTTP Kind = iota
	// SSE is the legacy HTTP+SSE transport (protocol 2024-11-05): a GET
	// event stream plus POSTs to the endpoint the stream announces.
	SSE
)

// String returns a stable name: "streamable-http" or "sse".
func (k Kind) String() string {
	switch k {
	case StreamableHTTP:
		return "streamable-http"
	case SSE:
		return "sse"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Spec says how to reach one MCP server over HTTP.
type Spec struct {
	// URL is the server's endpoint: the MCP endpoint for StreamableHTTP
	// (often .../mcp), the event stream for SSE (often .../sse). Its query
	// values may be secrets (an api_key): String, LogValue, errors and logs
	// show them as xxxxx. Userinfo is refused: use Headers.
	URL string
	// Headers are sent with every request, Authorization included. Their
	// values are secrets: String, LogValue and errors never show them.
	Headers map[string]string
	// Timeout bounds each request/response exchange. It does not apply to
	// the long-lived notification stream. Zero means no bound other than
	// the caller's context.
	Timeout time.Duration
	// Kind is the transport. The zero value is StreamableHTTP.
	Kind Kind
}

// Validate reports the first problem with s, naming the field.
func (s Spec) Validate() error {
	if s.URL == "" {
		return errors.New("http spec: URL: empty")
	}
	if !strings.Contains(s.URL, "://") {
		// "localhost:8080/mcp" parses as scheme "localhost", and
		// "127.0.0.1:8080/mcp" not at all: neither error says what is
		// missing.
		return errors.New("http spec: URL: no scheme: begin it with http:// or https://")
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		// url.Parse's error quotes the URL whole, query and userinfo too.
		return redact.Error(fmt.Errorf("http spec: URL: %w", err), s.URL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("http spec: URL: scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("http spec: URL: no host")
	}
	if u.User != nil {
		return errors.New("http spec: URL: credentials in the URL are not supported; use Headers")
	}
	for name := range s.Headers {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return fmt.Errorf("http spec: Headers: invalid header name %q", name)
		}
	}
	if s.Timeout < 0 {
		return fmt.Errorf("http spec: Timeout: negative (%v)", s.Timeout)
	}
	if s.Kind != StreamableHTTP && s.Kind != SSE {
		return fmt.Errorf("http spec: Kind: unknown %v", s.Kind)
	}
	return nil
}

// headerNames returns the header names, sorted, without their values.
func (s Spec) headerNames() []string {
	names := make([]string, 0, len(s.Headers))
	for name := range s.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// String describes s without header values, which may be secrets.
func (s Spec) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", s.Kind, redact.URL(s.URL))
	if len(s.Headers) > 0 {
		fmt.Fprintf(&b, " headers=[%s]", strings.Join(s.headerNames(), ","))
	}
	if s.Timeout > 0 {
		fmt.Fprintf(&b, " timeout=%v", s.Timeout)
	}
	return b.String()
}

// LogValue logs s without header values, which may be secrets.
func (s Spec) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("kind", s.Kind.String()),
		slog.String("url", redact.URL(s.URL)),
	}
	if len(s.Headers) > 0 {
		attrs = append(attrs, slog.Any("headers", s.headerNames()))
	}
	if s.Timeout > 0 {
		attrs = append(attrs, slog.Duration("timeout", s.Timeout))
	}
	return slog.GroupValue(attrs...)
}
