//go:build !linux

package redistest

import (
	"context"
	"errors"
	"testing"
)

// Server is one redis-server instance; on this OS there is none.
type Server struct{}

// Start skips the test: the shared-store tests run on Linux.
func Start(t testing.TB) *Server {
	t.Helper()
	t.Skip("redistest runs redis-server on Linux only")
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "" }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "" }

// Stop does nothing.
func (s *Server) Stop() {}

// Restart does nothing.
func (s *Server) Restart(testing.TB) {}

// Pause does nothing.
func (s *Server) Pause() {}

// Resume does nothing.
func (s *Server) Resume() {}

// Dir is empty.
func (s *Server) Dir() string { return "" }

// Dial fails.
func (s *Server) Dial(context.Context) error { return errors.New("redistest: not on this OS") }
