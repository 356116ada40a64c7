//go:build linux

package soak

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/httpserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/taskserver"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// kind is one server implementation over one transport. Failures are
// reported per kind because a bug usually belongs to one transport or one
// server's habits (the TypeScript server's 400 for a stale session, mcp-go's
// "unexpected nil response"), not to one server of the fleet.
type kind string

const (
	kindTSStdio        kind = "ts-stdio"             // server-everything over stdio (node)
	kindTSHTTP         kind = "ts-http"              // server-everything over streamable HTTP (node)
	kindGoSDKStdio     kind = "gosdk-stdio"          // official Go SDK, the test binary re-executed
	kindGoSDKHTTP      kind = "gosdk-http"           // official Go SDK, stateful streamable HTTP
	kindGoSDKStateless kind = "gosdk-http-stateless" // official Go SDK, stateless streamable HTTP
	kindMCPGoHTTP      kind = "mcpgo-http"           // mcp-go streamable HTTP, sessions not validated
	kindMCPGoStateful  kind = "mcpgo-http-stateful"  // mcp-go streamable HTTP, 404 for unknown sessions
	kindMCPGoSSE       kind = "mcpgo-sse"            // mcp-go legacy HTTP+SSE
	kindMCPGoInProcess kind = "mcpgo-inproc"         // mcp-go in this process
	// The servers whose calls survive their connection (issue 27), each
	// behind a TCP proxy that the cut fault breaks.
	kindTSResume kind = "ts-http-resume" // the TypeScript SDK's resumable example server (event store), 2025-11-25
	kindTaskHTTP kind = "task-http"      // mcp-go with tasks (taskserver), its tool requires one, 2025-11-25
)

// mix is the fleet: 22 servers. The node servers are the heaviest (about 8
// node processes is what two cores carry beside the rest), so the Go kinds
// make up the numbers.
var mix = []struct {
	kind kind
	n    int
}{
	{kindTSStdio, 4},
	{kindTSHTTP, 4},
	{kindGoSDKStdio, 4},
	{kindGoSDKHTTP, 2},
	{kindGoSDKStateless, 1},
	{kindMCPGoHTTP, 1},
	{kindMCPGoStateful, 1},
	{kindMCPGoSSE, 1},
	{kindMCPGoInProcess, 4},
	{kindTSResume, 1},
	{kindTaskHTTP, 1},
}

// markerEnv names the variable set in every stdio child's environment to
// the name of its server: a fault finds the child to kill or stop through
// /proc, since the Manager's public API does not (and should not) expose pids.
const markerEnv = "MCPFLEET_SOAK_SERVER"

// member is one server of the fleet: how to reach it, how its echo tool
// answers, and the handle a fault acts on.
type member struct {
	name string
	kind kind
	spec client.ServerSpec
	// argKey is the echo tool's argument, prefix what it puts before the
	// text in its answer: the servers do not agree on either.
	argKey, prefix string

	// What a fault acts on: the child found by markerEnv for stdio, ts or
	// http for the HTTP kinds, inproc and gate for in-process servers.
	ts     *httpserver.Everything
	http   *httpserver.Server
	inproc *inproc.Server
	gate   *gate
	// node and task are the servers of kindTSResume and kindTaskHTTP, and
	// cut breaks every connection to them (a network fault; they live on).
	node *httpserver.Node
	task *taskserver.Server
	cut  func() int
	stop func() // stops the server and its proxy, for the leak check
	// proxy stands in front of every Streamable HTTP and SSE server but
	// the task server (which has a TCP proxy of its own): cut breaks every
	// connection through it, and it counts the sessions the server
	// created, for the session rule (sessions.go).
	proxy *faultinject.HTTPProxy

	// busy is set while a fault acts on the server, so that faults on one
	// server never overlap and each outage has one cause.
	busy atomic.Bool
}

func (s *member) stdio() bool { return s.kind == kindTSStdio || s.kind == kindGoSDKStdio }

// survives reports whether the server's calls survive a broken
// connection: resumed (kindTSResume) or run as tasks (kindTaskHTTP).
func (s *member) survives() bool { return s.kind == kindTSResume || s.kind == kindTaskHTTP }

// The tool the callers call on the server, its arguments and its answer.
// The echo tool of most kinds answers the argument back; the resumable
// server's slow tool answers the same for every call (it sends four log
// messages 100 ms apart, so its answer stream lasts 400 ms: long enough
// for a cut to land in it); the task server's tool answers its job.
const (
	resumeTool   = "start-notification-stream"
	resumeAnswer = "Started sending periodic notifications every 100ms"
	// taskWork is how long a task of the task server runs.
	taskWork = 300 * time.Millisecond
)

func (s *member) tool() string {
	switch s.kind {
	case kindTSResume:
		return resumeTool
	case kindTaskHTTP:
		return taskserver.ToolWorkRequired
	}
	return "echo"
}

// answer is the exact text the tool returns for arg.
func (s *member) answer(arg string) string {
	switch s.kind {
	case kindTSResume:
		return resumeAnswer
	case kindTaskHTTP:
		return "done " + arg
	}
	return s.prefix + arg
}

func (s *member) args(arg string) map[string]any {
	switch s.kind {
	case kindTSResume:
		return map[string]any{"interval": 100, "count": 4}
	case kindTaskHTTP:
		// The task runs until its job is released.
		time.AfterFunc(taskWork, func() { s.task.Release(arg) })
		return map[string]any{"job": arg}
	}
	return map[string]any{s.argKey: arg}
}

// faultKinds lists the faults that make sense for the server's kind: a
// process is killed, a network server restarted; everything can hang, be
// toggled and be reconnected.
func (s *member) faultKinds() []faultKind {
	switch {
	case s.survives():
		// Not restarted: a restart forgets the event store and the tasks,
		// and no call can survive that.
		return []faultKind{faultCut, faultToggle, faultReconnect}
	case s.stdio(), s.kind == kindMCPGoInProcess:
		return []faultKind{faultKill, faultHang, faultToggle, faultReconnect}
	default:
		// Behind their proxies, the HTTP servers' connections are cut,
		// and the servers made unreachable for a while: a session must
		// outlive both.
		return []faultKind{faultRestart, faultHang, faultToggle, faultReconnect, faultCut, faultPartition}
	}
}

// startFleet starts every server of mix (the HTTP ones listen before it
// returns; the Manager starts the stdio children) and returns them in a
// stable order. tsBin is server-everything's executable, node and
// resumeScript what runs the TypeScript SDK's resumable example server.
// The HTTP servers stop when the test ends.
func startFleet(t testing.TB, tsBin, node, resumeScript string) []*member {
	t.Helper()
	var fleet []*member
	for _, k := range mix {
		for i := 1; i <= k.n; i++ {
			s := &member{name: string(k.kind) + "-" + strconv.Itoa(i), kind: k.kind, argKey: "message"}
			switch k.kind {
			case kindTSStdio:
				s.prefix = "Echo: "
				s.spec.Stdio = &stdio.Spec{Command: tsBin, Args: []string{"stdio"},
					Env: map[string]string{markerEnv: s.name}}
			case kindGoSDKStdio:
				inv := gosdkserver.Command()
				env := map[string]string{markerEnv: s.name}
				for k, v := range inv.Env {
					env[k] = v
				}
				s.argKey = "text"
				s.spec.Stdio = &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: env}
			case kindTSHTTP:
				s.prefix = "Echo: "
				s.ts = httpserver.StartEverything(t, httpserver.EverythingStreamable)
				s.spec.HTTP = &mcphttp.Spec{URL: s.behindProxy(t, s.ts.URL())}
			case kindTSResume:
				s.node = httpserver.StartNode(t, node, resumeScript, "listening on port")
				s.spec.HTTP = &mcphttp.Spec{URL: s.behindProxy(t, s.node.URL("/mcp"))}
				s.stop = func() { s.proxy.Close(); s.node.Stop() }
			case kindTaskHTTP:
				s.task = taskserver.New()
				t.Cleanup(s.task.Close)
				h := taskserver.StartHTTP(t, s.task)
				s.cut = h.Cut
				s.stop = func() { h.Close(); s.task.Close() }
				s.spec.HTTP = &mcphttp.Spec{URL: h.URL()}
			case kindMCPGoInProcess:
				s.gate = &gate{}
				s.inproc = inproc.New(newInProcServer(s.gate))
				srv := s.inproc
				// Not client.InProcess: the soak needs the inproc.Server to
				// kill its connections, as a crash would.
				s.spec.Dialer = func(ctx context.Context) (transport.Conn, error) {
					c, err := srv.Dial(ctx)
					if err != nil {
						return nil, err
					}
					return c, nil
				}
			default:
				s.http = httpserver.Start(t, httpKind(k.kind))
				spec := &mcphttp.Spec{URL: s.behindProxy(t, s.http.URL())}
				if k.kind == kindMCPGoSSE {
					spec.Kind = mcphttp.SSE
				}
				s.spec.HTTP = spec
			}
			fleet = append(fleet, s)
		}
	}
	return fleet
}

// behindProxy puts s's server, at raw, behind an HTTP fault proxy, and
// returns the proxy's URL for it.
func (s *member) behindProxy(t testing.TB, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = faultinject.StartHTTPProxy(t, u.Scheme+"://"+u.Host)
	s.cut = s.proxy.Cut
	return s.proxy.URL(u.Path)
}

func httpKind(k kind) httpserver.Kind {
	switch k {
	case kindGoSDKHTTP:
		return httpserver.GoSDKStateful
	case kindGoSDKStateless:
		return httpserver.GoSDKStateless
	case kindMCPGoStateful:
		return httpserver.MCPGoStateful
	case kindMCPGoSSE:
		return httpserver.MCPGoSSE
	default:
		return httpserver.MCPGo
	}
}

// newInProcServer is an mcp-go server with an echo tool that waits while
// g is shut: the in-process form of a hung server, which accepts requests
// and never answers them.
func newInProcServer(g *gate) *server.MCPServer {
	s := server.NewMCPServer("soak-inproc", "1.0.0")
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Echoes the message back."),
		mcp.WithString("message", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := g.wait(ctx); err != nil {
			return nil, err
		}
		msg, err := req.RequireString("message")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(msg), nil
	})
	return s
}

// gate holds the in-process echo tool while shut.
type gate struct {
	mu sync.Mutex
	ch chan struct{} // non-nil while shut; closed when opened
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kindOf returns the kind of the server named name, for reports.
func kindOf(fleet []*member, name string) kind {
	for _, s := range fleet {
		if s.name == name {
			return s.kind
		}
	}
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		return kind(name[:i])
	}
	return kind(name)
}

func (s *member) String() string { return fmt.Sprintf("%s (%s)", s.name, s.kind) }
