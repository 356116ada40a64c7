package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// ServerSpec says how to reach one server and how to treat it. Exactly one
// of Stdio, HTTP and Dialer says how to reach it.
type ServerSpec struct {
	// Stdio runs the server as a child process speaking MCP on its stdio.
	Stdio *stdio.Spec
	// HTTP reaches the server over streamable HTTP or legacy SSE.
	HTTP *mcphttp.Spec
	// OAuth authorizes the client with an HTTP server by the MCP
	// authorization spec. The server's tokens belong to its slot: every
	// runtime uses them, and they are kept in the Manager's token store
	// (WithTokenStore) under the server's name. Only with HTTP.
	OAuth *oauth.Config
	// Dialer opens a connection some other way, such as InProcess.
	Dialer Dialer
	// Disabled adds the server switched off; Enable switches it on.
	Disabled bool
	// Lazy defers the first connect to the first call.
	Lazy bool
	// Timeout bounds each call that has no earlier deadline. Zero means
	// only the caller's context bounds it.
	Timeout time.Duration
	// IdleTimeout closes the server's runtime once it has gone that long
	// unused: no request of the host's in flight (in the interceptor
	// chain included) or ended since, no
	// notification from the server, no request of the server's being
	// answered, and no resource subscription (a server the host is
	// subscribed to is never idle). The runtime is detached and closed as
	// on Disable (a stdio child is reaped, an HTTP session deleted), the
	// slot moves to Disconnected with the cause ErrIdleTimeout, and its
	// catalog stays published; the next request starts it again and waits
	// for it, as for a lazy server. The Manager's own idle probes do not
	// count as use. Changing it through Apply or Manager.SetIdleTimeout
	// takes effect without a restart. Zero means never.
	IdleTimeout time.Duration
	// Reconnect overrides the manager's reconnect policy for this server.
	Reconnect *lifecycle.Policy
	// ToolPrefix replaces the server's name in qualified tool names.
	ToolPrefix string
	// ToolFilter decides which of the server's tools are published (see
	// ToolFilter); the zero value publishes them all. Manager.SetToolFilter
	// changes it at runtime, without a reconnect.
	ToolFilter ToolFilter
	// MaxInFlight overrides the manager's per-server limit on in-flight
	// calls; negative means no limit.
	MaxInFlight int
	// Limits bounds what the server may cost the host; zero fields take
	// the manager's (WithLimits).
	Limits Limits
}

// Validate reports what is wrong with the spec, naming the field.
func (s ServerSpec) Validate() error {
	var errs []error
	ways := 0
	if s.Stdio != nil {
		ways++
		if err := s.Stdio.Validate(); err != nil {
			errs = append(errs, err) // named by its package: "stdio: spec: ..."
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
	if s.OAuth != nil {
		if s.HTTP == nil {
			errs = append(errs, errors.New("spec: oauth: only an http server takes oauth"))
		} else if err := s.OAuth.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	switch ways {
	case 0:
		errs = append(errs, errors.New("spec: transport: no way to reach the server: set one of stdio, http or dialer"))
	case 1:
	default:
		errs = append(errs, errors.New("spec: transport: more than one of stdio, http and dialer is set"))
	}
	if s.Timeout < 0 {
		errs = append(errs, fmt.Errorf("spec: timeout: must not be negative, got %v", s.Timeout))
	}
	if err := validateIdleTimeout(s.IdleTimeout); err != nil {
		errs = append(errs, err)
	}
	if s.Reconnect != nil {
		if err := s.Reconnect.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("spec: reconnect: %w", err))
		}
	}
	if err := s.Limits.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := s.ToolFilter.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateIdleTimeout is Validate's check of IdleTimeout, which
// SetIdleTimeout makes too.
func validateIdleTimeout(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("spec: idleTimeout: must not be negative, got %v", d)
	}
	return nil
}

// Dialer opens a new connection to one server. The Manager calls it once
// per connection attempt; ctx bounds the attempt and ends when the attempt
// is abandoned (Disable, Remove, Close), but the Conn it returns must
// outlive ctx: only Conn.Close ends it. See package transport for the
// capabilities a Conn may add.
type Dialer func(ctx context.Context) (transport.Conn, error)

// dialer returns how to open a connection for one attempt, under the
// slot's limits and with its authorizer (nil: none). legacy asks for the
// initialize handshake, after a server rejected 2026-07-28; rejoin, when
// not nil, the session of a runtime lost to a fault, to go on in.
func (s ServerSpec) dialer(o *options, legacy bool, limits Limits, auth mcphttp.Authorizer, rejoin *mcphttp.Rejoin) Dialer {
	if o.dialOverride != nil {
		if d := o.dialOverride(s); d != nil {
			return d
		}
	}
	switch {
	// The Manager's logger is a default the host's options may override;
	// what Limits and the spec decide comes after the host's options, and
	// wins (see WithStdioOptions, WithHTTPOptions).
	case s.Stdio != nil:
		spec := *s.Stdio
		opts := append(append([]stdio.Option{stdio.WithLogger(o.logger)}, o.stdioOptions...),
			stdio.WithMaxMessageBytes(limits.MaxMessageBytes), stdio.WithStderrLogRate(limits.NotificationRate))
		return func(ctx context.Context) (transport.Conn, error) { return stdio.Dial(ctx, spec, opts...) }
	case s.HTTP != nil:
		spec := *s.HTTP
		opts := append(append([]mcphttp.Option{mcphttp.WithLogger(o.logger)}, o.httpOptions...),
			mcphttp.WithMaxMessageBytes(limits.MaxMessageBytes))
		if legacy {
			opts = append(opts, mcphttp.WithLegacyProtocol())
		}
		if rejoin != nil {
			// Sessions are of the older protocol only.
			opts = append(opts, mcphttp.WithLegacyProtocol(), mcphttp.WithRejoin(*rejoin))
		}
		if auth != nil {
			opts = append(opts, mcphttp.WithAuthorizer(auth))
		}
		return func(ctx context.Context) (transport.Conn, error) { return mcphttp.Dial(ctx, spec, opts...) }
	default:
		return s.Dialer
	}
}

// describe names the spec's transport for an Observer ("stdio", "http",
// "sse", or "dialer" for a Dialer), and an HTTP server's host and port.
func (s ServerSpec) describe() (transport, address string, port int) {
	switch {
	case s.Stdio != nil:
		return "stdio", "", 0
	case s.HTTP != nil:
		transport = "http"
		if s.HTTP.Kind == mcphttp.SSE {
			transport = "sse"
		}
		u, err := url.Parse(s.HTTP.URL)
		if err != nil {
			return transport, "", 0
		}
		port, _ = strconv.Atoi(u.Port())
		if port == 0 {
			port = 80
			if u.Scheme == "https" {
				port = 443
			}
		}
		return transport, u.Hostname(), port
	}
	return "dialer", "", 0
}

// The transports satisfy the seam; these lines keep it so.
var (
	_ transport.Conn             = (*stdio.Conn)(nil)
	_ transport.Reporter         = (*stdio.Conn)(nil)
	_ transport.Conn             = (*mcphttp.Conn)(nil)
	_ transport.ReadyHook        = (*mcphttp.Conn)(nil)
	_ transport.Classifier       = (*mcphttp.Conn)(nil)
	_ transport.ResourceListener = (*mcphttp.Conn)(nil)

	_ mcphttp.Authorizer = (*oauth.Authorizer)(nil)
)
