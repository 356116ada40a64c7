package transport_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
)

// countingConn is a host's own Conn: it wraps another and counts closes.
// A Conn that adds a capability (Reporter, Classifier, ...) implements
// that interface too; the Manager checks for each by its name.
type countingConn struct {
	transport.Conn
	closes *atomic.Int32
}

func (c countingConn) Close(ctx context.Context) error {
	c.closes.Add(1)
	return c.Conn.Close(ctx)
}

// A host's transport is a client.Dialer returning a transport.Conn: here
// an in-process server, decorated.
func ExampleConn() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inProcess := client.InProcess(server.NewMCPServer("s", "1.0"))
	var closes atomic.Int32
	dial := func(ctx context.Context) (transport.Conn, error) {
		c, err := inProcess(ctx)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, closes: &closes}, nil
	}

	m := client.New()
	if err := m.Add(ctx, "s", client.ServerSpec{Dialer: dial}); err != nil {
		panic(err)
	}
	if err := m.WaitFor(ctx, "s", lifecycle.Connected); err != nil {
		panic(err)
	}
	if err := m.Close(); err != nil {
		panic(err)
	}
	fmt.Println("closed", closes.Load(), "connection")
	// Output: closed 1 connection
}
