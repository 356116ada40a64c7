package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Stats counts every request by how it ended, and the dials, reconnects,
// retries and recovery of the server.
func TestStatsCountWhatHappened(t *testing.T) {
	ts := newTestServer()
	m := New()
	defer m.Close()
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer()})
	mustWait(t, m, "s", lifecycle.Connected)

	ctx := testCtx(t)
	// First (it counts the server's calls): a read-only tool whose first run kills the connection is replayed on
	// the next runtime: one reconnect, one retry, one recovery.
	if _, err := m.CallTool(ctx, "s", "crash-readonly", nil); err != nil {
		t.Fatalf("crash-readonly: %v", err)
	}
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	for range 3 {
		if _, err := m.CallTool(ctx, "s", "echo", map[string]any{"text": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := m.CallTool(ctx, "s", "fail", nil); err != nil || !res.IsError {
		t.Fatalf("fail = %v, %v", res, err)
	}
	if _, err := m.CallTool(ctx, "s", "no-such-tool", nil); !errors.Is(err, ErrServerError) {
		t.Fatalf("unknown tool: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.CallTool(canceled, "s", "echo", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call: %v", err)
	}
	if _, err := m.CallTool(ctx, "s", "block", nil, WithCallTimeout(time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call: %v", err)
	}
	if err := m.Disable(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CallTool(ctx, "s", "echo", nil); !errors.Is(err, ErrDisabled) {
		t.Fatalf("disabled call: %v", err)
	}

	st := m.Stats()
	if len(st.Servers) != 1 {
		t.Fatalf("%d servers in Stats", len(st.Servers))
	}
	s := st.Servers[0]
	want := map[Outcome]uint64{OutcomeOK: 4, OutcomeToolError: 1, OutcomeServerError: 1,
		OutcomeCanceled: 1, OutcomeTimeout: 1, OutcomeDisabled: 1}
	for o := Outcome(0); int(o) < numOutcomes; o++ {
		if s.Calls[o] != want[o] {
			t.Errorf("Calls[%v] = %d, want %d", o, s.Calls[o], want[o])
		}
	}
	if s.Requests() != 9 || st.Total.Requests() != 9 || st.Total.Calls != s.Calls {
		t.Errorf("requests %d, total %d", s.Requests(), st.Total.Requests())
	}
	if s.Dials != 2 || s.DialFailures != 0 || s.Reconnects != 1 || s.Retries != 1 {
		t.Errorf("dials %d (failed %d), reconnects %d, retries %d; want 2, 0, 1, 1",
			s.Dials, s.DialFailures, s.Reconnects, s.Retries)
	}
	if s.LastRecovery <= 0 || s.WorstRecovery < s.LastRecovery {
		t.Errorf("recovery: last %v, worst %v", s.LastRecovery, s.WorstRecovery)
	}
	if s.State != lifecycle.Disabled || s.InState < 0 || s.InFlight != 0 {
		t.Errorf("gauges: %v for %v, %d in flight", s.State, s.InState, s.InFlight)
	}
}

// observed is an Observer that records what it is told.
type observed struct {
	mu       sync.Mutex
	starts   []Request
	attempts []int
	ends     []Outcome
	states   []string
	dials    []uint64
	meta     map[string]any
}

func (o *observed) RequestStart(ctx context.Context, r *Request) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts = append(o.starts, *r)
	r.Meta = map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	return context.WithValue(ctx, observedKey{}, "span")
}

type observedKey struct{}

func (o *observed) RequestAttempt(ctx context.Context, r *Request, attempt int, cause error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ctx.Value(observedKey{}) != "span" || r.Generation == 0 || r.Transport != "dialer" {
		o.attempts = append(o.attempts, -1)
		return
	}
	o.attempts = append(o.attempts, attempt)
}

func (o *observed) RequestEnd(ctx context.Context, r *Request, outcome Outcome, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends = append(o.ends, outcome)
}

func (o *observed) StateChange(server string, from, to lifecycle.State, gen uint64, cause error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states = append(o.states, server+":"+to.String())
}

func (o *observed) Dial(server string, gen uint64, took time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dials = append(o.dials, gen)
}

// An Observer sees each request begin, go to a runtime and end, with what
// it put in the request's _meta reaching the server; and it sees the dials
// and the state changes.
func TestObserverSeesRequestsStatesAndDials(t *testing.T) {
	obs := &observed{}
	srv := server.NewMCPServer("meta", "1.0", server.WithToolCapabilities(false))
	var seen any
	srv.AddTool(mcp.NewTool("look"), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.Params.Meta != nil {
			seen = r.Params.Meta.AdditionalFields["traceparent"]
		}
		return mcp.NewToolResultText("ok"), nil
	})
	m := New(WithObserver(obs))
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{Dialer: InProcess(srv)})
	mustWait(t, m, "s", lifecycle.Connected)
	if _, err := m.CallTool(testCtx(t), "s", "look", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetPrompt(testCtx(t), "s", "none", nil); !errors.Is(err, ErrServerError) {
		t.Fatalf("prompt: %v", err)
	}
	rec.waitStates(t, "s", "Connecting", "Connected")
	m.Close() // delivers every queued event, so the states below are all in

	obs.mu.Lock()
	defer obs.mu.Unlock()
	if seen != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("the server saw traceparent %v", seen)
	}
	if len(obs.starts) != 2 || obs.starts[0].Method != "tools/call" || obs.starts[0].Name != "look" ||
		obs.starts[1].Method != "prompts/get" || obs.starts[1].Server != "s" {
		t.Errorf("starts %+v", obs.starts)
	}
	if len(obs.attempts) != 2 || obs.attempts[0] != 1 || obs.attempts[1] != 1 {
		t.Errorf("attempts %v (-1: without the request's context or runtime)", obs.attempts)
	}
	if len(obs.ends) != 2 || obs.ends[0] != OutcomeOK || obs.ends[1] != OutcomeServerError {
		t.Errorf("ends %v", obs.ends)
	}
	if len(obs.dials) != 1 || obs.dials[0] != 1 {
		t.Errorf("dials %v", obs.dials)
	}
	if len(obs.states) < 3 || obs.states[0] != "s:Connecting" || obs.states[1] != "s:Connected" ||
		obs.states[len(obs.states)-1] != "s:Closed" {
		t.Errorf("states %v", obs.states)
	}
}

// A call by qualified name to a server that publishes no catalog and fails
// fast (here: disabled) is counted and observed as the same call by server
// and tool is: before, Call returned the error without a count, so a host's
// Stats and traces missed what its users asked of a disabled server.
func TestCallCountedAsCallToolIs(t *testing.T) {
	ts := newTestServer()
	obs := &observed{}
	m := newTestManager(t, WithObserver(obs))
	mustAdd(t, m, "s", ServerSpec{Dialer: ts.dialer(), Disabled: true})
	ctx := testCtx(t)
	for _, call := range []struct {
		name string
		call func() error
	}{
		{"CallTool", func() error { _, err := m.CallTool(ctx, "s", "echo", nil); return err }},
		{"Call", func() error { _, err := m.Call(ctx, "s__echo", nil); return err }},
	} {
		before := m.Stats().Total.Calls[OutcomeDisabled]
		obs.mu.Lock()
		ends := len(obs.ends)
		obs.mu.Unlock()
		if err := call.call(); !errors.Is(err, ErrDisabled) {
			t.Fatalf("%s: %v, want ErrDisabled", call.name, err)
		}
		if got := m.Stats().Total.Calls[OutcomeDisabled] - before; got != 1 {
			t.Errorf("%s: counted %d disabled calls, want 1", call.name, got)
		}
		obs.mu.Lock()
		if got := obs.ends[ends:]; len(got) != 1 || got[0] != OutcomeDisabled {
			t.Errorf("%s: the observer saw %v end, want one %v", call.name, got, OutcomeDisabled)
		}
		obs.mu.Unlock()
	}
}
