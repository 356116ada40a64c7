package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// notes collects the notifications a client receives, and wakes waiters.
type notes struct {
	mu   sync.Mutex
	list []mcp.JSONRPCNotification
	ch   chan struct{} // closed and replaced at each notification
}

func collect(c *mcpclient.Client) *notes {
	n := &notes{ch: make(chan struct{})}
	c.OnNotification(func(x mcp.JSONRPCNotification) {
		n.mu.Lock()
		n.list = append(n.list, x)
		close(n.ch)
		n.ch = make(chan struct{})
		n.mu.Unlock()
	})
	return n
}

// wait waits for a notification after the first after of them that
// satisfies ok, and returns how many there were then.
func (n *notes) wait(t testing.TB, after int, ok func(mcp.JSONRPCNotification) bool) int {
	t.Helper()
	ctx := testCtx(t)
	for {
		n.mu.Lock()
		for i := after; i < len(n.list); i++ {
			if ok(n.list[i]) {
				n.mu.Unlock()
				return i + 1
			}
		}
		ch := n.ch
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no such notification after %d", after)
		}
	}
}

func (n *notes) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.list)
}

func method(m mcp.MCPMethod) func(mcp.JSONRPCNotification) bool {
	return func(n mcp.JSONRPCNotification) bool { return n.Method == string(m) }
}

// listen opens a 2026-07-28 client's notification stream for the list
// changes and waits until the gateway acknowledged it.
func listen(t testing.TB, c *mcpclient.Client, n *notes, filter mcp.SubscriptionFilter) {
	t.Helper()
	before := n.count()
	stop, err := c.ListenAsync(testCtx(t), filter, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	n.wait(t, before, method(mcp.MethodNotificationSubscriptionsAcknowledged))
}

// TestListChangedReachesEverySession: a server's catalog change reaches
// every downstream session as tools/list_changed, after which the listing
// shows it: a tool added, and a server's tools gone with it.
func TestListChangedReachesEverySession(t *testing.T) {
	up := upstream.New("a")
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(up.MCPServer)}})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	modern := dial(t, url, "")
	legacy := dial(t, url, "2025-11-25")
	nm, nl := collect(modern), collect(legacy)
	listen(t, modern, nm, mcp.SubscriptionFilter{ToolsListChanged: true})

	am, al := nm.count(), nl.count()
	up.AddTool(mcp.NewTool("late"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("late"), nil
	})
	changed := method(mcp.MethodNotificationToolsListChanged)
	// The change may come in more than one notification; the listing
	// after the first shows it, or a later one follows.
	for _, x := range []struct {
		c     *mcpclient.Client
		n     *notes
		after int
	}{{modern, nm, am}, {legacy, nl, al}} {
		for !slices.Contains(toolNames(t, x.c), "a__late") {
			x.after = x.n.wait(t, x.after, changed)
		}
	}

	am, al = nm.count(), nl.count()
	if err := f.m.Disable(testCtx(t), "a"); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		c     *mcpclient.Client
		n     *notes
		after int
	}{{modern, nm, am}, {legacy, nl, al}} {
		for len(toolNames(t, x.c)) != 0 {
			x.after = x.n.wait(t, x.after, changed)
		}
	}
}

// TestProgressForwarded: a server's progress on a call reaches the client
// that made it, under the client's own progress token.
func TestProgressForwarded(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(upstream.New("a").MCPServer)}})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := dial(t, url, p.version)
			n := collect(c)
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "a__progress", map[string]any{"steps": 3}
			req.Params.Meta = &mcp.Meta{ProgressToken: "mine"}
			if _, err := c.CallTool(testCtx(t), req); err != nil {
				t.Fatal(err)
			}
			// mcp-go hands notifications to OnNotification on goroutines of
			// its own, so they may come after the result.
			var got []string
			after := 0
			for len(got) < 3 {
				after = n.wait(t, after, method(mcp.MethodNotificationProgress))
				n.mu.Lock()
				x := n.list[after-1]
				n.mu.Unlock()
				got = append(got, x.Params.AdditionalFields["progressToken"].(string)+" "+
					x.Params.AdditionalFields["message"].(string))
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"mine step 1", "mine step 2", "mine step 3"}) {
				t.Fatalf("progress %v", got)
			}
		})
	}
}

// TestEndingTheRequestCancelsTheCall: a downstream session that ends (a
// client that closes, which ends its HTTP session) or a request its client
// cancels ends the upstream call: the server's handler sees its context
// end, as the Manager sends it notifications/cancelled.
func TestEndingTheRequestCancelsTheCall(t *testing.T) {
	up := upstream.New("a")
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(up.MCPServer)}})
	url := f.serveHTTP(t, gateway.HTTPOptions{})

	t.Run("session closed", func(t *testing.T) {
		c := dial(t, url, "2025-11-25")
		done := make(chan error, 1)
		go func() {
			_, _, err := callText(testCtx(t), c, "a__slow", map[string]any{"label": "closed"})
			done <- err
		}()
		mustRecv(t, up.Started, "closed")
		c.Close()
		mustRecv(t, up.Cancelled, "closed")
		<-done
	})
	for _, p := range protocols {
		t.Run("request cancelled/"+p.name, func(t *testing.T) {
			c := dial(t, url, p.version)
			ctx, cancel := context.WithCancel(testCtx(t))
			done := make(chan error, 1)
			go func() {
				_, _, err := callText(ctx, c, "a__slow", map[string]any{"label": "cancelled"})
				done <- err
			}()
			mustRecv(t, up.Started, "cancelled")
			cancel()
			mustRecv(t, up.Cancelled, "cancelled")
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled call returned %v", err)
			}
			if got := mustCall(t, c, "a__echo", map[string]any{"text": "still"}); got != "still" {
				t.Fatalf("after a cancelled call: %q", got)
			}
		})
	}
}

func mustRecv(t testing.TB, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-testCtx(t).Done():
		t.Fatalf("no %q", want)
	}
}

// TestClientLimits: a client over its limit of requests in flight, or of
// requests a second, gets an error that names the limit, and goes on. The
// limits hold for the client, all its sessions together: a new session
// gains it nothing.
func TestClientLimits(t *testing.T) {
	up := upstream.New("a")
	t.Run("in flight", func(t *testing.T) {
		f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(up.MCPServer)}},
			gateway.WithClientLimits(1, -1))
		url := f.serveHTTP(t, gateway.HTTPOptions{})
		c := dial(t, url, "2025-11-25")
		ctx, cancel := context.WithCancel(testCtx(t))
		done := make(chan struct{})
		go func() {
			defer close(done)
			callText(ctx, c, "a__slow", map[string]any{"label": "limit"})
		}()
		mustRecv(t, up.Started, "limit")
		_, _, err := callText(testCtx(t), c, "a__echo", map[string]any{"text": "x"})
		if err == nil || !strings.Contains(err.Error(), "limit of 1 requests in flight") {
			t.Fatalf("a second call in flight: %v", err)
		}
		other := dial(t, url, "2025-11-25") // the same client: its sessions share the limit
		if _, _, err := callText(testCtx(t), other, "a__echo", map[string]any{"text": "other"}); err == nil ||
			!strings.Contains(err.Error(), "limit of 1 requests in flight") {
			t.Fatalf("a call of the client's second session: %v", err)
		}
		cancel()
		mustRecv(t, up.Cancelled, "limit")
		<-done
		// The client's cancellation reaches the gateway when it sees the
		// request's connection close, and the call gives its place back
		// once its upstream call returned: both after the client's own
		// call returned, so the next call may still find the place taken
		// for a moment. It is given back: a client that retries gets in.
		for {
			text, _, err := callText(testCtx(t), c, "a__echo", map[string]any{"text": "again"})
			if err == nil {
				if text != "again" {
					t.Fatal(text)
				}
				break
			}
			if !strings.Contains(err.Error(), "limit of 1 requests in flight") {
				t.Fatalf("after the cancelled call ended: %v", err)
			}
		}
	})
	t.Run("sequential", func(t *testing.T) {
		// A call gives its place back before its answer is written: a
		// client that calls again once answered is never refused.
		f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(up.MCPServer)}},
			gateway.WithClientLimits(1, -1))
		url := f.serveHTTP(t, gateway.HTTPOptions{})
		for _, p := range protocols {
			c := dial(t, url, p.version)
			for i := range 50 {
				if got := mustCall(t, c, "a__echo", map[string]any{"text": strconv.Itoa(i)}); got != strconv.Itoa(i) {
					t.Fatalf("%s: %q", p.name, got)
				}
			}
		}
	})
	t.Run("rate", func(t *testing.T) {
		// A burst of one, and the next token a thousand seconds later:
		// of the client's requests, whatever its sessions, one passes.
		f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(up.MCPServer)}},
			gateway.WithClientLimits(-1, 0.001))
		url := f.serveHTTP(t, gateway.HTTPOptions{})
		passed := 0
		for range 20 { // 20 fresh sessions, each with a request of its own
			resp := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			if resp.StatusCode == http.StatusOK {
				passed++
				id := resp.Header.Get("Mcp-Session-Id")
				if resp := post(t, url, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode == http.StatusOK {
					passed++
				}
				continue
			}
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
				!strings.Contains(resp.body, "over the client's request rate") {
				t.Fatalf("a request over the rate: %d %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.body)
			}
		}
		if passed != 1 {
			t.Fatalf("%d requests of one client passed a rate with a burst of 1", passed)
		}
	})
}

// response is an HTTP response with its body read.
type response struct {
	*http.Response
	body string
}

// post sends a JSON-RPC message of the protocol before 2026-07-28 to url,
// in session id ("" for none).
func post(t testing.TB, url, id, body string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp, string(b)}
}

// TestLogsForwarded: a server's log messages reach a session that asked
// for them (logging/setLevel), named after their server.
func TestLogsForwarded(t *testing.T) {
	inv := faultserver.Command(faultserver.ModeFlood)
	f := newFleet(t, map[string]client.ServerSpec{
		"flood": {Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}},
	})
	c := dial(t, f.serveHTTP(t, gateway.HTTPOptions{}), "2025-11-25")
	n := collect(c)
	ctx := testCtx(t)
	if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, c, "flood__notify", map[string]any{"kind": "log", "rate": 2000, "ms": 100}); got == "sent=0" {
		t.Fatal(got)
	}
	n.wait(t, 0, func(x mcp.JSONRPCNotification) bool {
		return x.Method == string(mcp.MethodNotificationMessage) && x.Params.AdditionalFields["logger"] == "flood/flood"
	})
}
