package client

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/failure"

	"github.com/mcpfleet/mcpfleet/transport"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// restartableServer is an HTTP test server that can be stopped and started again
// on the same port: an httpserver.Server or an httpserver.Everything.
type restartableServer interface {
	URL() string
	Stop()
	Restart(testing.TB)
}

// unnoticed is what the host's first call after a restart meets when the
// Manager was not told that the notification stream broke off.
type unnoticed int

const (
	// unnoticedRetried: the server forgot the session and rejected the call
	// (404, or 400 with -32000/-32602); the Manager replaced the runtime and retried
	// the call on it, transparently.
	unnoticedRetried unnoticed = iota
	// unnoticedOldWorks: the server keeps no session the call depends on (2026-07-28
	// has none; stateless servers check none), so the call succeeds on the
	// old runtime and nothing is replaced.
	unnoticedOldWorks
	// unnoticedHangs: the server never answers a request on a session it does not
	// know (server-everything's SSE transport); only the caller's context
	// ends the call.
	unnoticedHangs
)

func (u unnoticed) String() string { return [...]string{"retried", "old-works", "hangs"}[u] }

// httpTarget is one server kind the Manager must survive restarts of.
type httpTarget struct {
	name  string
	start func(t testing.TB) restartableServer
	kind  mcphttp.Kind
	// opts are the Manager's HTTP options for this target (WithHTTPOptions).
	opts []mcphttp.Option
	// blindLegacy pins the blind dialer (which bypasses the Manager's own
	// -32022 fallback) to the initialize handshake.
	blindLegacy bool
	// wantLegacy: the Manager settles on the initialize handshake.
	wantLegacy bool
	// unnoticed is what the first call after a restart meets when the
	// stream's loss is hidden from the Manager.
	unnoticed unnoticed
	// wantEcho is the text the echo tool answers "hi" with.
	wantEcho string
}

func goKind(k httpserver.Kind) func(t testing.TB) restartableServer {
	return func(t testing.TB) restartableServer { return httpserver.Start(t, k) }
}

func everythingMode(mode string) func(t testing.TB) restartableServer {
	return func(t testing.TB) restartableServer { return httpserver.StartEverything(t, mode) }
}

// httpTargets lists every server kind issue 4 names, in the configuration a
// host would use (no options), plus mcp-go's stateful server pinned to the
// handshake, the only protocol on which its statefulness shows.
var httpTargets = []httpTarget{
	{name: "mcpgo", start: goKind(httpserver.MCPGo), unnoticed: unnoticedOldWorks, wantEcho: "hi"},
	{name: "mcpgo-stateful", start: goKind(httpserver.MCPGoStateful), unnoticed: unnoticedOldWorks, wantEcho: "hi"},
	{name: "mcpgo-stateful-legacy", start: goKind(httpserver.MCPGoStateful), opts: []mcphttp.Option{mcphttp.WithLegacyProtocol()},
		blindLegacy: true, wantLegacy: true, unnoticed: unnoticedRetried, wantEcho: "hi"},
	// mcp-go speaks 2026-07-28 over SSE too; the session is in the POST URL.
	{name: "mcpgo-sse", start: goKind(httpserver.MCPGoSSE), kind: mcphttp.SSE, unnoticed: unnoticedRetried, wantEcho: "hi"},
	// Answers server/discover, rejects 2026-07-28 with -32022 at the first
	// real request: the Manager redials on the handshake by itself.
	{name: "gosdk-stateful", start: goKind(httpserver.GoSDKStateful), blindLegacy: true, wantLegacy: true, unnoticed: unnoticedRetried, wantEcho: "hi"},
	{name: "gosdk-stateless", start: goKind(httpserver.GoSDKStateless), unnoticed: unnoticedOldWorks, wantEcho: "hi"},
	{name: "everything-streamable", start: everythingMode(httpserver.EverythingStreamable), wantLegacy: true, unnoticed: unnoticedRetried, wantEcho: "Echo: hi"},
	{name: "everything-sse", start: everythingMode(httpserver.EverythingSSE), kind: mcphttp.SSE, wantLegacy: true, unnoticed: unnoticedHangs, wantEcho: "Echo: hi"},
}

// httpPolicy redials quickly and forever, so that a restart is picked up
// within tens of milliseconds and a long outage never exhausts the budget.
var httpPolicy = lifecycle.Policy{
	InitialInterval: 5 * time.Millisecond,
	MaxInterval:     50 * time.Millisecond,
	Jitter:          -1,
	MaxAttempts:     -1,
	ProbeInterval:   -1,
}

// httpReadyTimeout is how long a call waits for a reconnecting HTTP server
// where a test waits it out (a call during an outage gives up after it).
// A call that must succeed after a restart waits for the reconnect first,
// or under httpReadyBound: a Node server's restart and redial take more than
// a second or two under -race on a loaded machine (TestHTTPRestart failed
// so under make stress).
const (
	httpReadyTimeout = 1500 * time.Millisecond
	httpReadyBound   = 20 * time.Second
)

// newHTTPManager is a Manager for the HTTP restart tests: quick redials
// (httpPolicy), calls that wait up to httpReadyBound for a reconnect, and
// opts after those.
func newHTTPManager(t *testing.T, tt httpTarget, opts ...Option) *Manager {
	t.Helper()
	return newTestManager(t, append([]Option{WithPolicy(httpPolicy), WithTimeouts(Timeouts{Ready: httpReadyBound}),
		WithHTTPOptions(tt.opts...)}, opts...)...)
}

// mustHTTPEcho calls echo through the Manager and checks the answer.
func mustHTTPEcho(ctx context.Context, t *testing.T, m *Manager, tt httpTarget, what string) {
	t.Helper()
	res, err := m.CallTool(ctx, "s", "echo", map[string]any{"message": "hi"})
	if err != nil {
		t.Fatalf("%s: CallTool: %v", what, err)
	}
	if res.IsError || text(res) != tt.wantEcho {
		t.Fatalf("%s: CallTool = %q (IsError %v), want %q", what, text(res), res.IsError, tt.wantEcho)
	}
}

func mustHTTPStatus(t *testing.T, m *Manager) ServerStatus {
	t.Helper()
	st, err := m.Status("s")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// nthStateEvent returns the n-th state event of server "s" (0-based).
func nthStateEvent(t *testing.T, rec *recorder, n int) Event {
	t.Helper()
	i := 0
	for _, e := range rec.snapshot() {
		if e.Kind == EventState && e.Server == "s" {
			if i == n {
				return e
			}
			i++
		}
	}
	t.Fatalf("no state event #%d", n)
	return Event{}
}

// TestHTTPRestart runs every server kind through a restart on the same port
// with the Manager in front, as a host would configure it:
//
//   - calls work, on the protocol the Manager settles on by itself;
//   - the server stops: the notification stream breaks off and the slot
//     goes Reconnecting at once, without a call; the catalog stays
//     published;
//   - while it is down a call fails with *UnavailableError after the ready
//     timeout, never later;
//   - a new server starts on the same port: the host's next call succeeds,
//     with no error, on generation 2, and the events show exactly
//     Connecting → Connected → Reconnecting → Connected;
//   - the new runtime's stream carries list_changed (Go servers, which can
//     be told to add a tool).
func TestHTTPRestart(t *testing.T) {
	for _, tt := range httpTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			srv := tt.start(t)
			m := newHTTPManager(t, tt, WithTimeouts(Timeouts{Ready: httpReadyTimeout}))
			rec := record(m)
			mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL(), Kind: tt.kind}})
			mustWait(t, m, "s", lifecycle.Connected)
			mustHTTPEcho(ctx, t, m, tt, "before the restart")
			st := mustHTTPStatus(t, m)
			if st.Generation != 1 || mcp.IsModernProtocol(st.Protocol) == tt.wantLegacy {
				t.Fatalf("generation %d protocol %q, want generation 1, legacy %v", st.Generation, st.Protocol, tt.wantLegacy)
			}
			t.Logf("connected on protocol %s", st.Protocol)

			// Stop: the stream's loss alone moves the slot.
			stopped := time.Now()
			srv.Stop()
			rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting")
			lost := nthStateEvent(t, rec, 2)
			t.Logf("Reconnecting %v after the stop: %v", lost.Time.Sub(stopped).Round(time.Microsecond), lost.Err)
			if !errors.Is(lost.Err, mcphttp.ErrStreamLost) || lost.Generation != 1 {
				t.Errorf("Reconnecting event: generation %d cause %v, want generation 1 and ErrStreamLost", lost.Generation, lost.Err)
			}
			if _, ok := m.View().Tool("s__echo"); !ok {
				t.Errorf("s__echo unpublished while Reconnecting; the last good catalog must stay")
			}

			// Down: the call waits for the ready timeout, then gives up.
			downCtx, cancel := context.WithTimeout(ctx, httpReadyTimeout+5*time.Second)
			start := time.Now()
			_, err := m.CallTool(downCtx, "s", "echo", map[string]any{"message": "hi"})
			took, ctxErr := time.Since(start), downCtx.Err()
			cancel()
			var ue *UnavailableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("call while down: %v, want *UnavailableError", err)
			}
			if ctxErr != nil || took < httpReadyTimeout-50*time.Millisecond {
				t.Errorf("call while down returned after %v, want the ready timeout %v", took, httpReadyTimeout)
			}
			if ue.State != lifecycle.Reconnecting || ue.Generation != 1 || !httpNotSent(ue.Cause) {
				t.Errorf("UnavailableError %+v: want Reconnecting, generation 1, a refused dial as cause", ue)
			}
			t.Logf("call while down: %v after %v", err, took.Round(time.Millisecond))

			// Restart on the same port: the Manager reconnects by itself
			// (no call asks it to), and the next call simply works. Waited
			// for, not raced: this Manager's calls give up after the short
			// httpReadyTimeout, less than a loaded machine's Node restart.
			srv.Restart(t)
			restarted := time.Now()
			rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
			t.Logf("Connected again %v after the restart", time.Since(restarted).Round(time.Microsecond))
			mustHTTPEcho(ctx, t, m, tt, "after the restart")
			if st := mustHTTPStatus(t, m); st.Generation != 2 || st.State != lifecycle.Connected {
				t.Errorf("after the restart: %v generation %d, want Connected generation 2", st.State, st.Generation)
			}
			if e := nthStateEvent(t, rec, 3); e.Generation != 2 {
				t.Errorf("Connected event of generation %d, want 2", e.Generation)
			}
			mustHTTPEcho(ctx, t, m, tt, "again")

			// The new runtime listens again: list_changed from the new
			// server reaches generation 2 and republishes its catalog.
			if gs, ok := srv.(*httpserver.Server); ok {
				gs.NotifyToolsChanged()
				e := rec.wait(t, func(e Event) bool {
					return e.Kind == EventCatalog && e.Diff != nil && slices.Contains(e.Diff.Added, "s__extra1")
				})
				if e.Generation != 2 {
					t.Errorf("catalog refresh on generation %d, want 2", e.Generation)
				}
			}
		})
	}
}

// blindConn hides the notification stream's loss from the Manager, as if
// the server offered no stream: the restart shows only at the next call.
type blindConn struct{ *mcphttp.Conn }

func (blindConn) Done() <-chan struct{} { return nil }
func (blindConn) Err() error            { return nil }

// blindDialer dials through the HTTP transport and blinds each Conn. The
// Manager's own -32022 fallback does not reach a Dialer, so a server that
// needs the handshake gets it pinned here.
type blindDialer struct {
	spec   mcphttp.Spec
	legacy bool
	last   atomic.Pointer[mcphttp.Conn] // the newest Conn, unblinded
}

func (d *blindDialer) dial(ctx context.Context) (transport.Conn, error) {
	opts := []mcphttp.Option{mcphttp.WithLogger(nil)}
	if d.legacy {
		opts = append(opts, mcphttp.WithLegacyProtocol())
	}
	c, err := mcphttp.Dial(ctx, d.spec, opts...)
	if err != nil {
		return nil, err
	}
	d.last.Store(c)
	return blindConn{c}, nil
}

// awaitDead waits until the newest Conn itself knows its server is gone.
// The Conn then has dropped its idle keep-alive connections, so the next
// request opens a new one to whatever listens now: what a server without a
// stream looks like once Go's pool noticed the old connections closing.
func (d *blindDialer) awaitDead(ctx context.Context, t testing.TB) {
	t.Helper()
	select {
	case <-d.last.Load().Done():
	case <-ctx.Done():
		t.Fatal("the Conn did not notice the stop")
	}
}

// TestHTTPRestartUnnoticed shows what the first call after a restart meets
// when nothing told the Manager the stream was lost, as with a server that
// offers no stream. (A call that merely races the stream's loss within the
// first millisecond is another story: it usually goes out on a keep-alive
// connection to the dead server and fails with EOF, outcome unknown; see
// BenchmarkHTTPRestart path=immediate.)
//
//   - retried: the server rejects the stale session; the Manager replaces
//     the runtime and retries the call once, and the host sees no error;
//   - old-works: the call succeeds on the old runtime (no session to
//     forget), so there is nothing to replace;
//   - hangs: server-everything's SSE transport never answers; the call ends
//     with its context and the Manager cannot tell. Only stream loss saves
//     that server (TestHTTPRestart).
func TestHTTPRestartUnnoticed(t *testing.T) {
	for _, tt := range httpTargets {
		t.Run(tt.name+"/"+tt.unnoticed.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			srv := tt.start(t)
			m := newHTTPManager(t, tt)
			rec := record(m)
			d := &blindDialer{spec: mcphttp.Spec{URL: srv.URL(), Kind: tt.kind}, legacy: tt.blindLegacy}
			mustAdd(t, m, "s", ServerSpec{Dialer: d.dial})
			mustWait(t, m, "s", lifecycle.Connected)
			mustHTTPEcho(ctx, t, m, tt, "before the restart")

			srv.Stop()
			d.awaitDead(ctx, t)
			srv.Restart(t)
			switch tt.unnoticed {
			case unnoticedRetried:
				mustHTTPEcho(ctx, t, m, tt, "after the restart")
				rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
				lost := nthStateEvent(t, rec, 2)
				if !httpStale(lost.Err) || !errors.Is(lost.Err, mcptransport.ErrSessionTerminated) || lost.Generation != 1 {
					t.Errorf("Reconnecting event: generation %d cause %v, want generation 1 and a stale session", lost.Generation, lost.Err)
				}
				t.Logf("stale session, retried: %v", lost.Err)
				if st := mustHTTPStatus(t, m); st.Generation != 2 {
					t.Errorf("generation %d, want 2", st.Generation)
				}
			case unnoticedOldWorks:
				mustHTTPEcho(ctx, t, m, tt, "after the restart")
				if st := mustHTTPStatus(t, m); st.Generation != 1 || st.State != lifecycle.Connected {
					t.Errorf("%v generation %d, want Connected generation 1: nothing to replace", st.State, st.Generation)
				}
				// Events arrive asynchronously: wait for the two, then see
				// that nothing came after them.
				rec.waitStates(t, "s", "Connecting", "Connected")
				if got := states(rec.snapshot(), "s"); len(got) != 2 {
					t.Errorf("states %v, want Connecting, Connected only", got)
				}
			case unnoticedHangs:
				callCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				_, err := m.CallTool(callCtx, "s", "echo", map[string]any{"message": "hi"})
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || httpStale(err) {
					t.Errorf("call after the restart: %v, want only the caller's deadline", err)
				}
				if st := mustHTTPStatus(t, m); st.Generation != 1 || st.State != lifecycle.Connected {
					t.Errorf("%v generation %d, want Connected generation 1", st.State, st.Generation)
				}
				t.Logf("unanswered: %v", err)
			}
		})
	}
}

// TestHTTPLateStaleSessionFromOldGeneration delivers failures of generation
// 1 (a real stale-session rejection from the restarted server among them)
// after generation 2 is installed: none touches generation 2.
func TestHTTPLateStaleSessionFromOldGeneration(t *testing.T) {
	ctx := testCtx(t)
	srv := httpserver.Start(t, httpserver.GoSDKStateful)
	tt := httpTarget{wantEcho: "hi"}
	m := newHTTPManager(t, tt)
	rec := record(m)
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: srv.URL()}})
	mustWait(t, m, "s", lifecycle.Connected)
	s, _ := m.slot("s")
	s.mu.Lock()
	old := s.lease
	s.mu.Unlock()

	// A session of the old server, to get the new server's real answer to
	// a request on a session it never knew.
	probe := &blindDialer{spec: mcphttp.Spec{URL: srv.URL()}, legacy: true}
	pconn, err := probe.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close(context.Background())
	pc := newMCPClient(t, ctx, pconn)

	srv.Stop()
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting")
	_, refused := mcphttp.Dial(ctx, mcphttp.Spec{URL: srv.URL()})
	if !httpNotSent(refused) {
		t.Fatalf("dial while down: %v, want refused", refused)
	}
	srv.Restart(t)
	mustWait(t, m, "s", lifecycle.Connected)
	s.mu.Lock()
	cur, gen := s.lease, s.gen
	s.mu.Unlock()
	if gen != 2 || cur == old {
		t.Fatalf("generation %d after the restart, want 2", gen)
	}

	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "hi"}
	_, stale := pc.CallTool(ctx, req)
	if !httpStale(stale) {
		t.Fatalf("old session on the new server: %v, want a stale session", stale)
	}

	for _, late := range []struct {
		name string
		err  error
		want outcome
	}{
		{"stale session from the new server", stale, outcomeNotSent},
		{"session terminated", mcptransport.ErrSessionTerminated, outcomeNotSent},
		{"stream lost", connLost(old.conn), outcomeLost},
		{"connection refused", refused, outcomeNotSent},
	} {
		t.Run(late.name, func(t *testing.T) {
			// As mcp-go hands them on: every failure under the client is
			// wrapped in *mcptransport.Error.
			if got := classify(ctx, old.conn, mcptransport.NewError(late.err)); got != late.want {
				t.Errorf("classify(%v) = %d, want %d", late.err, got, late.want)
			}
			// What do() and the watcher do with a failure of a lease.
			s.lost(old, late.err)
			s.timedOut(old, late.err)
			s.mu.Lock()
			state, lease, g := s.state, s.lease, s.gen
			s.mu.Unlock()
			if state != lifecycle.Connected || lease != cur || g != 2 {
				t.Fatalf("after a late %q from generation 1: %v generation %d (same lease %v), want Connected generation 2",
					late.name, state, g, lease == cur)
			}
		})
	}
	mustHTTPEcho(ctx, t, m, tt, "on generation 2")
	rec.waitStates(t, "s", "Connecting", "Connected", "Reconnecting", "Connected")
	if st := mustHTTPStatus(t, m); st.Generation != 2 {
		t.Errorf("generation %d, want 2", st.Generation)
	}
}

// newMCPClient starts an mcp-go client on conn and runs the handshake.
func newMCPClient(t *testing.T, ctx context.Context, conn transport.Conn) *mcpclient.Client {
	t.Helper()
	c := mcpclient.NewClient(conn.Transport())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// httpNotSent and httpStale are what the Manager learns of an HTTP
// failure through the Conn's transport.Classifier and the sentinels.
func httpNotSent(err error) bool {
	return errors.Is(err, transport.ErrNotSent) || failure.NeverSent(err)
}

func httpStale(err error) bool {
	return errors.Is(err, mcphttp.ErrStaleSession) || errors.Is(err, mcptransport.ErrSessionTerminated)
}
