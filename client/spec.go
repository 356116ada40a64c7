package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// ServerSpec says how to reach one server and how to treat it.
type ServerSpec struct {
	// Dialer opens a connection to the server.
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
	if s.Dialer == nil {
		errs = append(errs, errors.New("dialer: no way to reach the server"))
	}
	if s.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must not be negative, got %v", s.Timeout))
	}
	if s.Reconnect != nil {
		if err := s.Reconnect.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("reconnect: %w", err))
		}
	}
	return errors.Join(errs...)
}
