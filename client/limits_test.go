package client

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// An answer over the server's message limit fails that call with
// ErrMessageTooLarge, naming the server, the size and the limit; the
// runtime stays (same generation, no reconnect) and the next call works.
// A host's transport option that says otherwise does not override the
// limit: what Limits decides is applied after the host's options.
func TestCallAnswerOverTheSizeLimit(t *testing.T) {
	const limit = 1 << 20
	m := New(WithStdioOptions(stdio.WithMaxMessageBytes(1 << 30)))
	defer m.Close()
	spec := faultSpec(faultserver.ModeNormal)
	spec.Limits = Limits{MaxMessageBytes: limit}
	mustAdd(t, m, "s", spec)
	mustWait(t, m, "s", lifecycle.Connected)
	before, _ := m.Status("s")

	_, err := m.CallTool(testCtx(t), "s", "big", map[string]any{"bytes": 4 * limit})
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("call = %v, want ErrMessageTooLarge", err)
	}
	var se *ServerError
	var tl *MessageTooLargeError
	if !errors.As(err, &se) || se.Server != "s" || !errors.As(err, &tl) || tl.Size <= 4*limit || tl.Limit != limit {
		t.Fatalf("error %q: want the server, the size and the limit", err)
	}
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrServerError) {
		t.Fatalf("error %q is classified as something else too", err)
	}
	res, err := m.CallTool(testCtx(t), "s", "echo", map[string]any{"text": "still here"})
	if err != nil || res.IsError {
		t.Fatalf("next call: %v", err)
	}
	after, _ := m.Status("s")
	if after.State != lifecycle.Connected || after.Generation != before.Generation {
		t.Fatalf("status after: %v generation %d, before generation %d", after.State, after.Generation, before.Generation)
	}
}

// manyTools is an mcp-go server offering n tools.
func manyTools(n int, opts ...server.ServerOption) *server.MCPServer {
	srv := server.NewMCPServer("many", "1.0", append([]server.ServerOption{server.WithToolCapabilities(true)}, opts...)...)
	tools := make([]server.ServerTool, n)
	for i := range tools {
		tools[i] = server.ServerTool{Tool: mcp.NewTool("t" + strconv.Itoa(i)),
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			}}
	}
	srv.AddTools(tools...)
	return srv
}

// A server with 100,000 tools (100 pages of 1,000) does not connect: its
// dial fails with ErrCatalogTooLarge naming the limit, after reading only
// the pages up to the limit, and nothing of it is published.
func TestCatalogOverTheItemLimit(t *testing.T) {
	page := manyTools(1000).ListTools()
	tools := make([]mcp.Tool, 0, len(page))
	for _, st := range page {
		tools = append(tools, st.Tool)
	}
	var served atomic.Int64
	hooks := &server.Hooks{}
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, r *mcp.ListToolsResult) {
		n := served.Add(1)
		r.Tools = tools // the same 1,000 on every page: the catalog counts them all
		if n < 100 {
			r.NextCursor = mcp.Cursor(base64.StdEncoding.EncodeToString([]byte("t" + strconv.FormatInt(n, 10))))
		}
	})
	m := New()
	defer m.Close()
	rec := record(m)
	mustAdd(t, m, "huge", ServerSpec{Dialer: InProcess(manyTools(1, server.WithHooks(hooks)))})
	e := rec.wait(t, func(e Event) bool { return e.Server == "huge" && e.Err != nil })
	if !errors.Is(e.Err, ErrCatalogTooLarge) || !strings.Contains(e.Err.Error(), "more than 10000") {
		t.Fatalf("dial error %v: want ErrCatalogTooLarge naming the limit", e.Err)
	}
	if n := served.Load(); n > 11*2 { // 11 pages a dial; a second dial may have begun
		t.Fatalf("%d pages were fetched; the limit is reached at the 11th", n)
	}
	if st, _ := m.Status("huge"); st.State == lifecycle.Connected || m.View().NumTools() != 0 {
		t.Fatalf("state %v, %d tools published", st.State, m.View().NumTools())
	}
}

// A server that pages without end is stopped at the page limit.
func TestCatalogThatPagesWithoutEnd(t *testing.T) {
	hooks := &server.Hooks{}
	var page atomic.Int64
	hooks.AddAfterListTools(func(_ context.Context, _ any, _ *mcp.ListToolsRequest, r *mcp.ListToolsResult) {
		// Always one more page, under a cursor mcp-go's server can decode.
		r.NextCursor = mcp.Cursor(base64.StdEncoding.EncodeToString([]byte("t" + strconv.FormatInt(page.Add(1), 10))))
	})
	m := New(WithLimits(Limits{MaxCatalogPages: 5}))
	defer m.Close()
	rec := record(m)
	mustAdd(t, m, "endless", ServerSpec{Dialer: InProcess(manyTools(3, server.WithHooks(hooks)))})
	e := rec.wait(t, func(e Event) bool { return e.Server == "endless" && e.Err != nil })
	if !errors.Is(e.Err, ErrCatalogTooLarge) || !strings.Contains(e.Err.Error(), "more than 5 pages") {
		t.Fatalf("dial error %v: want ErrCatalogTooLarge at 5 pages", e.Err)
	}
	if n := page.Load(); n > 5 {
		t.Fatalf("%d pages were fetched, limit 5", n)
	}
}

// A refresh that brings a catalog over the limit is a catalog error: the
// last good catalog stays published, and the runtime stays.
func TestCatalogRefreshOverTheLimitKeepsTheLastGood(t *testing.T) {
	srv := manyTools(10)
	m := New(WithLimits(Limits{MaxCatalogItems: 20}))
	defer m.Close()
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: InProcess(srv)})
	mustWait(t, m, "s", lifecycle.Connected)
	var more []server.ServerTool
	for _, tool := range manyTools(25).ListTools() { // t0..t24: 15 new
		more = append(more, *tool)
	}
	srv.AddTools(more...) // one tools/list_changed
	e := rec.wait(t, func(e Event) bool { return e.Server == "s" && e.Kind == EventCatalogError })
	if !errors.Is(e.Err, ErrCatalogTooLarge) {
		t.Fatalf("catalog error %v: want ErrCatalogTooLarge", e.Err)
	}
	st, _ := m.Status("s")
	if st.State != lifecycle.Connected || st.Generation != 1 || st.Tools != 10 || !errors.Is(st.CatalogError, ErrCatalogTooLarge) {
		t.Fatalf("status %+v: want generation 1 connected with its 10 tools and the catalog error", st)
	}
}
