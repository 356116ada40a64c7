package client

import (
	"context"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
)

// InProcess returns a Dialer that connects to an mcp-go server running in
// this process, through the same seam as every other transport: each dial is
// a new session of srv.
func InProcess(srv *server.MCPServer) Dialer {
	return InProcessServer(inproc.New(srv))
}

// InProcessServer returns a Dialer for an in-process server whose
// connections the caller may kill (see internal/inproc); tests and the demo
// use it to crash a connection on purpose.
func InProcessServer(s *inproc.Server) Dialer {
	return func(ctx context.Context) (Conn, error) {
		c, err := s.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
