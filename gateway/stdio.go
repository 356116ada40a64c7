package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one downstream client on in and out (a host that
// starts the gateway as its stdio server gives it os.Stdin and
// os.Stdout), one JSON-RPC message per line, until in ends or ctx does. A
// malformed message is answered with a JSON-RPC error; one over the
// message size limit is discarded as it is read and answered so. When in
// ends, the client's calls still in flight are cancelled.
//
// mcp-go keeps one stdio session per process, so a process serves one
// stdio client at a time.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	limit := g.o.maxMessage
	r := newLineLimiter(in, limit, func(id json.RawMessage, size int64) {
		g.log.Warn("mcpfleet: gateway: refused a message over the size limit", "size", size, "limit", limit)
		_, _ = w.Write(append(tooLargeResponse(id, size, limit), '\n'))
	})
	workers := g.o.maxInFlight + 8 // a call over the limit is refused at once, not queued
	if g.o.maxInFlight <= 0 {
		workers = 256
	}
	s := server.NewStdioServer(g.srv)
	server.WithWorkerPoolSize(workers)(s)
	server.WithErrorLogger(log.New(slogWriter{g.log}, "", 0))(s)
	return s.Listen(ctx, r, w)
}

// lockedWriter makes each Write whole: mcp-go writes a message with one
// Write, and so does the limiter's refusal.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// slogWriter turns mcp-go's log lines into Debug records.
type slogWriter struct{ l *slog.Logger }

func (s slogWriter) Write(p []byte) (int, error) {
	s.l.Debug("mcpfleet: gateway: mcp-go: " + strings.TrimSpace(string(p)))
	return len(p), nil
}
