package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// everythingTarget is @modelcontextprotocol/server-everything over one
// transport: how to reach it and how to restart it under the Manager.
type everythingTarget struct {
	name  string
	start func(t *testing.T) (ServerSpec, func(t *testing.T, m *Manager))
}

var everythingTargets = []everythingTarget{
	{name: "stdio", start: func(t *testing.T) (ServerSpec, func(*testing.T, *Manager)) {
		spec := ServerSpec{Stdio: &stdio.Spec{Command: npmtest.Bin(t, "mcp-server-everything")}}
		return spec, func(t *testing.T, m *Manager) {
			pid, _ := childPID(t, m, "s")
			kill(t, pid)
		}
	}},
	{name: "streamable-http", start: func(t *testing.T) (ServerSpec, func(*testing.T, *Manager)) {
		e := httpserver.StartEverything(t, httpserver.EverythingStreamable)
		return ServerSpec{HTTP: &mcphttp.Spec{URL: e.URL()}}, func(t *testing.T, _ *Manager) { e.Restart(t) }
	}},
}

// host is what a test host answers servers with, and what it saw.
type host struct {
	mu       sync.Mutex
	sampled  []string // server names of sampling requests
	elicited []mcp.ElicitationRequest
	servers  []string // server names of elicitation requests
}

func (h *host) sample(_ context.Context, server string, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	h.mu.Lock()
	h.sampled = append(h.sampled, server)
	h.mu.Unlock()
	prompt := ""
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			prompt = tc.Text
		}
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant,
			Content: mcp.NewTextContent("host answer to <" + prompt + "> from " + server)},
		Model:      "mcpfleet-test-model",
		StopReason: "endTurn",
	}, nil
}

func (h *host) elicit(_ context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	h.mu.Lock()
	h.elicited = append(h.elicited, req)
	h.servers = append(h.servers, server)
	h.mu.Unlock()
	res := &mcp.ElicitationResult{}
	res.Action = mcp.ElicitationResponseActionAccept
	if req.Params.Mode != mcp.ElicitationModeURL {
		res.Content = map[string]any{"name": "Ada Lovelace", "check": true}
	}
	return res, nil
}

func (h *host) samplingServers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sampled)
}

// allText joins every text content of a result.
func allText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func mustCall(ctx context.Context, t *testing.T, m *Manager, tool string, args any, opts ...CallOption) string {
	t.Helper()
	res, err := m.CallTool(ctx, "s", tool, args, opts...)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, allText(res))
	}
	return allText(res)
}

func toolNames(m *Manager) []string {
	c, _ := m.View().Catalog("s")
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Name)
	}
	return names
}

// TestClientRoleCapabilities shows that the Manager declares exactly the
// client capabilities the host provided: server-everything registers its
// sampling, elicitation (form, URL) and roots tools only for a client that
// declared the matching capability.
func TestClientRoleCapabilities(t *testing.T) {
	t.Parallel()
	h := &host{}
	gated := []string{"trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation", "get-roots-list"}
	for _, tt := range []struct {
		name string
		opts []Option
		want []string // of gated
	}{
		{name: "none"},
		{name: "all", opts: []Option{WithSamplingHandler(h.sample), WithElicitationHandler(h.elicit, ElicitForm, ElicitURL), WithRoots()},
			want: gated},
		{name: "form-only", opts: []Option{WithElicitationHandler(h.elicit)}, want: []string{"trigger-elicitation-request"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec, _ := everythingTargets[0].start(t)
			m := newTestManager(t, tt.opts...)
			mustAdd(t, m, "s", spec)
			mustWait(t, m, "s", lifecycle.Connected)
			names := toolNames(m)
			var got []string
			for _, g := range gated {
				if slices.Contains(names, g) {
					got = append(got, g)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("capability-gated tools offered: %v, want %v (all tools: %v)", got, tt.want, names)
			}
			if !slices.Contains(names, "echo") {
				t.Fatalf("echo missing: %v", names)
			}
			if tt.name == "none" {
				if err := m.SetRoots(testCtx(t), nil); !errors.Is(err, ErrRootsNotEnabled) {
					t.Fatalf("SetRoots without WithRoots: %v, want ErrRootsNotEnabled", err)
				}
			}
		})
	}
}

// TestClientRoleServerRequests drives server-everything's sampling,
// elicitation (form and URL mode) and roots tools over stdio and streamable
// HTTP: each request reaches the host's handler with the server's name, the
// host's answer reaches the tool, and SetRoots makes the server fetch the
// new roots (it logs that it did, and its tool then lists them).
func TestClientRoleServerRequests(t *testing.T) {
	t.Parallel()
	for _, tt := range everythingTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			spec, _ := tt.start(t)
			h := &host{}
			m := newTestManager(t, WithSamplingHandler(h.sample), WithElicitationHandler(h.elicit, ElicitForm, ElicitURL),
				WithRoots(mcp.Root{URI: "file:///work/first", Name: "first"}))
			rec := record(m)
			mustAdd(t, m, "s", spec)
			mustWait(t, m, "s", lifecycle.Connected)

			// Sampling.
			out := mustCall(ctx, t, m, "trigger-sampling-request", map[string]any{"prompt": "two plus two", "maxTokens": 10})
			if !strings.Contains(out, "mcpfleet-test-model") || !strings.Contains(out, "two plus two") || !strings.Contains(out, "from s") {
				t.Fatalf("sampling result does not carry the host's answer: %s", out)
			}
			if got := h.samplingServers(); !slices.Equal(got, []string{"s"}) {
				t.Fatalf("sampling requests from %v, want [s]", got)
			}

			// Elicitation, form mode.
			out = mustCall(ctx, t, m, "trigger-elicitation-request", nil)
			if !strings.Contains(out, "Ada Lovelace") {
				t.Fatalf("form elicitation result does not carry the host's answer: %s", out)
			}
			// Elicitation, URL mode.
			out = mustCall(ctx, t, m, "trigger-url-elicitation", map[string]any{"url": "https://example.com/consent"})
			if !strings.Contains(out, "completed the URL elicitation") {
				t.Fatalf("URL elicitation result: %s", out)
			}
			h.mu.Lock()
			if len(h.elicited) != 2 || h.elicited[0].Params.RequestedSchema == nil ||
				h.elicited[1].Params.Mode != mcp.ElicitationModeURL || h.elicited[1].Params.URL != "https://example.com/consent" ||
				!slices.Equal(h.servers, []string{"s", "s"}) {
				t.Fatalf("elicitation requests seen by the host: %+v from %v", h.elicited, h.servers)
			}
			h.mu.Unlock()

			// Roots: the server asks for them; SetRoots tells it they changed.
			out = mustCall(ctx, t, m, "get-roots-list", nil)
			if !strings.Contains(out, "file:///work/first") {
				t.Fatalf("roots before SetRoots: %s", out)
			}
			newRoots := []mcp.Root{{URI: "file:///work/second", Name: "second"}, {URI: "file:///work/third", Name: "third"}}
			if err := m.SetRoots(ctx, newRoots); err != nil {
				t.Fatalf("SetRoots: %v", err)
			}
			// The server answers list_changed by asking again, then logs it.
			rec.wait(t, func(e Event) bool {
				return e.Kind == EventLog && e.Server == "s" && fmt.Sprint(e.Log.Data) == "Roots updated: 2 root(s) received from client"
			})
			out = mustCall(ctx, t, m, "get-roots-list", nil)
			if !strings.Contains(out, "file:///work/second") || !strings.Contains(out, "file:///work/third") || strings.Contains(out, "first") {
				t.Fatalf("roots after SetRoots: %s", out)
			}
		})
	}
}

// TestClientRoleProgress runs two long operations of server-everything at
// once, each with its own WithProgress: each callback gets its own call's
// notifications, all of them, in order, and none of the other's.
func TestClientRoleProgress(t *testing.T) {
	t.Parallel()
	for _, tt := range everythingTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			spec, _ := tt.start(t)
			m := newTestManager(t)
			mustAdd(t, m, "s", spec)
			mustWait(t, m, "s", lifecycle.Connected)

			var wg sync.WaitGroup
			got := make([][]mcp.ProgressNotificationParams, 2)
			for i, steps := range []int{3, 4} {
				wg.Go(func() {
					var seen []mcp.ProgressNotificationParams // only fn touches it until the call returns
					_, err := m.CallTool(ctx, "s", "trigger-long-running-operation",
						map[string]any{"duration": 0.2 * float64(steps), "steps": steps},
						WithProgress(func(n mcp.ProgressNotification) { seen = append(seen, n.Params) }))
					if err != nil {
						t.Errorf("call %d: %v", i, err)
					}
					got[i] = seen
				})
			}
			// A call without the option gets no token and sends no callback.
			mustCall(ctx, t, m, "trigger-long-running-operation", map[string]any{"duration": 0.1, "steps": 2})
			wg.Wait()
			for i, steps := range []int{3, 4} {
				if len(got[i]) != steps {
					t.Fatalf("call %d: %d progress notifications, want %d: %+v", i, len(got[i]), steps, got[i])
				}
				token := got[i][0].ProgressToken
				for j, p := range got[i] {
					if p.Progress != float64(j+1) || p.Total != float64(steps) || p.ProgressToken != token {
						t.Fatalf("call %d notification %d: %+v, want progress %d of %d, token %v", i, j, p, j+1, steps, token)
					}
				}
			}
			if got[0][0].ProgressToken == got[1][0].ProgressToken {
				t.Fatalf("both calls had progress token %v", got[0][0].ProgressToken)
			}
		})
	}
}

// logRecorder is a slog handler that keeps the records of server logs.
type logRecorder struct {
	mu      sync.Mutex
	records []string // "LEVEL msg server=..."
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	if !strings.HasPrefix(rec.Message, "mcpfleet: server log") {
		return nil
	}
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.Key + "=" + a.Value.String()
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, line)
	r.mu.Unlock()
	return nil
}

func (r *logRecorder) find(substr string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.records {
		if strings.Contains(l, substr) {
			return l
		}
	}
	return ""
}

// logged waits for an EventLog of server "s" and generation gen whose data
// contains substr, and returns it with every log event of "s" before it.
func logged(t *testing.T, rec *recorder, gen uint64, substr string) (Event, []Event) {
	t.Helper()
	e := rec.wait(t, func(e Event) bool {
		return e.Kind == EventLog && e.Server == "s" && e.Generation == gen && strings.Contains(fmt.Sprint(e.Log.Data), substr)
	})
	var before []Event
	for _, x := range rec.snapshot() {
		if x.Seq >= e.Seq {
			break
		}
		if x.Kind == EventLog && x.Server == "s" {
			before = append(before, x)
		}
	}
	return e, before
}

// TestClientRoleLogging runs server-everything over stdio, where messages
// arrive in the order the server sent them:
//
//   - toggle-simulated-logging's first message becomes an EventLog and a
//     record of the Manager's logger, both naming the server;
//   - SetLevel(error) filters the info message the server logs for a
//     resources/subscribe; SetLevel(info) lets the one for the
//     resources/unsubscribe through;
//   - the level is remembered: after the child is killed and the slot
//     reconnects, the new runtime is told "error" again before it counts
//     as Connected (the server's own default sends everything).
func TestClientRoleLogging(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	spec, restart := everythingTargets[0].start(t)
	logs := &logRecorder{}
	m := newTestManager(t, WithLogger(slog.New(logs)))
	rec := record(m)
	mustAdd(t, m, "s", spec)
	mustWait(t, m, "s", lifecycle.Connected)

	if err := m.SetLevel(ctx, "s", mcp.LoggingLevelDebug); err != nil {
		t.Fatalf("SetLevel: %v", err)
	}
	mustCall(ctx, t, m, "toggle-simulated-logging", nil)
	e, _ := logged(t, rec, 1, "-level message")
	if e.Log.Level == "" {
		t.Fatalf("log event: %+v", e)
	}
	if line := logs.find(fmt.Sprint(e.Log.Data)); !strings.Contains(line, "server=s") || !strings.Contains(line, "level="+string(e.Log.Level)) {
		t.Fatalf("slog record of %q: %q", e.Log.Data, line)
	}
	mustCall(ctx, t, m, "toggle-simulated-logging", nil) // off again

	const uri = "demo://resource/static/document/architecture.md"
	check := func(gen uint64) {
		t.Helper()
		if err := m.SetLevel(ctx, "s", mcp.LoggingLevelError); err != nil {
			t.Fatalf("SetLevel(error): %v", err)
		}
		if err := m.SubscribeResource(ctx, "s", uri); err != nil {
			t.Fatalf("SubscribeResource: %v", err)
		}
		if err := m.SetLevel(ctx, "s", mcp.LoggingLevelInfo); err != nil {
			t.Fatalf("SetLevel(info): %v", err)
		}
		if err := m.UnsubscribeResource(ctx, "s", uri); err != nil {
			t.Fatalf("UnsubscribeResource: %v", err)
		}
		_, before := logged(t, rec, gen, "Received Unsubscribe Resource request: "+uri)
		for _, b := range before {
			if b.Generation == gen && strings.Contains(fmt.Sprint(b.Log.Data), "Received Subscribe") {
				t.Fatalf("info message got through level error: %+v", b.Log)
			}
		}
	}
	check(1)

	// The level is remembered across a restart: subscribe on the new
	// runtime without setting it again first.
	if err := m.SetLevel(ctx, "s", mcp.LoggingLevelError); err != nil {
		t.Fatal(err)
	}
	restart(t, m)
	rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Connected && e.Generation == 2 })
	if err := m.SubscribeResource(ctx, "s", uri); err != nil {
		t.Fatalf("SubscribeResource: %v", err)
	}
	if err := m.SetLevel(ctx, "s", mcp.LoggingLevelInfo); err != nil {
		t.Fatal(err)
	}
	if err := m.UnsubscribeResource(ctx, "s", uri); err != nil {
		t.Fatal(err)
	}
	_, before := logged(t, rec, 2, "Received Unsubscribe Resource request: "+uri)
	for _, b := range before {
		if b.Generation == 2 && strings.Contains(fmt.Sprint(b.Log.Data), "Received Subscribe") {
			t.Fatalf("generation 2 was not told the remembered level: %+v", b.Log)
		}
	}
}

// TestClientRoleSubscriptionSurvivesRestart subscribes to a resource of
// server-everything, gets its updates, restarts the server (kills the
// child; stops and starts the HTTP server on the same port), and gets
// updates again on the new runtime without subscribing again: the Manager
// renewed the subscription before the slot counted as Connected.
func TestClientRoleSubscriptionSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, tt := range everythingTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			spec, restart := tt.start(t)
			m := newTestManager(t, WithPolicy(httpPolicy))
			rec := record(m)
			mustAdd(t, m, "s", spec)
			mustWait(t, m, "s", lifecycle.Connected)

			const uri = "demo://resource/static/document/features.md"
			if err := m.SubscribeResource(ctx, "s", uri); err != nil {
				t.Fatalf("SubscribeResource: %v", err)
			}
			updated := func(gen uint64) func(Event) bool {
				return func(e Event) bool {
					return e.Kind == EventResourceUpdated && e.Server == "s" && e.URI == uri && e.Generation == gen
				}
			}
			// The server sends one update at once, then one every 5s.
			mustCall(ctx, t, m, "toggle-subscriber-updates", nil)
			rec.wait(t, updated(1))

			restart(t, m)
			rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Connected && e.Generation == 2 })
			// The new server knows nothing of the old one's toggle or
			// subscription: an update now proves the Manager subscribed.
			mustCall(ctx, t, m, "toggle-subscriber-updates", nil)
			rec.wait(t, updated(2))
			if subs, _ := m.Subscriptions("s"); !slices.Equal(subs, []string{uri}) {
				t.Fatalf("Subscriptions = %v", subs)
			}

			// Unsubscribed, the next runtime is not subscribed again.
			if err := m.UnsubscribeResource(ctx, "s", uri); err != nil {
				t.Fatalf("UnsubscribeResource: %v", err)
			}
			if subs, _ := m.Subscriptions("s"); len(subs) != 0 {
				t.Fatalf("Subscriptions after unsubscribe = %v", subs)
			}
		})
	}
}

// gatedConn holds its runtime open after the Manager closed it, until the
// test opens the gate: a detached runtime that a server can still talk on.
type gatedConn struct {
	transport.Conn
	gate <-chan struct{}
}

func (c *gatedConn) Close(ctx context.Context) error {
	select {
	case <-c.gate:
	case <-ctx.Done():
	}
	return c.Conn.Close(ctx)
}

// TestClientRoleDetachedRequestRefused keeps generation 1 of
// server-everything open after a Reconnect detached it, and makes that old
// runtime's server ask for sampling: the request is refused and the host's
// handler is not called. The same request on generation 2 reaches it.
func TestClientRoleDetachedRequestRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range everythingTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			spec, _ := tt.start(t)
			gate := make(chan struct{})
			h := &host{}
			m := newTestManager(t, WithSamplingHandler(h.sample), WithTimeouts(Timeouts{Close: 20 * time.Second}))
			inner := spec.dialer(&m.opts, false, m.opts.limits, nil, nil)
			spec = ServerSpec{Dialer: func(ctx context.Context) (transport.Conn, error) {
				c, err := inner(ctx)
				if err != nil {
					return nil, err
				}
				return &gatedConn{Conn: c, gate: gate}, nil
			}}
			rec := record(m)
			mustAdd(t, m, "s", spec)
			defer close(gate) // before the Manager's Close waits for the old runtime
			mustWait(t, m, "s", lifecycle.Connected)
			s, _ := m.slot("s")
			s.mu.Lock()
			old := s.lease
			s.mu.Unlock()

			if err := m.Reconnect(ctx, "s"); err != nil {
				t.Fatal(err)
			}
			rec.wait(t, func(e Event) bool { return e.Kind == EventState && e.To == lifecycle.Connected && e.Generation == 2 })

			req := mcp.CallToolRequest{}
			req.Params.Name = "trigger-sampling-request"
			req.Params.Arguments = map[string]any{"prompt": "late", "maxTokens": 5}
			res, err := old.client.CallTool(ctx, req)
			t.Logf("old runtime's answer: %v, %v", res, err)
			if err == nil && !res.IsError {
				t.Fatalf("sampling through the detached runtime succeeded: %s", allText(res))
			}
			if tt.name != "stdio" {
				// Over stdio mcp-go itself refuses requests once the
				// transport's start context (the lease's) ended; over HTTP
				// it is the Manager's check that does.
				msg := fmt.Sprint(err)
				if res != nil {
					msg += allText(res)
				}
				if !strings.Contains(msg, "detached runtime") {
					t.Fatalf("refusal does not say why: %s", msg)
				}
			}
			if got := h.samplingServers(); len(got) != 0 {
				t.Fatalf("the host's handler was called for a detached runtime: %v", got)
			}

			mustCall(ctx, t, m, "trigger-sampling-request", map[string]any{"prompt": "current", "maxTokens": 5})
			if got := h.samplingServers(); !slices.Equal(got, []string{"s"}) {
				t.Fatalf("sampling on generation 2 reached the host %d times", len(got))
			}
		})
	}
}
