package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
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

// TestCancelOverStdio calls the fault server's sleep tool for a minute and
// cancels the call's context once the server runs it: the call returns the
// context's error at once, and the same child writes the fault server's
// "sleep cancelled" line while it keeps serving. Over stdio the tool's
// context ends only on notifications/cancelled for the call (or when the
// server shuts down, which it does not here: the runtime is the same one
// afterwards, and answers), so the line proves the notification was sent.
func TestCancelOverStdio(t *testing.T) {
	t.Parallel()
	w := newStderrWatch()
	m := newTestManager(t, WithStdioOptions(stdio.WithStderrLogger(slog.New(w), slog.LevelInfo)))
	mustAdd(t, m, "s", faultSpec(faultserver.ModeNormal))
	mustWait(t, m, "s", lifecycle.Connected)
	pid, gen := childPID(t, m, "s")
	st, _ := m.Status("s")
	t.Logf("protocol %s", st.Protocol)

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "s", "sleep", map[string]any{"ms": time.Minute.Milliseconds()})
		errc <- err
	}()
	if line := w.wait(t, faultserver.SleepLine); line.pid != pid {
		t.Fatalf("the sleep runs in pid %d, the manager's child is %d", line.pid, pid)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	// Bounded well below the minute of the sleep.
	deadline := time.After(10 * time.Second)
	var line stderrLine
	for found := false; !found; {
		w.mu.Lock()
		lines, more := w.lines, w.more
		w.mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l.line, faultserver.SleepCancelledLine) {
				line, found = l, true
			}
		}
		if found {
			break
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatal("the server never saw the call cancelled: no notifications/cancelled")
		}
	}
	if line.pid != pid {
		t.Fatalf("%q from pid %d, the manager's child is %d", line.line, line.pid, pid)
	}
	// The child that saw the cancel is still the live runtime: its request
	// context did not end because it shut down.
	res, err := m.CallTool(testCtx(t), "s", "pid", nil)
	if err != nil || text(res) != strconv.Itoa(pid) {
		t.Fatalf("pid after the cancel = %q, %v, want %d", text(res), err, pid)
	}
	if pid2, gen2 := childPID(t, m, "s"); pid2 != pid || gen2 != gen {
		t.Fatalf("runtime changed during the test: pid %d gen %d, was pid %d gen %d", pid2, gen2, pid, gen)
	}
}

// TestCancelOverSSE is TestCancelOverStreamableHTTP for mcp-go's legacy
// HTTP+SSE server. That server runs each request under a context detached
// from its POST, ended only by notifications/cancelled for it (or by the
// session's end): the tool's context ending, with the session still
// serving, shows the notification arrived, and the wire log shows it names
// the tools/call's id.
func TestCancelOverSSE(t *testing.T) {
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
	httpserver.AddMCPGoTools(s)
	sse := server.NewSSEServer(s)
	wire := &wireLog{more: make(chan struct{})}
	srv := httptest.NewServer(wire.middleware(sse))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sse.Shutdown(ctx)
		srv.Close()
	})

	m := newTestManager(t)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL + "/sse", Kind: mcphttp.SSE}})
	mustWait(t, m, "s", lifecycle.Connected)
	st, _ := m.Status("s")
	t.Logf("protocol %s", st.Protocol)

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
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
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	select {
	case <-sawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's context never ended: no notifications/cancelled")
	}
	call := wire.wait(t, "the tools/call", func(m wireMsg) bool { return m.Method == string(mcp.MethodToolsCall) })
	note := wire.wait(t, "notifications/cancelled", func(m wireMsg) bool {
		return m.Method == string(mcp.MethodNotificationCancelled)
	})
	if fmt.Sprint(note.Params.RequestID) != fmt.Sprint(call.ID) || note.Params.Reason == "" {
		t.Fatalf("notifications/cancelled for request %v (reason %q), want %v", note.Params.RequestID, note.Params.Reason, call.ID)
	}
	// The session that saw the cancel still serves: its end did not cancel
	// the tool.
	res, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"message": "still here"})
	if err != nil || !strings.Contains(text(res), "still here") {
		t.Fatalf("echo after the cancel = %q, %v", text(res), err)
	}
	if st2, _ := m.Status("s"); st2.Generation != st.Generation {
		t.Fatalf("generation %d after the cancel, was %d", st2.Generation, st.Generation)
	}
}
