//go:build !linux

package pgtest

import "testing"

// Server is one PostgreSQL instance; on this OS there is none.
type Server struct{}

// Start skips the test: the shared-store tests run on Linux.
func Start(t testing.TB) *Server {
	t.Helper()
	t.Skip("pgtest runs PostgreSQL on Linux only")
	return nil
}

// URL is empty.
func (s *Server) URL(string) string { return "" }

// Addr is empty.
func (s *Server) Addr() string { return "" }

// Stop does nothing.
func (s *Server) Stop() {}

// Restart does nothing.
func (s *Server) Restart(testing.TB) {}

// Pause does nothing.
func (s *Server) Pause() {}

// Resume does nothing.
func (s *Server) Resume() {}
