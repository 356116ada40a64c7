package generations

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// running is a member of the fleet as the test runs it.
type running struct {
	Member
	http *httpserver.Node // the HTTP servers' process; nil for stdio
}

// TestEveryGeneration keeps the whole fleet with one Manager: every server
// connects on its protocol; then every one is restarted at once (a stdio
// server exits, an HTTP server's process is killed and started again on
// its port) and the Manager brings each back on a new runtime, where it
// calls, lists and gets list_changed; the task servers (2025-11-25 tasks on
// mcp-go, the 2026-07-28 tasks extension) run a task before and after
// theirs.
func TestEveryGeneration(t *testing.T) {
	node, _ := npmtest.File(t, "sdk-1-0/package.json")
	npmtest.File(t, "sdk-1-12/package.json")
	npmtest.File(t, "sdk-1-22/package.json")
	script := filepath.Join(npmtest.Root(), npmtest.Dir, "generations", "server.mjs")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bins, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	var fleet []*running
	specs := map[string]client.ServerSpec{}
	for _, mb := range Fleet {
		r := &running{Member: mb}
		path, args := node, []string{script, mb.NPM, mb.Transport}
		if mb.Go != "" {
			path, args = bins[mb.Go], nil
		}
		var spec client.ServerSpec
		switch mb.Transport {
		case "stdio":
			spec.Stdio = &stdio.Spec{Command: path, Args: args, Env: map[string]string{"PORT": "", "MCP_PORT": ""}}
		default:
			r.http = httpserver.StartProgram(t, path, args, "listening on port")
			if mb.Transport == "sse" {
				spec.HTTP = &mcphttp.Spec{URL: r.http.URL("/sse"), Kind: mcphttp.SSE}
			} else {
				spec.HTTP = &mcphttp.Spec{URL: r.http.URL("/mcp")}
			}
		}
		specs[mb.Name] = spec
		fleet = append(fleet, r)
	}
	tasks := taskserver.New()
	defer tasks.Close()
	ext := taskserver.NewExt(100 * time.Millisecond)
	defer ext.Close()
	specs["tasks-2025-11-25"] = client.ServerSpec{HTTP: &mcphttp.Spec{URL: taskserver.StartHTTP(t, tasks).URL()}}
	specs["tasks-2026-07-28"] = client.ServerSpec{HTTP: &mcphttp.Spec{URL: taskserver.StartHTTP(t, ext).URL()}}

	m := client.New(client.WithTimeouts(client.Timeouts{Drain: time.Second}))
	defer func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	events, _ := m.Events(1 << 14)
	began := time.Now()
	for name, spec := range specs {
		if err := m.Add(ctx, name, spec); err != nil {
			t.Fatalf("Add %s: %v", name, err)
		}
	}
	each(t, fleet, func(r *running) error {
		if err := m.WaitFor(ctx, r.Name, lifecycle.Connected); err != nil {
			return fmt.Errorf("%v%s", err, r.output())
		}
		st, _ := m.Status(r.Name)
		if st.Protocol != r.Protocol {
			return fmt.Errorf("speaks %s, want %s", st.Protocol, r.Protocol)
		}
		return echo(ctx, m, r.Name, "before")
	})
	for _, name := range []string{"tasks-2025-11-25", "tasks-2026-07-28"} {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	runTasks(ctx, t, m, tasks, ext, "before")
	t.Logf("%d servers connected and answered in %v", len(specs), time.Since(began).Round(time.Millisecond))

	// Every server restarted at once, mid-run.
	// A server that checks no session id may be found again on the same
	// runtime (a blip); the checks after the restart hold it to answer
	// from the new process all the same.
	gens := map[string]uint64{}
	for _, r := range fleet {
		if r.ChecksNoSessionID {
			continue
		}
		st, _ := m.Status(r.Name)
		gens[r.Name] = st.Generation
	}
	restarted := time.Now()
	each(t, fleet, func(r *running) error {
		if r.http != nil {
			r.http.Restart(t)
			return nil
		}
		// A stdio server exits (status 3) once it answered.
		_, err := m.CallTool(ctx, r.Name, "crash", nil)
		return err
	})
	tasks.Restart()
	ext.Restart()
	// A server whose restart the Manager cannot see (no notification
	// stream) would be found only at its next call: that is a failure
	// here, within a minute.
	backCtx, cancelBack := context.WithTimeout(ctx, time.Minute)
	defer cancelBack()
	awaitNewRuntimes(backCtx, t, m, events, gens)
	t.Logf("every server back on a new runtime %v after the restarts", time.Since(restarted).Round(time.Millisecond))

	// On the new runtime: call, list, list_changed.
	each(t, fleet, func(r *running) error {
		if err := echo(ctx, m, r.Name, "after"); err != nil {
			return err
		}
		c, ok := m.View().Catalog(r.Name)
		if !ok || !hasTools(c.Tools(), "echo", "grow", "crash") {
			return fmt.Errorf("catalog after the restart: %v", toolNames(c.Tools()))
		}
		if _, err := m.CallTool(ctx, r.Name, "grow", nil); err != nil {
			return fmt.Errorf("grow: %w", err)
		}
		return awaitTool(ctx, m, r.Name, "grown-1")
	})
	runTasks(ctx, t, m, tasks, ext, "after")
}

// each runs f for every member at once and fails the test with every
// error, named.
func each(t *testing.T, fleet []*running, f func(*running) error) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
	)
	for _, r := range fleet {
		wg.Go(func() {
			if err := f(r); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s (%s, %s over %s): %v", r.Name, r.Protocol, r.Library, r.Transport, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(errs)
	for _, e := range errs {
		t.Error(e)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

func (r *running) output() string {
	if r.http == nil {
		return ""
	}
	return "\n" + r.http.Output()
}

func echo(ctx context.Context, m *client.Manager, server, msg string) error {
	res, err := m.CallTool(ctx, server, "echo", map[string]any{"message": msg})
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	if got := text(res); got != "echo: "+msg {
		return fmt.Errorf("echo answered %q", got)
	}
	return nil
}

// runTasks runs one task on each task server, its job released at once:
// a tool that requires a task (2025-11-25, mcp-go), and one called
// WithTask (the 2026-07-28 extension).
func runTasks(ctx context.Context, t *testing.T, m *client.Manager, tasks *taskserver.Server, ext *taskserver.Ext, job string) {
	t.Helper()
	tasks.Release(job)
	ext.Release(job)
	res, err := m.CallTool(ctx, "tasks-2025-11-25", taskserver.ToolWorkRequired, map[string]any{"job": job})
	if err != nil || text(res) != "done "+job {
		t.Fatalf("task on mcp-go (2025-11-25), %s the restart: %q, %v", job, text(res), err)
	}
	res, err = m.CallTool(ctx, "tasks-2026-07-28", taskserver.ExtWork, map[string]any{"job": job}, client.WithTask())
	if err != nil || text(res) != "done "+job {
		t.Fatalf("task on the extension (2026-07-28), %s the restart: %q, %v", job, text(res), err)
	}
}

// awaitNewRuntimes waits until every server of gens is Connected on a
// runtime newer than its generation there.
func awaitNewRuntimes(ctx context.Context, t *testing.T, m *client.Manager, events <-chan client.Event, gens map[string]uint64) {
	t.Helper()
	pending := map[string]bool{}
	for name, gen := range gens {
		if st, _ := m.Status(name); st.State != lifecycle.Connected || st.Generation <= gen {
			pending[name] = true
		}
	}
	for len(pending) > 0 {
		select {
		case e := <-events:
			if e.Kind == client.EventState && e.To == lifecycle.Connected && pending[e.Server] && e.Generation > gens[e.Server] {
				delete(pending, e.Server)
			}
		case <-ctx.Done():
			var names []string
			for name := range pending {
				st, _ := m.Status(name)
				names = append(names, fmt.Sprintf("%s (%s, generation %d, last error %v)", name, st.State, st.Generation, st.LastError))
			}
			slices.Sort(names)
			t.Fatalf("not back on a new runtime: %v", names)
		}
	}
}

// awaitTool waits until server's published catalog has tool, which its
// list_changed announced.
func awaitTool(ctx context.Context, m *client.Manager, server, tool string) error {
	events, cancel := m.Events(256)
	defer cancel()
	for {
		if c, ok := m.View().Catalog(server); ok && hasTools(c.Tools(), tool) {
			return nil
		}
		select {
		case <-events:
		case <-ctx.Done():
			c, _ := m.View().Catalog(server)
			return fmt.Errorf("no %s in the catalog after list_changed: %v", tool, toolNames(c.Tools()))
		}
	}
}

func hasTools(tools []mcp.Tool, names ...string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(tools, func(t mcp.Tool) bool { return t.Name == n }) {
			return false
		}
	}
	return true
}

func toolNames(tools []mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}
