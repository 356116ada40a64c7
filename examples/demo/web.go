package main

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// web is an MCP server over streamable HTTP on a local address that can be
// stopped and started again on the same address, as a restart would.
type web struct {
	addr, url string
	srv       *http.Server
	mcp       *server.StreamableHTTPServer
	done      chan struct{}
}

func startHTTP(addr string, s *server.MCPServer) (*web, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := server.NewStreamableHTTPServer(s)
	w := &web{
		addr: ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		mcp:  h,
		done: make(chan struct{}),
	}
	w.url = "http://" + w.addr + "/mcp"
	go func() {
		defer close(w.done)
		_ = w.srv.Serve(ln)
	}()
	return w, nil
}

// stop closes the listener and every open connection, streams included,
// and waits for the server to return. It is safe to call twice.
func (w *web) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = w.mcp.Shutdown(ctx)
	_ = w.srv.Close()
	<-w.done
}
