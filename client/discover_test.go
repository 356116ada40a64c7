package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// Some older servers answer every method they do not know with an empty
// result, server/discover included; mcp-go then believes they speak
// 2026-07-28 and never runs the initialize handshake. The Manager sees the
// discover result named no server and dials again on the older handshake.
func TestEmptyDiscoverResultFallsBackToInitialize(t *testing.T) {
	s := server.NewMCPServer("old", "1.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("old says hi"), nil
	})
	mcpHandler := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodServerDiscover) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{}}`))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the manager's Close: it waits for open streams

	m := newTestManager(t)
	mustAdd(t, m, "old", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
	mustWait(t, m, "old", lifecycle.Connected)
	st, _ := m.Status("old")
	if mcp.IsModernProtocol(st.Protocol) || st.ServerInfo.Name != "old" || st.Tools != 1 {
		t.Fatalf("status %+v: want the older protocol, server info and the tool", st)
	}
	res, err := m.Call(testCtx(t), "old__echo", nil)
	if err != nil || text(res) != "old says hi" {
		t.Fatalf("call: %v %v", text(res), err)
	}
}
