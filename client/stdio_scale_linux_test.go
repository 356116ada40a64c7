//go:build linux

package client

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// scaleBound bounds every wait of the scale tests. It is a bound, not an
// expectation: a -race run on a busy 2-core machine is several times
// slower than an idle one, and the times are logged.
const scaleBound = 5 * time.Minute

// dialCounter counts the Manager's dials in progress and keeps the most
// it saw at once. A dial counts from the moment its Dialer runs (after it
// took its place under WithMaxConcurrentDials) to the moment the server
// answered tools/list or a request of the handshake failed (before it
// gives its place back): a part of the dial, so the count can only be
// below the true one, never above.
type dialCounter struct {
	active, peak, dials atomic.Int64
	mu                  sync.Mutex
	pids                []int // every child spawned
}

// wrap makes the Manager's stdio dials count. Everything else about them
// is what the Manager would do.
func (dc *dialCounter) wrap(m *Manager) {
	o := m.opts
	o.dialOverride = nil
	m.opts.dialOverride = func(spec ServerSpec) Dialer {
		if spec.Stdio == nil {
			return nil
		}
		inner := spec.dialer(&o, false, o.limits, nil, nil)
		return func(ctx context.Context) (transport.Conn, error) {
			dc.dials.Add(1)
			n := dc.active.Add(1)
			for p := dc.peak.Load(); n > p && !dc.peak.CompareAndSwap(p, n); p = dc.peak.Load() {
			}
			end := sync.OnceFunc(func() { dc.active.Add(-1) })
			c, err := inner(ctx)
			if err != nil {
				end()
				return nil, err
			}
			dc.mu.Lock()
			dc.pids = append(dc.pids, c.(*stdio.Conn).PID())
			dc.mu.Unlock()
			return &countedConn{Conn: c, end: end}, nil
		}
	}
}

// countedConn ends its dial's count (see dialCounter).
type countedConn struct {
	transport.Conn
	end func()
}

func (c *countedConn) Transport() mcptransport.Interface {
	return &countedTransport{BidirectionalInterface: c.Conn.Transport().(mcptransport.BidirectionalInterface), end: c.end}
}

func (c *countedConn) Close(ctx context.Context) error {
	c.end()
	return c.Conn.Close(ctx)
}

type countedTransport struct {
	mcptransport.BidirectionalInterface
	end func()
}

func (t *countedTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	resp, err := t.BidirectionalInterface.SendRequest(ctx, req)
	if err != nil || req.Method == "tools/list" {
		t.end()
	}
	return resp, err
}

// TestStdioScale: 300 stdio servers (the official Go SDK's, a process
// each) are added at once; all become Connected, never more than the dial
// limit dialling at once; each answers a call; Close reaps every child and
// its guard, and gives back every file descriptor and goroutine.
func TestStdioScale(t *testing.T) {
	const n, limit = 300, 8
	inv, err := gosdkserver.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ignore := goleak.IgnoreCurrent()
	threadsBefore := threads(t)
	fdsBefore, err := proctest.OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaleBound)
	defer cancel()

	m := newTestManager(t, WithMaxConcurrentDials(limit), WithTimeouts(Timeouts{IdleProbe: -1}),
		// Bounds, so that a failure shows as one rather than as a hang.
		WithTimeouts(Timeouts{Ready: scaleBound, Dial: scaleBound, Close: scaleBound}),
		WithPolicy(lifecycle.Policy{InitialInterval: 10 * time.Millisecond, MaxInterval: time.Second, MaxAttempts: -1, ProbeInterval: -1}))
	var dc dialCounter
	dc.wrap(m)
	rec := record(m)

	start := time.Now()
	for i := range n {
		mustAdd(t, m, fmt.Sprintf("s%03d", i), ServerSpec{Stdio: &stdio.Spec{Command: inv.Path}})
	}
	added := time.Since(start)
	for i := range n {
		if err := m.WaitFor(ctx, fmt.Sprintf("s%03d", i), lifecycle.Connected); err != nil {
			t.Fatalf("%v (%d dials, %d of %d connected)", err, dc.dials.Load(), connected(m), n)
		}
	}
	took := time.Since(start)
	fdsConnected, err := proctest.OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	kids, err := proctest.Children()
	if err != nil {
		t.Fatal(err)
	}
	st := m.Stats().Total
	t.Logf("%d servers: Add %v, all Connected after %v; %d dials (%d failed), at most %d at once (limit %d); "+
		"%d open files (%.1f a server), %d child processes, %d threads (%d before), %d goroutines",
		n, added, took, st.Dials, st.DialFailures, dc.peak.Load(), limit,
		len(fdsConnected), float64(len(fdsConnected)-len(fdsBefore))/n, len(kids),
		threads(t), threadsBefore, runtime.NumGoroutine())
	// One OS thread a child at most (its exit watcher's wait), and some to
	// spare for what the dials left idle. The runtime keeps the threads it
	// made, so after earlier tests this bounds only the growth; run alone,
	// a second thread a child (as the guard's reaper held) fails it.
	if th := threads(t) - threadsBefore; th > n+100 {
		t.Errorf("%d more threads with %d children, want at most one a child", th, n)
	}
	if p := dc.peak.Load(); p > limit || p < 2 {
		t.Errorf("at most %d dials at once, want 2..%d (WithMaxConcurrentDials)", p, limit)
	}
	// One server and one guard each.
	if len(kids) != 2*n {
		t.Errorf("%d child processes, want %d (a server and its guard for each)", len(kids), 2*n)
	}

	// Each server answers, over its own process.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	callStart := time.Now()
	for i := range n {
		g.Go(func() error {
			want := fmt.Sprint(i)
			res, err := m.CallTool(gctx, fmt.Sprintf("s%03d", i), "echo", map[string]any{"text": want})
			if err != nil || text(res) != want {
				return fmt.Errorf("s%03d: echo = %q, %v", i, text(res), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls, 32 at a time: %v", n, time.Since(callStart))

	closeStart := time.Now()
	closeAndCheck(t, m, rec, dc.pids...)
	t.Logf("Close: %v", time.Since(closeStart))
	proctest.NoChildren(t)
	fdsAfter, err := proctest.OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	// Close must leave no file open that was not open before. A file of an
	// earlier test may close meanwhile (a connection it dropped, closed by
	// its finalizer when a collection finds it), so the two lists need not
	// be equal.
	if left := slices.DeleteFunc(slices.Clone(fdsAfter), func(fd int) bool { return slices.Contains(fdsBefore, fd) }); len(left) > 0 {
		t.Errorf("files %v left open by Close (open files %v before, %v after)", left, fdsBefore, fdsAfter)
	}
	goleak.VerifyNone(t, ignore)
}

// threads returns how many OS threads this process has.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// connected counts the Connected servers.
func connected(m *Manager) int {
	n := 0
	for _, st := range m.Statuses() {
		if st.State == lifecycle.Connected {
			n++
		}
	}
	return n
}
