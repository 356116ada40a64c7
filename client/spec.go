package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// ServerSpec says how to reach one server and how to treat it. Exactly one
// of Stdio, HTTP and Dialer says how to reach it.
type ServerSpec struct {
	// Stdio runs the server as a child process speaking MCP on its stdio.
	Stdio *stdio.Spec
	// HTTP reaches the server over streamable HTTP or legacy SSE.
	HTTP *mcphttp.Spec
	// Dialer opens a connection some other way, such as InProcess.
	Dialer Dialer
	// Disabled adds the server switched off; Enable switches it on.
	Disabled bool
	// Lazy defers the first connect to the first call.
	Lazy bool
	// Timeout bounds each call that has no earlier deadline. Zero means
	// only the caller's context bounds it.
	Timeout time.Duration
	// Reconnect overrides the manager's reconnect policy for this server.
	Reconnect *lifecycle.Policy
	// ToolPrefix replaces the server's name in qualified tool names.
	ToolPrefix string
	// MaxInFlight overrides the manager's per-server limit on in-flight
	// calls; negative means no limit.
	MaxInFlight int
}

// Validate reports what is wrong with the spec, naming the field.
func (s ServerSpec) Validate() error {
	var errs []error
	ways := 0
	if s.Stdio != nil {
		ways++
		if err := s.Stdio.Validate(); err != nil {
			errs = append(errs, err) // named by its package: "mcpfleet: stdio: spec: ..."
		}
	}
	if s.HTTP != nil {
		ways++
		if err := s.HTTP.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Dialer != nil {
		ways++
	}
	switch ways {
	case 0:
		errs = append(errs, errors.New("mcpfleet: spec: transport: no way to reach the server: set one of stdio, http or dialer"))
	case 1:
	default:
		errs = append(errs, errors.New("mcpfleet: spec: transport: more than one of stdio, http and dialer is set"))
	}
	if s.Timeout < 0 {
		errs = append(errs, fmt.Errorf("mcpfleet: spec: timeout: must not be negative, got %v", s.Timeout))
	}
	if s.Reconnect != nil {
		if err := s.Reconnect.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("mcpfleet: spec: reconnect: %w", err))
		}
	}
	return errors.Join(errs...)
}

// dialer returns how to open a connection for one attempt. legacy asks for
// the initialize handshake, after a server rejected 2026-07-28.
func (s ServerSpec) dialer(o *options, legacy bool) Dialer {
	if o.dialOverride != nil {
		if d := o.dialOverride(s); d != nil {
			return d
		}
	}
	switch {
	case s.Stdio != nil:
		spec := *s.Stdio
		opts := append([]stdio.Option{stdio.WithLogger(o.logger)}, o.stdioOptions...)
		return func(ctx context.Context) (Conn, error) { return stdio.Dial(ctx, spec, opts...) }
	case s.HTTP != nil:
		spec := *s.HTTP
		opts := append([]mcphttp.Option{mcphttp.WithLogger(o.logger)}, o.httpOptions...)
		if legacy {
			opts = append(opts, mcphttp.WithLegacyProtocol())
		}
		return func(ctx context.Context) (Conn, error) { return mcphttp.Dial(ctx, spec, opts...) }
	default:
		return s.Dialer
	}
}

// The transports satisfy the seam by shape; these lines keep it so.
var (
	_ Conn      = (*stdio.Conn)(nil)
	_ Conn      = (*mcphttp.Conn)(nil)
	_ ReadyHook = (*mcphttp.Conn)(nil)
)
