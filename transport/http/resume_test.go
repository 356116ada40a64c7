package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/transport"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// resumeServer is mcp-go's streamable HTTP server with an event store (so
// that it can resume a broken answer stream, on protocol 2025-11-25 and
// older) behind a fault proxy. Its tool work asks the client for input
// (an elicitation: a request on the POST's own stream, the first event of
// the answer), then waits for the test's release, ignoring its context as
// work already under way does when the client's connection breaks, and
// answers "done".
type resumeServer struct {
	proxy    *faultinject.Proxy
	asked    chan struct{} // receives once the elicitation was answered
	release  chan struct{} // closed by the test: work answers
	released atomic.Bool
	runs     atomic.Int64 // runs of work
}

func startResumeServer(t testing.TB, versions ...string) *resumeServer {
	t.Helper()
	rs := &resumeServer{asked: make(chan struct{}, 4), release: make(chan struct{})}
	s := server.NewMCPServer("resume", "1.0.0", server.WithElicitation())
	s.AddTool(mcp.NewTool("work", mcp.WithReadOnlyHintAnnotation(false)),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rs.runs.Add(1)
			req := mcp.ElicitationRequest{}
			req.Params.Message = "go on?"
			req.Params.RequestedSchema = map[string]any{"type": "object"}
			if _, err := s.RequestElicitation(ctx, req); err != nil {
				return mcp.NewToolResultError("elicitation: " + err.Error()), nil
			}
			rs.asked <- struct{}{}
			<-rs.release
			return mcp.NewToolResultText("done"), nil
		})
	opts := []server.StreamableHTTPOption{server.WithEventStore(server.NewInMemoryEventStore())}
	if len(versions) > 0 {
		opts = append(opts, server.WithStreamableHTTPProtocolVersions(versions...))
	}
	streamable := server.NewStreamableHTTPServer(s, opts...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: streamable, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	rs.proxy = faultinject.StartProxy(t, ln.Addr().String())
	t.Cleanup(func() {
		rs.open()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		_ = srv.Close()
		<-served
		// A stream opened between Shutdown and Close started a session's
		// listening pump (mcp-go keeps one per session with an event
		// store) that only the session's end stops.
		streamable.CloseSessions(context.Background())
	})
	return rs
}

func (rs *resumeServer) url() string { return "http://" + rs.proxy.Addr() + "/mcp" }

func (rs *resumeServer) open() {
	if rs.released.CompareAndSwap(false, true) {
		close(rs.release)
	}
}

// connectElicit is connect with a client that accepts every elicitation.
func connectElicit(ctx context.Context, t *testing.T, url string, opts ...mcphttp.Option) (*mcphttp.Conn, *mcpclient.Client) {
	t.Helper()
	opts = append([]mcphttp.Option{mcphttp.WithLogger(testLogger(t)), mcphttp.WithLegacyProtocol()}, opts...)
	conn, err := mcphttp.Dial(ctx, mcphttp.Spec{URL: url}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx)
	})
	cl := mcpclient.NewClient(conn.Transport(), mcpclient.WithElicitationHandler(acceptAll{}))
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpfleet-test", Version: "0"}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ready(ctx, cl); err != nil {
		t.Fatal(err)
	}
	return conn, cl
}

type acceptAll struct{}

func (acceptAll) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{}}}, nil
}

// A call whose answer stream is cut by a network fault after its first
// event (the server's elicitation request, with an event ID) ends with its
// answer: the Conn resumes the stream with a GET carrying Last-Event-ID,
// and the server, which went on working, delivers the rest there. The tool
// ran once, and the Conn reported one resumption.
func TestResumeBrokenAnswerStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rs := startResumeServer(t)
	conn, cl := connectElicit(ctx, t, rs.url())
	var resumed atomic.Int64
	var r transport.Resumer = conn
	r.OnResume(func() { resumed.Add(1) })

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "work"
		res, err := cl.CallTool(ctx, req)
		done <- result{res, err}
	}()
	select {
	case <-rs.asked:
	case <-ctx.Done():
		t.Fatal("the tool never got its elicitation answered")
	}
	if n := rs.proxy.Cut(); n == 0 {
		t.Fatal("the proxy had no connection to cut")
	}
	rs.open()
	var got result
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("the call did not end")
	}
	if got.err != nil {
		t.Fatalf("call: %v", got.err)
	}
	if text := textOf(got.res); text != "done" {
		t.Fatalf("call answered %q, want done", text)
	}
	if n := resumed.Load(); n != 1 {
		t.Fatalf("resumed %d times, want 1", n)
	}
	if n := rs.runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

// With resumption turned off, the same cut fails the call, as mcp-go alone
// does: the outcome is unknown.
func TestResumeOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	rs := startResumeServer(t)
	conn, cl := connectElicit(ctx, t, rs.url(), mcphttp.WithResumeAttempts(0))
	conn.OnResume(func() { t.Error("resumed with resumption off") })
	done := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "work"
		_, err := cl.CallTool(ctx, req)
		done <- err
	}()
	select {
	case <-rs.asked:
	case <-ctx.Done():
		t.Fatal("the tool never got its elicitation answered")
	}
	rs.proxy.Cut()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the call succeeded with its stream cut and no resumption")
		}
		if mcphttp.IsNotSent(err) {
			t.Fatalf("a call cut after it ran is marked not sent: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the call did not end")
	}
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

// scriptedResume is a hand-written 2025-11-25 server whose answer to
// tools/call breaks in the middle of its second event (the answer), after
// a first event with ID 1 and a retry field; the GET with Last-Event-ID
// gets the answer again, whole. It checks what the byte-level work of the
// resumption must get right: the half event is handed to mcp-go once and
// whole, and the GET names the last whole event.
type scriptedResume struct {
	// polling: the server ends the answer stream itself after the first
	// event, cleanly, as a server that wants the client to poll does.
	polling bool
	// conflicts is how many GETs are answered 409 first, as the
	// TypeScript SDK answers while it still holds the broken stream.
	conflicts   atomic.Int32
	lastEventID chan string // the GET's Last-Event-ID
	callID      chan string // the tools/call's JSON-RPC id, raw
}

func (sr *scriptedResume) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		id := r.Header.Get("Last-Event-ID")
		if id == "" {
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
			return
		}
		if sr.conflicts.Add(-1) >= 0 {
			http.Error(w, "Conflict: Stream already has an active connection", http.StatusConflict)
			return
		}
		sr.lastEventID <- id
		callID := <-sr.callID
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", callID)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &msg)
	switch msg.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"0"}}}`, msg.ID)
	case "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 10\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
		if sr.polling {
			sr.callID <- string(msg.ID)
			return
		}
		fmt.Fprintf(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"broken", msg.ID)
		w.(http.Flusher).Flush()
		sr.callID <- string(msg.ID)
		// Break the connection mid-event, as a network fault does.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func TestResumeHalfEvent(t *testing.T) { testScriptedResume(t, false, 0) }

// A server that answers the first GET 409 Conflict (it has not noticed the
// broken connection yet) gets another try, and the call its answer.
func TestResumeAfterConflict(t *testing.T) { testScriptedResume(t, false, 2) }

// A stream the server ends cleanly before the answer is mcp-go's to poll
// (SEP-1699: it waits the retry time and sends the GET itself); the Conn
// only passes it on, and counts no resumption.
func TestResumePollingLeftToMCPGo(t *testing.T) { testScriptedResume(t, true, 0) }

func testScriptedResume(t *testing.T, polling bool, conflicts int32) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	sr := &scriptedResume{polling: polling, lastEventID: make(chan string, 1), callID: make(chan string, 1)}
	sr.conflicts.Store(conflicts)
	srv := httptest.NewServer(sr)
	defer srv.Close()
	s := connect(ctx, t, mcphttp.Spec{URL: srv.URL + "/mcp"}, mcphttp.WithLegacyProtocol())
	var resumed atomic.Int64
	s.conn.OnResume(func() { resumed.Add(1) })
	req := mcp.CallToolRequest{}
	req.Params.Name = "work"
	res, err := s.client.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := textOf(res); got != "resumed" {
		t.Fatalf("answer %q, want the resumed one", got)
	}
	if got := <-sr.lastEventID; got != "1" {
		t.Fatalf("Last-Event-ID %q, want 1 (the last whole event)", got)
	}
	s.awaitNote(ctx, t, "notifications/message")
	want := int64(1)
	if polling {
		want = 0
	}
	if n := resumed.Load(); n != want {
		t.Fatalf("resumed %d times, want %d", n, want)
	}
}
