package client

import (
	"context"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
)

// InProcess returns a Dialer that connects to an mcp-go server running in
// this process, through the same seam as every other transport: each dial is
// a new session of srv.
func InProcess(srv *server.MCPServer) Dialer {
	s := inproc.New(srv)
	return func(ctx context.Context) (transport.Conn, error) {
		c, err := s.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
