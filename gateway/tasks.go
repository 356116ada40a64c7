package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
)

// The tasks of the fleet's servers, passed through to the downstream
// clients of the HTTP front that speak the tasks of protocol 2025-11-25:
// a tools/call with params.task starts the tool as a task on its server
// (Manager.StartTask, which speaks the server's own task protocol, the
// 2025-11-25 one or the 2026-07-28 extension), and the client gets the
// task under an id namespaced by its server ("files/8c1…"), by which
// tasks/get, tasks/result and tasks/cancel find the Manager's handle. The
// handle is the Manager's, independent of the runtime and kept in its task
// store, so a task outlives a reconnect of its server and, with a task
// store on disk, a restart of the gateway. Tasks are the fleet's: in a
// Team, each identity's own. tasks/list lists those whose result was not
// collected yet (the Manager forgets a task once its result was taken).
//
// mcp-go's server would run a task-augmented call of the gateway's own
// tool as a task of its own, under an id of its own and in its memory;
// so these requests are answered at the HTTP front, before mcp-go sees
// them. Over stdio mcp-go does that, and the upstream call runs as a task
// only if the tool requires it.

// taskIDSep joins a server's name and its task's id in the ids the
// gateway gives clients.
const taskIDSep = "/"

// taskMessage is what the HTTP front reads of a task request.
type taskMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      *mcp.TaskParams `json:"task"`
		TaskID    string          `json:"taskId"`
	} `json:"params"`
}

// isTaskRequest reports whether a message of a session the HTTP front
// answers itself: a task-augmented tools/call, or tasks/get, tasks/result,
// tasks/cancel, tasks/list.
func isTaskRequest(m *message) bool {
	switch mcp.MCPMethod(m.Method) {
	case mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksCancel, mcp.MethodTasksList:
		return true
	case mcp.MethodToolsCall:
		return bool(m.Params.Task)
	}
	return false
}

// serveTask answers a task request of a session of the HTTP front.
func (h *HTTPServer) serveTask(w http.ResponseWriter, r *http.Request, body []byte) {
	var m taskMessage
	if err := json.Unmarshal(body, &m); err != nil {
		writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.PARSE_ERROR, Message: err.Error()})
		return
	}
	g := h.g
	ctx := r.Context()
	switch mcp.MCPMethod(m.Method) {
	case mcp.MethodToolsCall:
		srv, tool, ok := g.resolveTool(m.Params.Name)
		if !ok {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("tool %q not found", m.Params.Name)})
			return
		}
		if err := g.check(srv, tool); err != nil {
			g.refused(string(mcp.MethodToolsCall), srv, tool, err)
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_REQUEST, Message: err.Error()})
			return
		}
		args, err := taskArguments(m.Params.Name, m.Params.Arguments)
		if err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: err.Error()})
			return
		}
		var opts []client.CallOption
		if m.Params.Task != nil && m.Params.Task.TTL != nil {
			opts = append(opts, client.WithTaskTTL(time.Duration(*m.Params.Task.TTL)*time.Millisecond))
		}
		start := time.Now()
		task, err := g.m.StartTask(ctx, srv, tool, args, opts...)
		g.obs.Call(CallInfo{Identity: g.who, Method: string(mcp.MethodToolsCall), Server: srv, Name: tool,
			Outcome: outcomeOf(nil, err), Duration: time.Since(start), Err: err})
		if err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: err.Error()})
			return
		}
		writeRPC(w, m.ID, map[string]any{"task": wireTask(task.Info())}, nil)
	case mcp.MethodTasksList:
		var list []mcp.Task
		for _, t := range g.m.Tasks() {
			if g.restricting() && !g.listed(t.Server(), t.Tool()) {
				continue
			}
			list = append(list, wireTask(t.Info()))
		}
		writeRPC(w, m.ID, mcp.ListTasksResult{Tasks: list}, nil)
	default:
		t, err := g.task(m.Params.TaskID)
		if err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: err.Error()})
			return
		}
		if err := g.check(t.Server(), t.Tool()); err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_REQUEST, Message: err.Error()})
			return
		}
		switch mcp.MCPMethod(m.Method) {
		case mcp.MethodTasksGet:
			writeRPC(w, m.ID, wireTask(t.Info()), nil)
		case mcp.MethodTasksCancel:
			if err := t.Cancel(ctx); err != nil {
				writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
				return
			}
			writeRPC(w, m.ID, wireTask(t.Info()), nil)
		case mcp.MethodTasksResult:
			res, err := t.Wait(ctx)
			if err != nil {
				writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
				return
			}
			out := *res
			out.Meta = &mcp.Meta{AdditionalFields: map[string]any{mcp.RelatedTaskMetaKey: mcp.RelatedTaskMeta(m.Params.TaskID)}}
			writeRPC(w, m.ID, &out, nil)
		}
	}
}

// task returns the Manager's handle of the task the client knows as id.
func (g *Gateway) task(id string) (*client.Task, error) {
	for _, t := range g.m.Tasks() {
		if srv := t.Server(); strings.HasPrefix(id, srv+taskIDSep) && id[len(srv)+len(taskIDSep):] == t.ID() {
			return t, nil
		}
	}
	return nil, fmt.Errorf("mcpfleet: gateway: task %q not found", id)
}

// wireTask is the task as 2025-11-25 carries it, under the gateway's id.
func wireTask(in client.TaskInfo) mcp.Task {
	status, msg := mcp.TaskStatus(in.Status), in.Message
	if in.Status == client.TaskLost {
		status = mcp.TaskStatusFailed
		if msg == "" {
			msg = "the server no longer knows the task"
		}
	}
	created := in.Created
	if created.IsZero() {
		created = in.Started
	}
	t := mcp.Task{TaskId: in.Server + taskIDSep + in.ID, Status: status, StatusMessage: msg,
		CreatedAt: created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if in.TTL > 0 {
		ms := in.TTL.Milliseconds()
		t.TTL = &ms
	}
	if in.PollInterval > 0 {
		ms := in.PollInterval.Milliseconds()
		t.PollInterval = &ms
	}
	return t
}

// writeRPC writes a JSON-RPC response of id: result, or the error.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, rpcErr *mcp.JSONRPCErrorDetails) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id}
	if rpcErr != nil {
		out["error"] = rpcErr
	} else {
		out["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// The tasks extension of 2026-07-28 (SEP-2663), for the 2026-07-28 clients
// of the HTTP front that declare it in a request's capabilities: a
// tools/call of a tool whose server can run it as a task (its
// execution.taskSupport is optional or required) is answered with the task
// (resultType "task", under the gateway's namespaced id); tasks/get gives
// its status, and its outcome once it ended (the result, or the error);
// tasks/cancel cancels it. A task that waits for input
// (input_required) is answered by the Manager's own handlers, as any
// request of the server's: the gateway passes on none to the client, and
// acknowledges a tasks/update without effect.

// extensionID names the tasks extension.
const extensionID = client.TaskProtocolExtension

// extRequest is what the HTTP front reads of an extension's request.
type extRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		TaskID    string          `json:"taskId"`
		Meta      struct {
			Caps struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// isExtTaskRequest reports whether a 2026-07-28 request is one of the
// extension's the HTTP front answers: tasks/get, tasks/update,
// tasks/cancel, and a tools/call that declares the extension, of a tool
// its server can run as a task.
func (h *HTTPServer) isExtTaskRequest(m *message, body []byte) bool {
	switch m.Method {
	case string(mcp.MethodTasksGet), string(mcp.MethodTasksCancel), "tasks/update":
		return true
	case string(mcp.MethodToolsCall):
		if !bytes.Contains(body, []byte(extensionID)) {
			return false
		}
		var req extRequest
		if json.Unmarshal(body, &req) != nil {
			return false
		}
		if _, ok := req.Params.Meta.Caps.Extensions[extensionID]; !ok {
			return false
		}
		srv, tool, ok := h.g.resolveTool(req.Params.Name)
		if !ok {
			return false
		}
		c, ok := h.g.m.View().Catalog(srv)
		if !ok {
			return false
		}
		for _, t := range c.Tools() {
			if t.Name == tool && t.Execution != nil &&
				(t.Execution.TaskSupport == mcp.TaskSupportOptional || t.Execution.TaskSupport == mcp.TaskSupportRequired) {
				return true
			}
		}
	}
	return false
}

// serveExtTask answers an extension's request of a 2026-07-28 client.
func (h *HTTPServer) serveExtTask(w http.ResponseWriter, r *http.Request, body []byte) {
	var m extRequest
	if err := json.Unmarshal(body, &m); err != nil {
		writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.PARSE_ERROR, Message: err.Error()})
		return
	}
	g, ctx := h.g, r.Context()
	if m.Method == string(mcp.MethodToolsCall) {
		srv, tool, _ := g.resolveTool(m.Params.Name)
		if err := g.check(srv, tool); err != nil {
			g.refused(string(mcp.MethodToolsCall), srv, tool, err)
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_REQUEST, Message: err.Error()})
			return
		}
		args, err := taskArguments(m.Params.Name, m.Params.Arguments)
		if err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: err.Error()})
			return
		}
		start := time.Now()
		task, err := g.m.StartTask(ctx, srv, tool, args)
		g.obs.Call(CallInfo{Identity: g.who, Method: string(mcp.MethodToolsCall), Server: srv, Name: tool,
			Outcome: outcomeOf(nil, err), Duration: time.Since(start), Err: err})
		if err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: err.Error()})
			return
		}
		out := extTask(task.Info())
		out["resultType"] = "task"
		writeRPC(w, m.ID, out, nil)
		return
	}
	t, err := g.task(m.Params.TaskID)
	if err != nil {
		writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: err.Error()})
		return
	}
	if err := g.check(t.Server(), t.Tool()); err != nil {
		writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INVALID_REQUEST, Message: err.Error()})
		return
	}
	switch m.Method {
	case string(mcp.MethodTasksGet):
		out := extTask(t.Info())
		select {
		case <-t.Done():
			res, err := t.Wait(ctx) // at once: it ended
			switch {
			case err == nil:
				out["result"] = res
			case t.Info().Status != client.TaskCancelled:
				out["error"] = &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: err.Error()}
			}
		default:
		}
		writeRPC(w, m.ID, out, nil)
	case string(mcp.MethodTasksCancel):
		if err := t.Cancel(ctx); err != nil {
			writeRPC(w, m.ID, nil, &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
			return
		}
		writeRPC(w, m.ID, map[string]any{"resultType": "complete"}, nil)
	default: // tasks/update: the Manager answers its server's input requests itself
		writeRPC(w, m.ID, map[string]any{"resultType": "complete"}, nil)
	}
}

// extTask is the task as the extension carries it, under the gateway's id.
func extTask(in client.TaskInfo) map[string]any {
	w := wireTask(in)
	out := map[string]any{"resultType": "complete", "taskId": w.TaskId, "status": w.Status,
		"createdAt": w.CreatedAt, "lastUpdatedAt": w.LastUpdatedAt}
	if w.StatusMessage != "" {
		out["statusMessage"] = w.StatusMessage
	}
	if in.TTL > 0 {
		out["ttlSeconds"] = int64(in.TTL.Seconds())
	}
	if in.PollInterval > 0 {
		out["pollIntervalMilliseconds"] = in.PollInterval.Milliseconds()
	}
	return out
}

// taskArguments are a task's tools/call arguments as the Manager takes
// them: nil when absent, else raw, which must be an object or null.
func taskArguments(tool string, raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if err := argumentsObject(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return raw, nil
}
