package http_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// countServer is mcp-go's streamable HTTP server (2026-07-28 first, no
// list_changed, so no notification stream) with tools that say how often
// they ran: count, and wait, which blocks until its request ends or the
// test does. Its listener is a doomer.
type countServer struct {
	url     string
	d       *doomer
	calls   atomic.Int64  // runs of count
	waiting chan struct{} // receives a value when wait starts
	release chan struct{} // closed when the test ends: wait returns
}

func startCountServer(t testing.TB) *countServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &countServer{url: "http://" + ln.Addr().String() + "/mcp", d: &doomer{Listener: ln},
		waiting: make(chan struct{}, 8), release: make(chan struct{})}
	s := server.NewMCPServer("count", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("count", mcp.WithString("pad")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs.calls.Add(1)
			return mcp.NewToolResultText("counted"), nil
		})
	s.AddTool(mcp.NewTool("wait"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs.waiting <- struct{}{}
			select {
			case <-ctx.Done():
			case <-cs.release:
			}
			return mcp.NewToolResultText("waited"), nil
		})
	streamable := server.NewStreamableHTTPServer(s)
	srv := &http.Server{Handler: streamable, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(cs.d)
	}()
	t.Cleanup(func() {
		close(cs.release)
		_ = srv.Close()
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
	})
	return cs
}

// count calls the count tool with pad as its argument.
func (s *session) count(ctx context.Context, pad string) error {
	return s.call(ctx, "count", map[string]any{"pad": pad})
}

// call calls tool and fails on a tool error.
func (s *session) call(ctx context.Context, tool string, args map[string]any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := s.client.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("tool error")
	}
	return nil
}
