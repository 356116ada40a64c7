package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// answering is a downstream client's side of the server requests: it
// answers sampling, elicitation and roots as who, and counts them.
type answering struct {
	who string

	mu    sync.Mutex
	asked []string
	// hold, if set, is closed by the test to let the next sampling answer
	// go; entered is signalled when one waits on it.
	hold, entered chan struct{}
}

func (a *answering) note(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, s)
}

func (a *answering) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	a.note("sampling")
	if a.hold != nil {
		a.entered <- struct{}{}
		select {
		case <-a.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	text := upstream.Text(req.Messages[0].Content)
	return &mcp.CreateMessageResult{Model: "test", SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
		Content: mcp.NewTextContent(a.who + " answers " + text)}}, nil
}

func (a *answering) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.note("elicitation")
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": a.who}}}, nil
}

func (a *answering) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	a.note("roots")
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///" + a.who, Name: a.who}}}, nil
}

func (a *answering) options() []mcpclient.ClientOption {
	// mcp-go declares each capability it has a handler for.
	return []mcpclient.ClientOption{
		mcpclient.WithSamplingHandler(a), mcpclient.WithElicitationHandler(a), mcpclient.WithRootsHandler(a),
	}
}

// TestServerRequestsGoToTheCaller: two downstream clients call tools of
// the same server at once, and the sampling, elicitation and roots
// requests the server makes during each call reach the client that made
// it, on both protocol generations. (The server asks in multi round-trip
// results, so the Manager answers in the call's context: the request names
// its call.)
func TestServerRequestsGoToTheCaller(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(upstream.New("a").MCPServer)}})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := testCtx(t)
			ann, bob := &answering{who: "ann"}, &answering{who: "bob"}
			ca := dial(t, url, p.version, ann.options()...)
			cb := dial(t, url, p.version, bob.options()...)
			var wg sync.WaitGroup
			results := map[string]string{}
			var mu sync.Mutex
			for _, x := range []struct {
				who  string
				c    *mcpclient.Client
				tool string
				args map[string]any
			}{
				{"ann", ca, "a__sample", map[string]any{"prompt": "p1"}},
				{"bob", cb, "a__sample", map[string]any{"prompt": "p2"}},
				{"ann", ca, "a__elicit", map[string]any{"message": "name?"}},
				{"bob", cb, "a__elicit", map[string]any{"message": "name?"}},
				{"ann", ca, "a__roots", nil},
				{"bob", cb, "a__roots", nil},
			} {
				wg.Go(func() {
					text, isErr, err := callText(ctx, x.c, x.tool, x.args)
					if err != nil || isErr {
						t.Errorf("%s %s: %q %v", x.who, x.tool, text, err)
					}
					mu.Lock()
					results[x.who+" "+x.tool] = text
					mu.Unlock()
				})
			}
			wg.Wait()
			want := map[string]string{
				"ann a__sample": "ann answers p1", "bob a__sample": "bob answers p2",
				"ann a__elicit": "accept ann", "bob a__elicit": "accept bob",
				"ann a__roots": "file:///ann", "bob a__roots": "file:///bob",
			}
			for k, v := range want {
				if results[k] != v {
					t.Errorf("%s = %q, want %q", k, results[k], v)
				}
			}
		})
	}
}

// TestServerRequestsOnTheConnection: a server that sends its requests on
// the connection (the older protocols' way: nothing ties them to a call)
// gets them answered by the client whose call is in flight on it, and
// refused, with the reason, when calls of two clients are.
func TestServerRequestsOnTheConnection(t *testing.T) {
	inv := faultserver.Command(faultserver.ModeFlood)
	f := newFleet(t, map[string]client.ServerSpec{
		"flood": {Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}},
	})
	url := f.serveHTTP(t, gateway.HTTPOptions{})
	ctx := testCtx(t)
	ann := &answering{who: "ann", hold: make(chan struct{}), entered: make(chan struct{}, 4)}
	bob := &answering{who: "bob"}
	ca := dial(t, url, "2025-11-25", ann.options()...)
	cb := dial(t, url, "2025-11-25", bob.options()...)

	annDone := make(chan string, 1)
	go func() {
		text, _, err := callText(ctx, ca, "flood__ask", map[string]any{"kind": "sampling", "n": 1})
		if err != nil {
			text = err.Error()
		}
		annDone <- text
	}()
	<-ann.entered // ann's call is in flight, and its request reached ann

	text, _, err := callText(ctx, cb, "flood__ask", map[string]any{"kind": "sampling", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	var got faultserver.FloodAnswers
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	if got.Error != 1 || !hasKey(got.Errors, "calls of 2 downstream sessions are in flight") {
		t.Fatalf("bob's request while ann's call is in flight: %+v", got)
	}
	close(ann.hold)
	if err := json.Unmarshal([]byte(<-annDone), &got); err != nil || got.OK != 1 {
		t.Fatalf("ann's request: %+v %v", got, err)
	}

	// Alone, bob gets his own server's requests.
	text = mustCall(t, cb, "flood__ask", map[string]any{"kind": "roots", "n": 2})
	if err := json.Unmarshal([]byte(text), &got); err != nil || got.OK != 2 {
		t.Fatalf("bob alone: %s %v", text, err)
	}
	if fmt.Sprint(bob.asked) != "[roots roots]" {
		t.Fatalf("bob was asked %v", bob.asked)
	}
}

func hasKey(m map[string]int, sub string) bool {
	for k := range m {
		if strings.Contains(k, sub) {
			return true
		}
	}
	return false
}
