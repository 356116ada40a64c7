package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/tsclient"
)

// downstream is an MCP client of the gateway, as the target test drives
// it.
type downstream interface {
	list(ctx context.Context) ([]string, error)
	call(ctx context.Context, tool string, args map[string]any) (text string, isError bool, err error)
	// listChanged delivers each tools/list_changed the client got; nil
	// for a client that keeps no session (the Inspector CLI, one process
	// per request).
	listChanged() <-chan struct{}
}

// upstreams are the three servers behind the gateway in the target test:
// st, the fault server over stdio (the gateway's child), and h1 and h2,
// mcp-go over streamable HTTP on ports of their own, restartable in place.
// Each offers an echo that declares readOnlyHint, so the gateway replays a
// call of it lost in a crash.
type upstreams struct {
	c      *cli
	h1, h2 *httpserver.Server
	extras int // tools added to h1 (the server numbers them across restarts)
}

func newUpstreams(t *testing.T) *upstreams {
	u := &upstreams{c: newCLI(t), h1: startFixed(t), h2: startFixed(t)}
	u.c.writeConfig(map[string]any{
		"st": faultEntry(faultserver.ModeNormal, nil),
		"h1": map[string]any{"url": u.h1.URL()},
		"h2": map[string]any{"url": u.h2.URL()},
	})
	return u
}

// fixedPorts counts the ports startFixed has tried in this process: each
// try takes the next, so the subtests of TestRealClients, which run in
// parallel, never try a port another one holds or has stopped to restart
// on.
var fixedPorts atomic.Int64

// startFixed starts an HTTP upstream on a port below the kernel's range
// of ephemeral ports (Linux's is 32768-60999): while it is stopped for a
// restart, a client connection of the many processes the test starts
// could otherwise take its port, and it could not come back on it.
func startFixed(t *testing.T) *httpserver.Server {
	t.Helper()
	for range 200 {
		i := int(fixedPorts.Add(1))
		port := 20000 + (os.Getpid()*7+i*131)%12000
		s, err := httpserver.Listen(httpserver.MCPGoReadOnly, "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return nil
}

// echo is the call of each upstream's echo with text.
func echo(server, text string) (string, map[string]any) {
	if server == "st" {
		return "st__echo", map[string]any{"text": text}
	}
	return server + "__echo", map[string]any{"message": text}
}

// runProc runs mcpfleet with args in a process of its own, in the
// upstreams' state directory: cli.run would set the variable with
// t.Setenv, which a parallel test may not.
func (u *upstreams) runProc(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	cmd := u.c.commandContext(ctx, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpfleet %v: %v\n%s%s", args, err, out, stderr.String())
	}
	return string(out)
}

// killStdio kills the stdio upstream of the gateway: its pid comes from a
// call of its tool pid, through the running serve's admin endpoint.
func (u *upstreams) killStdio(ctx context.Context, t *testing.T) {
	t.Helper()
	out := u.runProc(ctx, t, "call", "st__pid", "{}")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid of st: %q", out)
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// workCtx is the context of the target's work: the work is bounded by
// rounds of faults (and each call by the gateway's own timeouts), not by
// time, so it ends only shortly before the test binary's deadline
// (go test -timeout), or after 10 minutes without one. A shared two-minute
// context ran out on a loaded machine for the Inspector CLI over stdio,
// which starts a node process and a whole serve per request: slow there,
// never wrong.
func workCtx(t *testing.T) context.Context {
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Minute)
	} else {
		deadline = deadline.Add(-max(30*time.Second, time.Until(deadline)/20)) // time to report
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// waitTools waits until d lists tools that satisfy ok, each listing after
// a tools/list_changed when d keeps a session: so a change that never
// announces itself fails the test.
func waitTools(ctx context.Context, t *testing.T, d downstream, what string, ok func([]string) bool) {
	t.Helper()
	ch := d.listChanged()
	for {
		if ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("no tools/list_changed for %s", what)
			}
		}
		names, err := d.list(ctx)
		if err != nil {
			t.Fatalf("list for %s: %v", what, err)
		}
		if ok(names) {
			return
		}
		if ch == nil && ctx.Err() != nil {
			t.Fatalf("the tools never showed %s: %v", what, names)
		}
	}
}

// drain discards the list_changed notifications received so far.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// exercise is the target: d lists and calls the tools of three upstreams
// while they are killed and restarted, and must see no error for those
// calls (they are read-only: the gateway replays one lost in a crash, and
// one made during a restart waits for it), and a list_changed after each
// change of the catalog. killStdio says whether the stdio upstream is one
// that lives through the test (not for a client that starts a gateway per
// request).
func exercise(t *testing.T, u *upstreams, d downstream, workers int, killStdio bool) {
	ctx := workCtx(t)
	names, err := d.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"st__echo", "h1__echo", "h2__echo"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}

	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []string
		counts = map[string]int{}
		calls  = newInFlight(workers)
	)
	for w := range workers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				srv := []string{"st", "h1", "h2"}[(i+w)%3]
				text := fmt.Sprintf("w%d-%d", w, i)
				tool, args := echo(srv, text)
				calls.begin(w)
				got, isErr, err := d.call(ctx, tool, args)
				calls.end(w)
				mu.Lock()
				switch {
				case err != nil && ctx.Err() != nil:
					// The test's time is up: one error says so, and the
					// worker stops instead of failing call after call.
					errs = append(errs, fmt.Sprintf("%s: the test ran out of time: %v", tool, err))
					mu.Unlock()
					return
				case err != nil:
					errs = append(errs, fmt.Sprintf("%s: %v", tool, err))
				case isErr || got != text:
					errs = append(errs, fmt.Sprintf("%s: %q (isError %v)", tool, got, isErr))
				default:
					counts[srv]++
				}
				mu.Unlock()
			}
		})
	}

	// Each fault on a server comes once the calls that were in flight at
	// the one before have ended: a call is replayed once, so two faults in
	// a row on the same call could lose it twice, which the replay rule
	// does not cover. A call goes to one server, so the first faults of a
	// round, one on each server, come together; the wait for the calls in
	// flight at them runs beside the wait for the tools, and ends before
	// the next fault. Most of the test's time is spent on the Inspector
	// CLI's processes, one per request: waits on them side by side cost
	// one process's time, one after the other each costs its own.
	faults := func(fs ...func()) inFlightMark {
		for _, f := range fs {
			f()
		}
		return calls.mark()
	}
	ch := d.listChanged()
	for round := range 3 {
		var group []func()
		if killStdio {
			group = append(group, func() { u.killStdio(ctx, t) })
		}
		group = append(group, func() { u.h1.Restart(t) }, func() { u.h2.Restart(t) })
		m := faults(group...)
		// A change of h1's catalog: a tool added, announced.
		drain(ch)
		u.h1.NotifyToolsChanged()
		u.extras++
		extra := "h1__extra" + strconv.Itoa(u.extras)
		waitTools(ctx, t, d, "round "+strconv.Itoa(round)+": "+extra+" added", func(n []string) bool { return slices.Contains(n, extra) })
		calls.settle(ctx, t, m)
		// And the restart takes it away again.
		drain(ch)
		m = faults(func() { u.h1.Restart(t) })
		waitTools(ctx, t, d, "round "+strconv.Itoa(round)+": "+extra+" gone with the restart", func(n []string) bool {
			return !slices.Contains(n, extra) && slices.Contains(n, "h1__echo")
		})
		calls.settle(ctx, t, m)
	}
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("%d calls failed (of %v that succeeded), for example:\n%s", len(errs), counts,
			strings.Join(errs[:min(len(errs), 10)], "\n"))
	}
	for _, srv := range []string{"st", "h1", "h2"} {
		if counts[srv] == 0 && workers > 0 {
			t.Errorf("no call of %s succeeded: %v", srv, counts)
		}
	}
	t.Logf("calls: %v", counts)
	if !killStdio {
		return // no serve lives through the test to ask
	}
	// The faults did happen: the serve replaced the upstreams' runtimes.
	out := u.runProc(ctx, t, "status", "--json")
	var doc struct{ Servers []admin.ServerReport }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status: %v: %s", err, out)
	}
	want := map[string]uint64{"st": 3, "h1": 6, "h2": 3}
	for _, r := range doc.Servers {
		if r.Reconnects < want[r.Name] {
			t.Errorf("%s reconnected %d times, want at least %d", r.Name, r.Reconnects, want[r.Name])
		}
		t.Logf("%s: %d requests, %d failed, %d reconnects, %d sent again", r.Name, r.Requests, r.Failed, r.Reconnects, r.Retries)
	}
}

// inFlight counts each worker's calls begun and ended, so that a test can
// wait for the calls in flight at a moment to end.
type inFlight struct {
	mu       sync.Mutex
	begun    []int
	ended    []int
	progress chan struct{} // closed and replaced at each end
}

func newInFlight(workers int) *inFlight {
	return &inFlight{begun: make([]int, workers), ended: make([]int, workers), progress: make(chan struct{})}
}

func (f *inFlight) begin(w int) {
	f.mu.Lock()
	f.begun[w]++
	f.mu.Unlock()
}

func (f *inFlight) end(w int) {
	f.mu.Lock()
	f.ended[w]++
	close(f.progress)
	f.progress = make(chan struct{})
	f.mu.Unlock()
}

// inFlightMark is how many calls each worker had begun at a moment.
type inFlightMark []int

// mark returns how many calls each worker has begun so far.
func (f *inFlight) mark() inFlightMark {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.begun)
}

// settle waits until every call begun before the mark has ended.
func (f *inFlight) settle(ctx context.Context, t *testing.T, want inFlightMark) {
	t.Helper()
	for {
		f.mu.Lock()
		done := true
		for w := range want {
			done = done && f.ended[w] >= want[w]
		}
		ch := f.progress
		f.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("calls in flight never ended")
		}
	}
}

// TestRealClients is the gateway's target: three real MCP clients,
// unmodified (mcp-go's, the TypeScript SDK's, the MCP Inspector CLI), over
// stdio and streamable HTTP, list and call the tools of three upstreams
// (stdio and HTTP) while the upstreams are killed and restarted.
//
// Each subtest has upstreams, a config, a state directory and serves of
// its own, and sets no variable of this process (runProc, not cli.run):
// they run in parallel, with each other and with the package's other
// parallel tests. Most of their time is spent waiting for processes
// (the Inspector CLI starts node and a serve per request).
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	t.Parallel()
	for _, tr := range []string{"stdio", "http"} {
		t.Run("mcp-go/"+tr, func(t *testing.T) {
			t.Parallel()
			u := newUpstreams(t)
			exercise(t, u, newMCPGoDownstream(t, u.c, tr), 3, true)
		})
		t.Run("typescript-sdk/"+tr, func(t *testing.T) {
			t.Parallel()
			u := newUpstreams(t)
			exercise(t, u, newTSDownstream(t, u.c, tr), 3, true)
		})
		t.Run("inspector-cli/"+tr, func(t *testing.T) {
			t.Parallel()
			u := newUpstreams(t)
			d := newInspectorDownstream(t, u.c, tr)
			// Over stdio each request of the Inspector CLI starts a gateway
			// of its own (and its stdio upstream): only the HTTP upstreams
			// live through the test.
			exercise(t, u, d, 1, tr == "http")
		})
	}
}

// mcpGoDownstream is mcp-go's client.
type mcpGoDownstream struct {
	c       *mcpclient.Client
	changed chan struct{}
}

func newMCPGoDownstream(t *testing.T, c *cli, tr string) downstream {
	ctx := testCtx(t)
	var mc *mcpclient.Client
	var err error
	if tr == "stdio" {
		mc, err = mcpclient.NewStdioMCPClient(os.Args[0], c.env(), "serve", "--stdio", "--config", c.config)
		if err != nil {
			t.Fatal(err)
		}
		if err := mc.Start(ctx); err != nil { // the transport runs: this sets the client's handlers
			t.Fatal(err)
		}
	} else {
		s := c.startServe()
		tp, err := transport.NewStreamableHTTP(s.url, transport.WithLogger(slog.New(slog.DiscardHandler)),
			transport.WithHTTPHeaders(map[string]string{"Authorization": s.authHeader()}))
		if err != nil {
			t.Fatal(err)
		}
		mc = mcpclient.NewClient(tp)
		if err := mc.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { mc.Close() })
	d := &mcpGoDownstream{c: mc, changed: make(chan struct{}, 64)}
	acked := make(chan struct{}, 1)
	mc.OnNotification(func(n mcp.JSONRPCNotification) {
		switch mcp.MCPMethod(n.Method) {
		case mcp.MethodNotificationToolsListChanged:
			d.changed <- struct{}{}
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			acked <- struct{}{}
		}
	})
	if _, err := mc.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	// mcp-go speaks 2026-07-28, where notifications come on a listen
	// stream the client opens.
	stop, err := mc.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatal("the listen stream was never acknowledged")
	}
	return d
}

func (d *mcpGoDownstream) list(ctx context.Context) ([]string, error) {
	res, err := d.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (d *mcpGoDownstream) call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := d.c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, nil
}

func (d *mcpGoDownstream) listChanged() <-chan struct{} { return d.changed }

// tsDownstream is the TypeScript SDK's client.
type tsDownstream struct {
	c       *tsclient.Client
	changed chan struct{}
}

func newTSDownstream(t *testing.T, c *cli, tr string) downstream {
	var tc *tsclient.Client
	if tr == "stdio" {
		tc = tsclient.StartStdio(t, c.env(), os.Args[0], "serve", "--stdio", "--config", c.config)
	} else {
		s := c.startServe()
		tc = tsclient.StartHTTPWithToken(t, s.url, s.token)
	}
	d := &tsDownstream{c: tc, changed: make(chan struct{}, 64)}
	go func() {
		for e := range tc.Events {
			if e == "tools/list_changed" {
				d.changed <- struct{}{}
			}
		}
	}()
	return d
}

func (d *tsDownstream) list(ctx context.Context) ([]string, error) { return d.c.ListTools(ctx) }

func (d *tsDownstream) call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	res, err := d.c.Call(ctx, tool, args)
	return res.Text(), res.IsError, err
}

func (d *tsDownstream) listChanged() <-chan struct{} { return d.changed }

// inspectorDownstream is the MCP Inspector CLI: a process per request.
type inspectorDownstream struct {
	bin, dir string
	target   []string
	env      []string
}

func newInspectorDownstream(t *testing.T, c *cli, tr string) downstream {
	bin := npmtest.Bin(t, "mcp-inspector-cli")
	d := &inspectorDownstream{bin: bin,
		// The CLI (1.0.3) finds its package.json as ../package.json of its
		// working directory.
		dir: filepath.Join(npmtest.Root(), npmtest.Dir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build")}
	if tr == "stdio" {
		// The config comes from the environment: the CLI would take a
		// --config as its own, and serves stdio by default.
		d.target = []string{os.Args[0], "serve"}
		d.env = append(c.env(), "MCPFLEET_CONFIG="+c.config)
	} else {
		s := c.startServe()
		d.target = []string{s.url, "--header", "Authorization: " + s.authHeader()}
	}
	return d
}

func (d *inspectorDownstream) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.bin, append(append([]string{"--cli"}, d.target...), args...)...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), d.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !json.Valid(out) {
		return nil, fmt.Errorf("inspector %v: %v %s\n%s", args, err, out, stderr.String())
	}
	return out, nil
}

func (d *inspectorDownstream) list(ctx context.Context) ([]string, error) {
	out, err := d.run(ctx, "--method", "tools/list")
	if err != nil {
		return nil, err
	}
	var res struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (d *inspectorDownstream) call(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	argv := []string{"--method", "tools/call", "--tool-name", tool}
	for k, v := range args {
		argv = append(argv, "--tool-arg", fmt.Sprintf("%s=%v", k, v))
	}
	out, err := d.run(ctx, argv...)
	if err != nil {
		return "", false, err
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String(), res.IsError, nil
}

func (d *inspectorDownstream) listChanged() <-chan struct{} { return nil }
