// Package taskserver runs MCP servers whose tools run as tasks, for the
// tests of the Manager's task handles (issue 27):
//
//   - Server: mcp-go's own server with tasks (protocol 2025-11-25), in
//     process (MCPServer, for client.InProcess) or over streamable HTTP
//     (StartHTTP) behind a TCP proxy that can cut every connection; it can
//     restart, forgetting its tasks, as a restarted process would.
//   - Ext: a server of the 2026-07-28 tasks extension (SEP-2663), which
//     neither mcp-go nor the Go SDK implements: mcp-go's server for the
//     rest of the protocol, and the extension's methods answered here.
//
// A task's tool runs until the test releases its job (Release), so a test
// decides when a task ends without waiting on a clock.
//
// Two facts about mcp-go v1.2.1's server shape the Server. It runs a tool
// called as a task under the context of the tools/call request, which
// ends as soon as the server has answered it with the task: a tool that
// honours its context is cancelled at once, on every transport. The tools
// here therefore end on their release or the server's stop, not on their
// context (a task's cancellation is seen through the task hooks instead).
// And it binds a task to the session that created it: only a client of
// that session sees it (other sessions get "task not found"). The HTTP
// server is therefore mcp-go's stateless streamable HTTP server, which
// has no sessions, so that a task outlives the connection, the runtime
// and the client that started it; in process every connection is a
// session of its own, and a task does not outlive it.
package taskserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
	"github.com/mcpfleet/mcpfleet/transport"
)

// The tools of Server.
const (
	// ToolWork runs as a task if asked (taskSupport optional) until its
	// job (argument "job") is released, then answers "done <job>"; with
	// "fail": true its handler fails instead (a failed task), with
	// "toolError": true it answers a result with isError set.
	ToolWork = "work"
	// ToolWorkRequired is ToolWork with taskSupport required.
	ToolWorkRequired = "work-required"
	// ToolForbidden declares taskSupport forbidden; ToolPlain declares
	// nothing. Both echo their "text" argument at once.
	ToolForbidden = "forbidden"
	ToolPlain     = "plain"
)

// Server is mcp-go's server with tasks. Its jobs and counters outlive its
// restarts; its tasks do not.
type Server struct {
	jobs      *jobs
	started   chan string // job names, as their tools start
	created   chan string // task ids, as tasks are created
	ended     chan string // task ids, as tasks complete or fail
	cancelled chan string // task ids, as tasks/cancel cancels them
	cancels   atomic.Int64

	mu  sync.Mutex // guards inc
	inc *incarnation
}

// incarnation is one run of the server: a restart makes a new one, which
// knows none of the old one's tasks.
type incarnation struct {
	mcp    *server.MCPServer
	http   *server.StreamableHTTPServer
	inproc *inproc.Server
	stop   chan struct{} // closed when it ends: its tools return
}

// jobs are the release gates of the tools' jobs.
type jobs struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

// release closes name's gate, once.
func (j *jobs) release(name string) {
	g := j.gate(name)
	j.mu.Lock()
	defer j.mu.Unlock()
	select {
	case <-g:
	default:
		close(g)
	}
}

func (j *jobs) gate(name string) chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	g, ok := j.gates[name]
	if !ok {
		g = make(chan struct{})
		j.gates[name] = g
	}
	return g
}

// New returns a server. Close it (or let StartHTTP's cleanup) when done:
// its tools still running end then.
func New() *Server {
	s := &Server{jobs: &jobs{gates: map[string]chan struct{}{}},
		started: make(chan string, 1024), created: make(chan string, 1024), ended: make(chan string, 1024),
		cancelled: make(chan string, 1024)}
	s.inc = s.newIncarnation()
	return s
}

func (s *Server) newIncarnation() *incarnation {
	inc := &incarnation{stop: make(chan struct{})}
	hooks := &server.TaskHooks{}
	hooks.AddOnTaskCreated(func(_ context.Context, m server.TaskMetrics) { send(s.created, m.TaskID) })
	hooks.AddOnTaskCompleted(func(_ context.Context, m server.TaskMetrics) { send(s.ended, m.TaskID) })
	hooks.AddOnTaskFailed(func(_ context.Context, m server.TaskMetrics) { send(s.ended, m.TaskID) })
	hooks.AddOnTaskCancelled(func(_ context.Context, m server.TaskMetrics) {
		s.cancels.Add(1)
		send(s.cancelled, m.TaskID)
	})
	srv := server.NewMCPServer("taskserver", "1.0.0", server.WithToolCapabilities(false),
		server.WithTaskCapabilities(true, true, true), server.WithTaskHooks(hooks))
	work := func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		job := req.GetString("job", "")
		send(s.started, job)
		select {
		case <-s.jobs.gate(job):
		case <-inc.stop:
			return nil, fmt.Errorf("taskserver: the server stopped")
		}
		switch {
		case req.GetBool("fail", false):
			return nil, fmt.Errorf("taskserver: job %s failed", job)
		case req.GetBool("toolError", false):
			return mcp.NewToolResultError("taskserver: job " + job + " says no"), nil
		}
		return mcp.NewToolResultText("done " + job), nil
	}
	echo := func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	}
	jobArgs := []mcp.ToolOption{mcp.WithString("job"), mcp.WithBoolean("fail"), mcp.WithBoolean("toolError")}
	srv.AddTool(mcp.NewTool(ToolWork, append(jobArgs, mcp.WithTaskSupport(mcp.TaskSupportOptional))...), work)
	srv.AddTool(mcp.NewTool(ToolWorkRequired, append(jobArgs, mcp.WithTaskSupport(mcp.TaskSupportRequired))...), work)
	srv.AddTool(mcp.NewTool(ToolForbidden, mcp.WithString("text"), mcp.WithTaskSupport(mcp.TaskSupportForbidden)), echo)
	srv.AddTool(mcp.NewTool(ToolPlain, mcp.WithString("text")), echo)
	inc.mcp = srv
	inc.inproc = inproc.New(srv)
	inc.http = server.NewStreamableHTTPServer(srv, server.WithStateLess(true),
		server.WithStreamableHTTPProtocolVersions(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	return inc
}

// send delivers v on ch without ever blocking a server.
func send(ch chan string, v string) {
	select {
	case ch <- v:
	default:
	}
}

// MCPServer returns the current incarnation's mcp-go server, for
// client.InProcess.
func (s *Server) MCPServer() *server.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inc.mcp
}

// Release lets job's tools finish, now and from now on.
func (s *Server) Release(job string) { s.jobs.release(job) }

// Started receives each job's name as its tool starts.
func (s *Server) Started() <-chan string { return s.started }

// Created receives the id of each task the server creates.
func (s *Server) Created() <-chan string { return s.created }

// Ended receives the id of each task as it completes or fails: a test
// that released a job waits for it before it polls, since the server ends
// the task on a goroutine of its own.
func (s *Server) Ended() <-chan string { return s.ended }

// Cancelled receives the id of each task tasks/cancel cancelled.
func (s *Server) Cancelled() <-chan string { return s.cancelled }

// Cancels counts the tasks tasks/cancel cancelled.
func (s *Server) Cancels() int64 { return s.cancels.Load() }

// Restart replaces the server with a new incarnation that knows none of
// the old one's tasks; the old one's tools end, and its in-process
// connections die, as a restarted process's would.
func (s *Server) Restart() {
	inc := s.newIncarnation()
	s.mu.Lock()
	old := s.inc
	s.inc = inc
	s.mu.Unlock()
	close(old.stop)
	old.inproc.Kill(nil)
}

// Dial opens an in-process connection to the server (a client.Dialer),
// on which it offers only protocol 2025-11-25, where its tasks live: over
// 2026-07-28 mcp-go's server still declares them, but removed tasks/result,
// so a task's outcome could never be collected.
func (s *Server) Dial(ctx context.Context) (transport.Conn, error) {
	s.mu.Lock()
	ip := s.inc.inproc
	s.mu.Unlock()
	c, err := ip.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return legacyConn{c}, nil
}

// KillConnections ends every in-process connection, as a crash of the
// connection (not of the server) would.
func (s *Server) KillConnections() int {
	s.mu.Lock()
	ip := s.inc.inproc
	s.mu.Unlock()
	return ip.Kill(nil)
}

// legacyConn is an in-process connection whose server tells the client,
// at discovery, that it speaks only the protocols before 2026-07-28.
type legacyConn struct{ *inproc.Conn }

func (c legacyConn) Transport() mcptransport.Interface { return legacyTransport{c.Conn.Transport()} }

type legacyTransport struct{ mcptransport.Interface }

// SendRequest refuses server/discover as mcp-go's streamable HTTP server
// refuses it when it serves only the older protocols: the client then
// takes the initialize handshake.
func (t legacyTransport) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodServerDiscover) {
		refusal := mcp.UnsupportedProtocolVersionError{Version: mcp.LATEST_PROTOCOL_VERSION, Supported: legacyVersions}.JSONRPCError()
		b, err := json.Marshal(refusal.Error)
		if err != nil {
			return nil, err
		}
		var details mcp.JSONRPCErrorDetails
		if err := json.Unmarshal(b, &details); err != nil {
			return nil, err
		}
		return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Error: &details}, nil
	}
	return t.Interface.SendRequest(ctx, req)
}

// legacyVersions are the protocol versions before 2026-07-28.
var legacyVersions = func() []string {
	var out []string
	for _, v := range mcp.ValidProtocolVersions {
		if !mcp.IsModernProtocol(v) {
			out = append(out, v)
		}
	}
	return out
}()

// Close ends the tools still running and the in-process connections.
func (s *Server) Close() {
	s.mu.Lock()
	inc := s.inc
	select {
	case <-inc.stop:
	default:
		close(inc.stop)
	}
	s.mu.Unlock()
	inc.inproc.Kill(nil)
}

// ServeHTTP serves the current incarnation over streamable HTTP.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.inc.http
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// Await waits for a value on ch, or fails the test when ctx ends.
func Await(t testing.TB, ctx context.Context, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("taskserver: waiting for %s: %v", what, ctx.Err())
		return ""
	}
}

// HTTP is a Server (or an Ext) over HTTP on 127.0.0.1, behind a TCP proxy
// that can cut every connection.
type HTTP struct {
	srv   *http.Server
	proxy *faultinject.Proxy
	done  chan struct{}
}

// StartHTTP serves h on 127.0.0.1 behind a proxy; both stop when the test
// ends.
func StartHTTP(t testing.TB, h http.Handler) *HTTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("taskserver: listen: %v", err)
	}
	hs := &HTTP{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(hs.done)
		_ = hs.srv.Serve(ln)
	}()
	hs.proxy = faultinject.StartProxy(t, ln.Addr().String())
	t.Cleanup(func() {
		_ = hs.srv.Close()
		<-hs.done
	})
	return hs
}

// Close stops the server and the proxy before the test ends (a soak's leak
// check runs before the cleanups); it is safe to call again.
func (h *HTTP) Close() {
	h.proxy.Close()
	_ = h.srv.Close()
	<-h.done
}

// URL is the server's MCP endpoint, through the proxy.
func (h *HTTP) URL() string { return "http://" + h.proxy.Addr() + "/mcp" }

// Cut breaks every TCP connection to the server now, as a network fault
// would; the server runs on.
func (h *HTTP) Cut() int { return h.proxy.Cut() }
