package taskserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ExtensionID is the tasks extension's identifier (SEP-2663).
const ExtensionID = "io.modelcontextprotocol/tasks"

// The tools of Ext. Called by a client that declares the extension, each
// but ExtQuick answers with a task; called without it, each runs as a
// plain call (the extension forbids a task then).
const (
	// ExtWork runs until its job (argument "job") is released, then
	// completes with "done <job>"; with "fail": true it fails with a
	// JSON-RPC error instead.
	ExtWork = "work"
	// ExtAsk asks the client for a name (an elicitation, as an input
	// request of the task), then completes with "hello <name>".
	ExtAsk = "ask"
	// ExtQuick answers at once with its result, even to a client that
	// declares the extension: the server decides.
	ExtQuick = "quick"
)

// Ext is a server of the 2026-07-28 tasks extension (SEP-2663): mcp-go's
// stateless server on protocol 2026-07-28 for discovery and tools/list,
// declaring the extension, and the extension's own requests (a
// task-augmented tools/call, tasks/get, tasks/update, tasks/cancel)
// answered here. Its tasks live in memory; Restart forgets them.
type Ext struct {
	mcp  *server.MCPServer
	http *server.StreamableHTTPServer
	jobs *jobs
	// PollInterval is the interval it asks clients to poll at.
	PollInterval time.Duration

	started   chan string // task ids, as tasks start
	cancelled chan string // task ids, as tasks/cancel reaches them
	updated   chan string // task ids, as tasks/update answers reach them

	mu    sync.Mutex // guards the fields below
	tasks map[string]*extTask
	// badState counts requests that sent a requestState other than the
	// last one the server gave for the task.
	badState int
	stop     chan struct{}
}

type extTask struct {
	expired       bool
	id, tool, job string
	fail          bool
	status        string
	message       string
	created       time.Time
	state         int // the number in the last requestState given
	result        *mcp.CallToolResult
	asked         bool // ExtAsk: the input request was given out
	answer        string
}

// NewExt returns an extension server that asks to be polled every
// pollInterval.
func NewExt(pollInterval time.Duration) *Ext {
	e := &Ext{jobs: &jobs{gates: map[string]chan struct{}{}}, PollInterval: pollInterval,
		started: make(chan string, 1024), cancelled: make(chan string, 1024), updated: make(chan string, 1024),
		tasks: map[string]*extTask{}, stop: make(chan struct{})}
	srv := server.NewMCPServer("taskserver-ext", "1.0.0", server.WithToolCapabilities(false),
		server.WithExtensions(map[string]any{ExtensionID: map[string]any{}}))
	plain := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch req.Params.Name {
		case ExtWork:
			select {
			case <-e.jobs.gate(req.GetString("job", "")):
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-e.stop:
				return nil, fmt.Errorf("taskserver: the server stopped")
			}
			return mcp.NewToolResultText("done " + req.GetString("job", "")), nil
		case ExtAsk:
			return mcp.NewToolResultError("taskserver: ask needs the tasks extension"), nil
		}
		return mcp.NewToolResultText("quick " + req.GetString("text", "")), nil
	}
	srv.AddTool(mcp.NewTool(ExtWork, mcp.WithString("job"), mcp.WithBoolean("fail")), plain)
	srv.AddTool(mcp.NewTool(ExtAsk), plain)
	srv.AddTool(mcp.NewTool(ExtQuick, mcp.WithString("text")), plain)
	e.mcp = srv
	e.http = server.NewStreamableHTTPServer(srv, server.WithStateLess(true))
	return e
}

// Release lets job's tasks complete.
func (e *Ext) Release(job string) { e.jobs.release(job) }

// Started receives the id of each task as it starts; Cancelled as
// tasks/cancel reaches it; Updated as tasks/update answers reach it.
func (e *Ext) Started() <-chan string   { return e.started }
func (e *Ext) Cancelled() <-chan string { return e.cancelled }
func (e *Ext) Updated() <-chan string   { return e.updated }

// BadRequestStates counts the requests about a task that did not send
// back the last requestState the server gave for it.
func (e *Ext) BadRequestStates() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.badState
}

// Expire makes the server answer for task id, from now on, that it expired
// (the SEP's answer for a task whose ttl passed).
func (e *Ext) Expire(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tasks[id]; ok {
		t.expired = true
	}
}

// Restart forgets every task, as a restarted server would.
func (e *Ext) Restart() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tasks = map[string]*extTask{}
}

// Close ends the plain calls still running.
func (e *Ext) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	select {
	case <-e.stop:
	default:
		close(e.stop)
	}
}

type extRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name           string          `json:"name"`
		Arguments      map[string]any  `json:"arguments"`
		TaskID         string          `json:"taskId"`
		RequestState   string          `json:"requestState"`
		InputResponses json.RawMessage `json:"inputResponses"`
		Meta           struct {
			Caps struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// ServeHTTP answers the extension's requests and hands the rest to mcp-go.
func (e *Ext) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		e.http.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req extRequest
	if json.Unmarshal(body, &req) != nil {
		e.http.ServeHTTP(w, r)
		return
	}
	_, declared := req.Params.Meta.Caps.Extensions[ExtensionID]
	switch req.Method {
	case "tools/call":
		if !declared || req.Params.Name == ExtQuick {
			e.http.ServeHTTP(w, r)
			return
		}
		e.reply(w, req.ID, e.create(req.Params.Name, req.Params.Arguments), nil)
	case "tasks/get":
		res, rpcErr := e.get(req.Params.TaskID, req.Params.RequestState)
		e.reply(w, req.ID, res, rpcErr)
	case "tasks/update":
		e.update(req.Params.TaskID, req.Params.RequestState, req.Params.InputResponses)
		e.reply(w, req.ID, map[string]any{"resultType": "complete"}, nil)
	case "tasks/cancel":
		e.cancel(req.Params.TaskID, req.Params.RequestState)
		e.reply(w, req.ID, map[string]any{"resultType": "complete"}, nil)
	case "tasks/result", "tasks/list":
		e.reply(w, req.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND, Message: req.Method + " is not a method of the tasks extension"})
	default:
		e.http.ServeHTTP(w, r)
	}
}

func (e *Ext) reply(w http.ResponseWriter, id json.RawMessage, result any, rpcErr *mcp.JSONRPCErrorDetails) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	status := http.StatusOK
	if rpcErr != nil {
		msg["error"] = rpcErr
		// As mcp-go's server answers on 2026-07-28.
		status = http.StatusBadRequest
		if rpcErr.Code == mcp.METHOD_NOT_FOUND {
			status = http.StatusNotFound
		}
	} else {
		msg["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(msg)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// create starts a task of tool, and returns its CreateTaskResult.
func (e *Ext) create(tool string, args map[string]any) map[string]any {
	t := &extTask{id: newID(), tool: tool, status: "working", created: time.Now().UTC()}
	if job, ok := args["job"].(string); ok {
		t.job = job
	}
	t.fail, _ = args["fail"].(bool)
	e.mu.Lock()
	e.tasks[t.id] = t
	out := e.taskLocked(t, true)
	e.mu.Unlock()
	send(e.started, t.id)
	return out
}

// taskLocked is t as the wire has it, with a fresh requestState; seed
// leaves out the outcome and input requests (a CreateTaskResult).
func (e *Ext) taskLocked(t *extTask, seed bool) map[string]any {
	e.advanceLocked(t)
	t.state++
	out := map[string]any{
		"resultType":               "complete",
		"taskId":                   t.id,
		"status":                   t.status,
		"createdAt":                t.created.Format(time.RFC3339),
		"lastUpdatedAt":            time.Now().UTC().Format(time.RFC3339),
		"ttlSeconds":               3600,
		"pollIntervalMilliseconds": e.PollInterval.Milliseconds(),
		"requestState":             "state-" + t.id[:6] + "-" + strconv.Itoa(t.state),
	}
	if t.message != "" {
		out["statusMessage"] = t.message
	}
	if seed {
		out["resultType"] = "task"
		return out
	}
	switch t.status {
	case "completed":
		out["result"] = t.result
	case "failed":
		out["error"] = map[string]any{"code": mcp.INTERNAL_ERROR, "message": "taskserver: job " + t.job + " failed"}
	case "input_required":
		out["inputRequests"] = map[string]any{"name": map[string]any{
			"method": "elicitation/create",
			"params": map[string]any{"mode": "form", "message": "Your name?", "requestedSchema": map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}},
		}}
	}
	return out
}

// advanceLocked moves t on as far as what happened lets it.
func (e *Ext) advanceLocked(t *extTask) {
	if t.status != "working" && t.status != "input_required" {
		return
	}
	switch t.tool {
	case ExtWork:
		select {
		case <-e.jobs.gate(t.job):
			if t.fail {
				t.status, t.message = "failed", "the job failed"
			} else {
				t.status, t.result = "completed", mcp.NewToolResultText("done "+t.job)
			}
		default:
		}
	case ExtAsk:
		switch {
		case t.answer != "":
			t.status, t.result = "completed", mcp.NewToolResultText("hello "+t.answer)
		case !t.asked:
			t.asked = true
			t.status = "input_required"
		}
	}
}

// checkStateLocked counts a request whose requestState is not the last
// one given for t.
func (e *Ext) checkStateLocked(t *extTask, state string) {
	if state != "state-"+t.id[:6]+"-"+strconv.Itoa(t.state) {
		e.badState++
	}
}

func (e *Ext) get(id, state string) (map[string]any, *mcp.JSONRPCErrorDetails) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tasks[id]
	if !ok {
		return nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: "Failed to retrieve task: Task not found"}
	}
	if t.expired {
		return nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: "Failed to retrieve task: Task has expired"}
	}
	e.checkStateLocked(t, state)
	return e.taskLocked(t, false), nil
}

func (e *Ext) update(id, state string, responses json.RawMessage) {
	var rs map[string]struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	_ = json.Unmarshal(responses, &rs)
	e.mu.Lock()
	t, ok := e.tasks[id]
	if ok {
		e.checkStateLocked(t, state)
		if a, ok := rs["name"]; ok && a.Action == "accept" {
			t.answer = fmt.Sprint(a.Content["name"])
		}
	}
	e.mu.Unlock()
	if ok {
		send(e.updated, id)
	}
}

func (e *Ext) cancel(id, state string) {
	e.mu.Lock()
	t, ok := e.tasks[id]
	if ok {
		e.checkStateLocked(t, state)
		if t.status == "working" || t.status == "input_required" {
			t.status, t.message = "cancelled", "cancelled by the client"
		}
	}
	e.mu.Unlock()
	if ok {
		send(e.cancelled, id)
	}
}
