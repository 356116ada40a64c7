package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// wireLog records the JSON-RPC messages an HTTP server received.
type wireLog struct {
	mu   sync.Mutex
	msgs []wireMsg
	more chan struct{}
}

type wireMsg struct {
	Method string `json:"method"`
	ID     any    `json:"id"`
	Params struct {
		RequestID any    `json:"requestId"`
		Reason    string `json:"reason"`
	} `json:"params"`
}

func (w *wireLog) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m wireMsg
			if json.Unmarshal(body, &m) == nil && m.Method != "" {
				w.mu.Lock()
				w.msgs = append(w.msgs, m)
				close(w.more)
				w.more = make(chan struct{})
				w.mu.Unlock()
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// wait returns the first message that pred accepts.
func (w *wireLog) wait(t *testing.T, what string, pred func(wireMsg) bool) wireMsg {
	t.Helper()
	ctx := testCtx(t)
	seen := 0
	for {
		w.mu.Lock()
		msgs, more := w.msgs, w.more
		w.mu.Unlock()
		for ; seen < len(msgs); seen++ {
			if pred(msgs[seen]) {
				return msgs[seen]
			}
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("the server never received %s; it received %+v", what, msgs)
		}
	}
}

// TestCancelOverStreamableHTTP calls a tool of an mcp-go streamable HTTP
// server that blocks until cancelled, on both protocol generations, and
// cancels the call's context once the tool runs: the call returns the
// context's error at once, and the server receives notifications/cancelled
// naming the tools/call request's id (mcp-go itself sends none over HTTP).
// The tool's context ends too.
func TestCancelOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		stateful bool
		opts     []mcphttp.Option
	}{
		{name: "2026-07-28"},
		{name: "legacy-stateful", stateful: true, opts: []mcphttp.Option{mcphttp.WithLegacyProtocol()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			entered := make(chan struct{}, 1)
			sawCancel := make(chan struct{})
			s := server.NewMCPServer("cancel-test", "1.0", server.WithToolCapabilities(true))
			s.AddTool(mcp.NewTool("block"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				entered <- struct{}{}
				<-ctx.Done()
				close(sawCancel)
				return nil, ctx.Err()
			})
			var sopts []server.StreamableHTTPOption
			if tt.stateful {
				sopts = append(sopts, server.WithStateful(true))
			}
			streamable := server.NewStreamableHTTPServer(s, sopts...)
			wire := &wireLog{more: make(chan struct{})}
			srv := httptest.NewServer(wire.middleware(streamable))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = streamable.Shutdown(ctx)
				srv.Close()
			})

			m := newTestManager(t, WithHTTPOptions(tt.opts...))
			mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL + "/mcp"}})
			mustWait(t, m, "s", lifecycle.Connected)
			st, _ := m.Status("s")
			t.Logf("protocol %s", st.Protocol)

			ctx, cancel := context.WithCancel(testCtx(t))
			errc := make(chan error, 1)
			go func() {
				_, err := m.CallTool(ctx, "s", "block", nil)
				errc <- err
			}()
			select {
			case <-entered:
			case err := <-errc:
				t.Fatalf("block returned before it was cancelled: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("the tool never ran")
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) { // bounded by the call's context
				t.Fatalf("cancelled call: %v, want context.Canceled", err)
			}
			call := wire.wait(t, "the tools/call", func(m wireMsg) bool { return m.Method == string(mcp.MethodToolsCall) })
			note := wire.wait(t, "notifications/cancelled", func(m wireMsg) bool {
				return m.Method == string(mcp.MethodNotificationCancelled)
			})
			if fmt.Sprint(note.Params.RequestID) != fmt.Sprint(call.ID) || note.Params.Reason == "" {
				t.Fatalf("notifications/cancelled for request %v (reason %q), want %v", note.Params.RequestID, note.Params.Reason, call.ID)
			}
			select {
			case <-sawCancel:
			case <-time.After(10 * time.Second):
				t.Fatal("the tool's context never ended")
			}
		})
	}
}
