package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// paramHeaderTool is a tool whose input schema marks its region argument
// with x-mcp-header (SEP-2243): on 2026-07-28 over HTTP a client mirrors
// that argument into an Mcp-Param-Region header, for gateways to route on.
func paramHeaderTool() mcp.Tool {
	return mcp.NewToolWithRawSchema("locate", "finds a thing in a region", json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"what":{"type":"string"}}}`))
}

// Over HTTP the Manager lists tools through mcp-go's Client, which keeps
// the definitions for the mirroring: a call of a tool with an x-mcp-header
// argument carries the header, on the first runtime and on the next one,
// and a refresh of the list keeps it. Listed raw (as over stdio), the
// header would be missing.
func TestParamHeadersMirroredOverHTTP(t *testing.T) {
	s := server.NewMCPServer("headers", "1.0", server.WithToolCapabilities(true))
	s.AddTool(paramHeaderTool(), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("region", "")), nil
	})
	var mu sync.Mutex
	var seen []string // the Mcp-Param-Region of every tools/call
	mcpHandler := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodToolsCall) {
			mu.Lock()
			seen = append(seen, r.Header.Get("Mcp-Param-Region"))
			mu.Unlock()
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m := newTestManager(t)
	rec := record(m)
	mustAdd(t, m, "headers", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL}})
	mustWait(t, m, "headers", lifecycle.Connected)
	call := func(region string) {
		t.Helper()
		res, err := m.CallTool(testCtx(t), "headers", "locate", map[string]any{"region": region, "what": "x"})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	call("eu-west")
	// A list refresh (a tool added: list_changed) lists the tools again.
	s.AddTool(mcp.NewTool("other"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("other"), nil
	})
	rec.wait(t, func(e Event) bool {
		_, ok := m.View().Tool("headers__other")
		return e.Kind == EventCatalog && ok
	})
	call("us-east")
	if err := m.Reconnect(testCtx(t), "headers"); err != nil {
		t.Fatal(err)
	}
	mustWait(t, m, "headers", lifecycle.Connected)
	call("ap-south")
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"eu-west", "us-east", "ap-south"}; !slices.Equal(seen, want) {
		t.Fatalf("Mcp-Param-Region of the calls = %q, want %q", seen, want)
	}
}

// Over stdio and in process the Manager lists tools itself (Manager.
// listTools), past mcp-go's Client: the request must still be the one
// mcp-go would send, with the protocol's per-request _meta on 2026-07-28,
// every page asked with the cursor of the one before, and the tools come
// out as mcp-go would give them.
func TestToolsListedRawInProcess(t *testing.T) {
	s := server.NewMCPServer("paged", "1.0", server.WithToolCapabilities(true), server.WithPaginationLimit(2))
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("t%d", i)
		want = append(want, "paged__"+name)
		s.AddTool(mcp.NewTool(name, mcp.WithDescription("tool "+name)), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name), nil
		})
	}
	s.AddTool(paramHeaderTool(), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("region", "")), nil
	})
	want = append(want, "paged__locate")
	type listed struct {
		cursor  mcp.Cursor
		version any
		client  any
	}
	var mu sync.Mutex
	var lists []listed
	hooks := &server.Hooks{}
	hooks.AddBeforeListTools(func(ctx context.Context, id any, req *mcp.ListToolsRequest) {
		l := listed{cursor: req.Params.Cursor}
		if req.Params.Meta != nil {
			l.version = req.Params.Meta.AdditionalFields[mcp.MetaKeyProtocolVersion]
			l.client = req.Params.Meta.AdditionalFields[mcp.MetaKeyClientInfo]
		}
		mu.Lock()
		lists = append(lists, l)
		mu.Unlock()
	})
	server.WithHooks(hooks)(s)
	m := newTestManager(t)
	rec := &recordingDialer{dial: InProcess(s)}
	mustAdd(t, m, "paged", ServerSpec{Dialer: rec.dialer})
	mustWait(t, m, "paged", lifecycle.Connected)
	var got []string
	for tool := range m.View().Tools() {
		got = append(got, tool.Qualified())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lists) < 3 {
		t.Fatalf("%d tools/list requests, want a page of 2 for each 2 of the 6 tools: %+v", len(lists), lists)
	}
	for i, l := range lists {
		if (i == 0) != (l.cursor == "") {
			t.Errorf("page %d asked with cursor %q", i+1, l.cursor)
		}
		if l.version != mcp.LATEST_PROTOCOL_VERSION || l.client == nil {
			t.Errorf("page %d: _meta protocol version %v, client info %v: want %s and the Manager's", i+1, l.version, l.client, mcp.LATEST_PROTOCOL_VERSION)
		}
	}
	res, err := m.CallTool(testCtx(t), "paged", "locate", map[string]any{"region": "eu-west"})
	if err != nil || res.IsError || text(res) != "eu-west" {
		t.Fatalf("call: %v %+v", err, res)
	}
	// Listed raw, mcp-go holds no definition to mirror the argument
	// from: listed through mcp-go, the call would carry the header, which
	// in process goes nowhere.
	if h := rec.lastHeader(string(mcp.MethodToolsCall)); h.Get("Mcp-Param-Region") != "" {
		t.Fatalf("an in-process tools/call carries Mcp-Param-Region %q: the tools were listed through mcp-go", h.Get("Mcp-Param-Region"))
	}
}

// A raw request whose context ends before its answer is cancelled as
// mcp-go cancels its own off HTTP: a notifications/cancelled naming it
// follows, unless the request asked for a task (tasks/cancel ends a
// task). The transport here holds every request until its context ends,
// as a server that hangs in it would.
func TestRawRequestCancelled(t *testing.T) {
	for _, task := range []bool{false, true} {
		t.Run(fmt.Sprintf("task=%v", task), func(t *testing.T) {
			m := newTestManager(t)
			tr := &holdingTransport{sent: make(chan mcptransport.JSONRPCRequest, 1), notes: make(chan mcp.JSONRPCNotification, 1)}
			c := mcpclient.NewClient(tr)
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			go func() {
				select {
				case <-tr.sent:
					cancel()
				case <-ctx.Done():
				}
			}()
			params := map[string]any{}
			if task {
				params["task"] = map[string]any{"ttl": 60000}
			}
			_, err := m.rawCall(ctx, nil, c, string(mcp.MethodToolsList), params, "", false)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			m.Close() // waits for the notice's goroutine, if one was started
			select {
			case n := <-tr.notes:
				if task {
					t.Fatalf("a task-augmented request was cancelled with %s", n.Method)
				}
				if n.Method != string(mcp.MethodNotificationCancelled) {
					t.Fatalf("notification %s, want %s", n.Method, mcp.MethodNotificationCancelled)
				}
				if id, want := fmt.Sprint(n.Params.AdditionalFields["requestId"]), tr.last.ID.String(); id != want {
					t.Fatalf("cancelled request %s, want %s", id, want)
				}
			default:
				if !task {
					t.Fatal("no notifications/cancelled for a request given up")
				}
			}
		})
	}
}

// holdingTransport holds each request until its context ends, and passes
// on the request to sent and every notification to notes.
type holdingTransport struct {
	sent  chan mcptransport.JSONRPCRequest
	notes chan mcp.JSONRPCNotification
	last  mcptransport.JSONRPCRequest // set before sent is told
}

func (t *holdingTransport) Start(context.Context) error { return nil }
func (t *holdingTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	t.last = req
	t.sent <- req
	<-ctx.Done()
	return nil, ctx.Err()
}
func (t *holdingTransport) SendNotification(_ context.Context, n mcp.JSONRPCNotification) error {
	t.notes <- n
	return nil
}
func (t *holdingTransport) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}
func (t *holdingTransport) Close() error                                         { return nil }
func (t *holdingTransport) GetSessionId() string                                 { return "" }

// recordingDialer wraps a Dialer's transports to record the requests they
// send.
type recordingDialer struct {
	dial Dialer

	mu   sync.Mutex
	reqs []mcptransport.JSONRPCRequest
}

func (d *recordingDialer) dialer(ctx context.Context) (transport.Conn, error) {
	c, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{Conn: c, d: d}, nil
}

func (d *recordingDialer) last(method string) (mcptransport.JSONRPCRequest, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.reqs) - 1; i >= 0; i-- {
		if d.reqs[i].Method == method {
			return d.reqs[i], true
		}
	}
	return mcptransport.JSONRPCRequest{}, false
}

func (d *recordingDialer) lastHeader(method string) http.Header {
	r, _ := d.last(method)
	return r.Header
}

type recordingConn struct {
	transport.Conn
	d *recordingDialer
}

func (c recordingConn) Transport() mcptransport.Interface {
	return recordingTransport{Interface: c.Conn.Transport(), d: c.d}
}

type recordingTransport struct {
	mcptransport.Interface
	d *recordingDialer
}

func (t recordingTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	t.d.mu.Lock()
	t.d.reqs = append(t.d.reqs, req)
	t.d.mu.Unlock()
	return t.Interface.SendRequest(ctx, req)
}
