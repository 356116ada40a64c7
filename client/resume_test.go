package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// The target, against the TypeScript SDK's own resumable server
// (simpleStreamableHttp, from the pinned @modelcontextprotocol/sdk 1.32.2,
// protocol 2025-11-25, with its in-memory event store) behind a TCP proxy:
// a 3-second call (start-notification-stream: three log messages a second
// apart) whose answer stream is cut by a network fault after its first
// event (the server's priming event, which carries an event ID) returns its
// result. The cut also takes the notification stream, so the Manager
// replaces the runtime meanwhile; the call finishes on the old one, within
// the drain timeout. Stats count it OK, and one resumption.
func TestResumeTypeScriptCutStream(t *testing.T) {
	node, script := npmtest.File(t, "@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js")
	srv := httpserver.StartNode(t, node, script, "listening on port")
	u, err := url.Parse(srv.URL("/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultinject.StartProxy(t, u.Host)
	m := newTestManager(t, WithTimeouts(Timeouts{Drain: DefaultDrainTimeout}))
	rec := record(m)
	mustAdd(t, m, "ts", ServerSpec{HTTP: &mcphttp.Spec{URL: "http://" + proxy.Addr() + "/mcp"}})
	mustWait(t, m, "ts", lifecycle.Connected)
	ctx := testCtx(t)

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	began := time.Now()
	go func() {
		res, err := m.CallTool(ctx, "ts", "start-notification-stream", map[string]any{"interval": 1000, "count": 3})
		done <- result{res, err}
	}()
	// The second log message comes a second after the tool began, which
	// was after the server wrote the priming event on the answer stream.
	rec.wait(t, func(e Event) bool {
		return e.Kind == EventLog && strings.Contains(fmt.Sprint(e.Log.Data), "#2")
	})
	if n := proxy.Cut(); n == 0 {
		t.Fatal("the proxy had no connection to cut")
	}
	var got result
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatalf("the call did not end\n%s", srv.Output())
	}
	if got.err != nil {
		t.Fatalf("call: %v\n%s", got.err, srv.Output())
	}
	if !strings.Contains(text(got.res), "Started sending periodic notifications") {
		t.Fatalf("call answered %q", text(got.res))
	}
	t.Logf("the call took %v", time.Since(began))
	st := m.Stats().Servers[0]
	if st.Resumed != 1 || st.Calls[OutcomeOK] != 1 || st.Calls[OutcomeUnknown] != 0 {
		t.Fatalf("stats: resumed %d, ok %d, unknown %d; want 1, 1, 0", st.Resumed, st.Calls[OutcomeOK], st.Calls[OutcomeUnknown])
	}
	// The runtime the cut took is replaced, and the next call goes through.
	mustWait(t, m, "ts", lifecycle.Connected)
	if _, err := m.CallTool(ctx, "ts", "greet", map[string]any{"name": "again"}); err != nil {
		t.Fatalf("call after the cut: %v", err)
	}
}

// modernServer is mcp-go's server speaking 2026-07-28 only, behind a
// proxy, with two tools that send a progress notification (so that the
// answer is an event stream) and wait for the test: look, read-only, and
// touch, which declares nothing. Each waits only on its first run.
type modernServer struct {
	proxy   *faultinject.Proxy
	started chan string   // the tool's name, once its notification went out
	release chan struct{} // closed by the test
	runs    [2]atomic.Int64
}

func startModernServer(t *testing.T) *modernServer {
	t.Helper()
	ms := &modernServer{started: make(chan string, 4), release: make(chan struct{})}
	s := server.NewMCPServer("modern", "1.0.0")
	for i, tool := range []mcp.Tool{
		mcp.NewTool("look", mcp.WithReadOnlyHintAnnotation(true)),
		mcp.NewTool("touch", mcp.WithReadOnlyHintAnnotation(false), mcp.WithIdempotentHintAnnotation(false)),
	} {
		s.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if ms.runs[i].Add(1) == 1 {
				_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
					map[string]any{"progressToken": "t", "progress": 1})
				ms.started <- tool.Name
				<-ms.release
			}
			return mcp.NewToolResultText(tool.Name + " done"), nil
		})
	}
	streamable := server.NewStreamableHTTPServer(s,
		server.WithEventStore(server.NewInMemoryEventStore()),
		server.WithStreamableHTTPProtocolVersions(mcp.LATEST_PROTOCOL_VERSION))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: streamable, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(ln)
	}()
	ms.proxy = faultinject.StartProxy(t, ln.Addr().String())
	t.Cleanup(func() {
		select {
		case <-ms.release:
		default:
			close(ms.release)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		_ = hs.Close()
		<-served
		// A stream opened between Shutdown and Close started a session's
		// listening pump (mcp-go keeps one per session with an event
		// store) that only the session's end stops.
		streamable.CloseSessions(context.Background())
	})
	return ms
}

// On 2026-07-28 there is no resumption: a call whose answer stream is cut
// is sent again, with a new id, only if the replay rule allows it (look,
// read-only: it ran twice and answered); otherwise its outcome is unknown
// (touch: it ran once). Nothing counts as resumed.
func TestResumeModernReplaysOnlyReplayable(t *testing.T) {
	ms := startModernServer(t)
	m := newTestManager(t)
	mustAdd(t, m, "modern", ServerSpec{HTTP: &mcphttp.Spec{URL: "http://" + ms.proxy.Addr() + "/mcp"}})
	mustWait(t, m, "modern", lifecycle.Connected)
	ctx := testCtx(t)

	results := make(chan error, 2)
	for _, tool := range []string{"look", "touch"} {
		go func() {
			res, err := m.CallTool(ctx, "modern", tool, nil)
			if err == nil && text(res) != tool+" done" {
				err = fmt.Errorf("%s answered %q", tool, text(res))
			}
			results <- err
		}()
	}
	for range 2 {
		select {
		case <-ms.started:
		case <-ctx.Done():
			t.Fatal("the tools did not start")
		}
	}
	ms.proxy.Cut()
	close(ms.release)
	var unknown, ok int
	for range 2 {
		err := <-results
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrOutcomeUnknown):
			unknown++
		default:
			t.Errorf("call: %v", err)
		}
	}
	if ok != 1 || unknown != 1 {
		t.Fatalf("%d answered, %d unknown; want 1 and 1", ok, unknown)
	}
	if look, touch := ms.runs[0].Load(), ms.runs[1].Load(); look != 2 || touch != 1 {
		t.Fatalf("look ran %d times, touch %d; want 2 and 1", look, touch)
	}
	st := m.Stats().Servers[0]
	if st.Resumed != 0 || st.Retries != 1 {
		t.Fatalf("stats: resumed %d, retries %d; want 0 and 1", st.Resumed, st.Retries)
	}
}
