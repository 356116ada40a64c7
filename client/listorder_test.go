package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// lateServer is an mcp-go server of one tool, "first", that announces
// list changes, and its stateful streamable HTTP handler.
func lateServer() (*server.MCPServer, *server.StreamableHTTPServer) {
	s := server.NewMCPServer("late", "1.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("first"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("first"), nil
	})
	return s, server.NewStreamableHTTPServer(s, server.WithStateful(true))
}

// rpcMethod returns the JSON-RPC method a POST carries, and leaves its body
// to be read again; "" for any other request.
func rpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// A tool the server adds right after it answered the connect's tools/list
// is announced, and the Manager lists it: the notification stream opens
// before the lists are fetched. With the lists first, a 2026-07-28 server
// added the tool while no stream listened, its list_changed went nowhere,
// and the tool stayed unseen until the next change (a gateway's client
// waited for it to the end of the test, once in three CI runs).
func TestToolAddedRightAfterTheConnectListIsSeen(t *testing.T) {
	eachHTTPProtocol(t, func(t *testing.T, opts []Option) {
		s, inner := lateServer()
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := rpcMethod(r)
			inner.ServeHTTP(w, r)
			if method == string(mcp.MethodToolsList) {
				once.Do(func() { s.AddTool(mcp.NewTool("late"), nil) })
			}
		}))
		t.Cleanup(srv.Close) // after the manager's Close: it waits for open streams
		m := newTestManager(t, opts...)
		rec := record(m)
		mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
		rec.awaitPublished(t, m, "s", "s__late", "the tool added after the connect's list")
	})
}

// A notification stream that opens only after the connect stopped waiting
// for it (the server was slow to answer it) is told as a reopening: the
// lists are fetched again, and a tool added while no stream listened is
// seen. Without it, the tool stayed unseen until the next change (this
// file's first test failed so on a loaded machine, past the 5 s the
// connect waits).
func TestStreamOpenedLateRefetchesTheLists(t *testing.T) {
	eachHTTPProtocol(t, func(t *testing.T, opts []Option) {
		s, inner := lateServer()
		gate := make(chan struct{})
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := rpcMethod(r)
			if r.Method == http.MethodGet || method == "subscriptions/listen" {
				// The stream, held until the connect listed without it.
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
			}
			inner.ServeHTTP(w, r)
			if method == string(mcp.MethodToolsList) {
				// The connect lists only once it stopped waiting for the
				// stream: the tool comes while none listens.
				once.Do(func() {
					s.AddTool(mcp.NewTool("late"), nil)
					close(gate)
				})
			}
		}))
		t.Cleanup(srv.Close)
		m := newTestManager(t, append(opts, WithHTTPOptions(mcphttp.WithStreamOpenTimeout(time.Millisecond)))...)
		rec := record(m)
		mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
		rec.awaitPublished(t, m, "s", "s__late", "the tool added before the stream opened")
	})
}
