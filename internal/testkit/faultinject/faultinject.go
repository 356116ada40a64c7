// Package faultinject runs real MCP servers (mcp-go's) that break one
// request/response exchange at a chosen point, for the tests of how a
// client classifies a failed call (issue 17).
//
// An exchange has four points a fault can strike at, seen from the client:
//
//   - before the request is written: the server is gone (connection
//     refused) or answers that it forgot the session; the request provably
//     never ran;
//   - after the request was written, before any answer: the server ran the
//     tool, then the connection broke (or the process died);
//   - in the middle of the response: part of the answer came back;
//   - after the response: the whole answer came back, then the connection
//     broke.
//
// Two servers do it: Stdio, the test binary re-executed as a stdio server
// (see Main), and HTTP, an mcp-go streamable HTTP or legacy SSE server on
// 127.0.0.1 behind a middleware that breaks the exchange. Both offer the
// same tools, and count how many times the tools ran outside the process
// that may die, so a test can check the replay rule.
package faultinject

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Point is where in one exchange a fault strikes.
type Point string

// The points of an exchange. BeforeWrite has no server-side fault of its
// own: the test stops the server (or kills the child) before the call;
// Stale404 and Stale400 are the HTTP servers' before-write faults that
// leave the server alive.
const (
	// None: no fault.
	None Point = ""
	// AfterWrite: the tool ran, then the connection broke (or the process
	// died) before any byte of the answer went out.
	AfterWrite Point = "after-write"
	// MidResponse: the tool ran, half the answer went out, then the
	// connection broke.
	MidResponse Point = "mid-response"
	// AfterResponse: the whole answer went out, then the connection broke.
	AfterResponse Point = "after-response"
	// Stale404: the HTTP server answers the call with 404 without running
	// it, as a server that forgot the session does (mcp-go's stateful
	// streamable HTTP server).
	Stale404 Point = "stale-404"
	// Stale400: the HTTP server answers the call with 400 and a JSON-RPC
	// error about the session without running it: -32000 "Bad Request: No
	// valid session ID provided" over streamable HTTP (the TypeScript SDK's
	// server), -32602 "Invalid session ID" over legacy SSE (mcp-go's).
	Stale400 Point = "stale-400"
)

// The tools both servers offer. The fault tools and Block count their runs
// (see Stdio.Executed and HTTP.Executed); the others do not.
const (
	// ToolFault declares neither readOnlyHint nor idempotentHint: a client
	// must not replay it.
	ToolFault = "fault"
	// ToolFaultIdempotent declares idempotentHint.
	ToolFaultIdempotent = "fault-idempotent"
	// ToolFaultReadOnly declares readOnlyHint.
	ToolFaultReadOnly = "fault-readonly"
	// ToolEcho returns its "text" argument; read-only, not counted.
	ToolEcho = "echo"
	// ToolFail answers with a result that has isError set.
	ToolFail = "fail"
	// ToolBroken's handler fails, which mcp-go's server answers with a
	// JSON-RPC error (-32603, internal error).
	ToolBroken = "broken"
	// ToolBlock runs until its call is cancelled.
	ToolBlock = "block"
)

// IsFaultTool reports whether name is one of the fault tools.
func IsFaultTool(name string) bool { return strings.HasPrefix(name, ToolFault) }

// ExecutedText starts the text a fault tool answers with; the stdio
// server finds its answer on the way out by it.
const ExecutedText = "faultinject: executed"

// BlockStartedLine is what ToolBlock writes to the stdio server's stderr
// when it starts, so a test can tell the call reached the server.
const BlockStartedLine = "faultinject: block started"

// hooks is what a server does around its tools.
type hooks struct {
	// count records one run of a counted tool and returns the runs so far,
	// this one included.
	count func() int64
	// ran, if set, is called by a fault tool after it counted, with the
	// count: the stdio server faults here.
	ran func(ctx context.Context, tool string, n int64)
	// blocked, if set, is called when ToolBlock starts.
	blocked func()
	// stopped, if set, is closed when the server stops: ToolBlock ends
	// then, since mcp-go's legacy SSE server does not cancel a handler
	// whose client went away.
	stopped <-chan struct{}
	// notify makes a fault tool send a notification before it answers,
	// which makes mcp-go's streamable HTTP server answer with an SSE
	// stream instead of a JSON body.
	notify bool
	// quiet declares the tools without list_changed.
	quiet bool
}

// newServer returns an mcp-go server with the tools. Unless quiet, the
// tools capability declares list_changed, so that a client keeps a
// notification stream open over HTTP: that stream is how a client notices
// that a server went away before its next call.
func newServer(name string, h hooks) *server.MCPServer {
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(!h.quiet))
	fault := func(tool string) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := h.count()
			if h.ran != nil {
				h.ran(ctx, tool, n)
			}
			if h.notify {
				if srv := server.ServerFromContext(ctx); srv != nil {
					_ = srv.SendNotificationToClient(ctx, "notifications/message",
						map[string]any{"level": "info", "logger": "faultinject", "data": "working"})
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("%s %s #%d", ExecutedText, tool, n)), nil
		}
	}
	s.AddTool(mcp.NewTool(ToolFault, mcp.WithDescription("Counts a run; neither read-only nor idempotent."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{})), fault(ToolFault))
	s.AddTool(mcp.NewTool(ToolFaultIdempotent, mcp.WithDescription("Counts a run; idempotent."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{IdempotentHint: mcp.ToBoolPtr(true)})), fault(ToolFaultIdempotent))
	s.AddTool(mcp.NewTool(ToolFaultReadOnly, mcp.WithDescription("Counts a run; read-only."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})), fault(ToolFaultReadOnly))
	s.AddTool(mcp.NewTool(ToolEcho, mcp.WithDescription("Returns text."), mcp.WithString("text"),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool(ToolFail, mcp.WithDescription("Answers with isError."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{})),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.count()
			return mcp.NewToolResultError("faultinject: the tool says no"), nil
		})
	s.AddTool(mcp.NewTool(ToolBroken, mcp.WithDescription("Its handler fails: a JSON-RPC error."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{})),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.count()
			return nil, fmt.Errorf("faultinject: the handler failed")
		})
	s.AddTool(mcp.NewTool(ToolBlock, mcp.WithDescription("Runs until cancelled."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{})),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.count()
			if h.blocked != nil {
				h.blocked()
			}
			// Bounded, so that a server whose client vanished without
			// cancelling does not keep a goroutine past the test.
			t := time.NewTimer(time.Minute)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-h.stopped: // nil, and so never ready, unless set
				return nil, fmt.Errorf("faultinject: the server stopped")
			case <-t.C:
				return mcp.NewToolResultText("faultinject: block ran out"), nil
			}
		})
	return s
}
