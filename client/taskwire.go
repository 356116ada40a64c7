package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/transport"
)

// The wire forms of a task. Two generations of the protocol carry tasks,
// incompatibly:
//
//   - 2025-11-25 (in the core protocol, "experimental"): the client asks
//     for a task with params.task on a tools/call of a tool whose
//     execution.taskSupport allows it, on a server that declares
//     capabilities.tasks.requests.tools.call; it polls tasks/get, collects
//     the outcome with tasks/result (which blocks until the task ends, and
//     is where the server asks the host for input meanwhile), and cancels
//     with tasks/cancel, which answers with the task. mcp-go v1.2.1 has
//     the client calls for it (GetTask, TaskResult, CancelTask), but its
//     CallTool cannot take the answer to a task-augmented call: it parses
//     every tools/call answer as a CallToolResult and fails on one that
//     has no content.
//   - the tasks extension of 2026-07-28 (SEP-2663,
//     io.modelcontextprotocol/tasks): the client declares the extension
//     in the request's per-request capabilities, and the server decides
//     whether to answer with a task (resultType "task", the task's fields
//     flat in the result) or at once; tasks/get carries the outcome
//     inline, or the input requests the server waits for, which the
//     client answers with tasks/update; tasks/cancel is an
//     acknowledgement. Neither mcp-go v1.2.1 nor the Go SDK has it.
//
// Both go out through rawCall (rawcall.go): the request as mcp-go's
// Client would send it, on the runtime's own transport, which carries any
// JSON-RPC request.

// taskProto is the wire form of one task.
type taskProto uint8

const (
	protoCore taskProto = iota + 1 // 2025-11-25
	protoExt                       // the extension of 2026-07-28 (SEP-2663)
)

// Names of the wire forms, as TaskInfo.Protocol and the store give them.
const (
	// TaskProtocolCore is the task of protocol 2025-11-25.
	TaskProtocolCore = "2025-11-25"
	// TaskProtocolExtension is the task of the 2026-07-28 tasks extension
	// (SEP-2663), by its extension identifier.
	TaskProtocolExtension = "io.modelcontextprotocol/tasks"
)

func (p taskProto) String() string {
	if p == protoExt {
		return TaskProtocolExtension
	}
	return TaskProtocolCore
}

func parseTaskProto(s string) (taskProto, bool) {
	switch s {
	case TaskProtocolCore:
		return protoCore, true
	case TaskProtocolExtension:
		return protoExt, true
	}
	return 0, false
}

// Methods and fields of the task protocols that mcp-go has no names for.
const (
	methodTasksUpdate = "tasks/update"
	resultTypeTask    = "task"
)

// taskProtoFor decides how tool runs as a task on l's runtime: the
// extension where the runtime speaks 2026-07-28 and the server declares
// it, the 2025-11-25 form where it speaks an older protocol, the server
// declares task-augmented tools/call and the tool allows it. Otherwise it
// says why not, with ErrTaskUnsupported.
func taskProtoFor(l *lease, tool string) (taskProto, error) {
	caps := l.catalog.Capabilities
	support := mcp.TaskSupport("")
	found := false
	for i := range l.catalog.Tools {
		if t := &l.catalog.Tools[i]; t.Name == tool {
			found = true
			if t.Execution != nil {
				support = t.Execution.TaskSupport
			}
			break
		}
	}
	if found && support == mcp.TaskSupportForbidden {
		return 0, fmt.Errorf("%w: tool %q declares execution.taskSupport %q", ErrTaskUnsupported, tool, support)
	}
	if mcp.IsModernProtocol(l.protocol) {
		if _, ok := caps.Extensions[TaskProtocolExtension]; ok {
			return protoExt, nil
		}
		if coreTasks(caps) {
			return 0, fmt.Errorf("%w: the server declares the tasks of protocol 2025-11-25 on protocol %s, which removed them, and not the tasks extension (%s)",
				ErrTaskUnsupported, l.protocol, TaskProtocolExtension)
		}
		return 0, fmt.Errorf("%w: the server does not declare the tasks extension (%s)", ErrTaskUnsupported, TaskProtocolExtension)
	}
	if !coreTasks(caps) {
		return 0, fmt.Errorf("%w: the server does not declare capabilities.tasks.requests.tools.call (protocol %s)", ErrTaskUnsupported, l.protocol)
	}
	if support != mcp.TaskSupportOptional && support != mcp.TaskSupportRequired {
		if !found {
			return 0, fmt.Errorf("%w: tool %q is not in the server's catalog, so nothing says it supports tasks", ErrTaskUnsupported, tool)
		}
		return 0, fmt.Errorf("%w: tool %q does not declare execution.taskSupport", ErrTaskUnsupported, tool)
	}
	return protoCore, nil
}

func coreTasks(caps mcp.ServerCapabilities) bool {
	t := caps.Tasks
	return t != nil && t.Requests != nil && t.Requests.Tools != nil && t.Requests.Tools.Call != nil
}

// wireTask is a task as a server describes it, in either wire form.
type wireTask struct {
	ID           string
	Status       TaskStatus
	Message      string
	Created      time.Time
	TTL          time.Duration // 0: none given
	PollInterval time.Duration // 0: none given
	RequestState string
	// The extension's inline fields: the result of a completed task, the
	// JSON-RPC error of a failed one, the input requests of one that
	// waits for input.
	Result        json.RawMessage
	Error         *mcp.JSONRPCErrorDetails
	InputRequests mcp.InputRequests
}

// wireTaskJSON has the fields of both forms: the 2025-11-25 task (ttl and
// pollInterval in milliseconds) and the extension's (ttlSeconds,
// pollIntervalMilliseconds, requestState and the inline fields).
type wireTaskJSON struct {
	TaskID                   string                   `json:"taskId"`
	Status                   string                   `json:"status"`
	StatusMessage            string                   `json:"statusMessage"`
	CreatedAt                string                   `json:"createdAt"`
	TTL                      *float64                 `json:"ttl"`
	TTLSeconds               *float64                 `json:"ttlSeconds"`
	PollInterval             *float64                 `json:"pollInterval"`
	PollIntervalMilliseconds *float64                 `json:"pollIntervalMilliseconds"`
	RequestState             string                   `json:"requestState"`
	Result                   json.RawMessage          `json:"result"`
	Error                    *mcp.JSONRPCErrorDetails `json:"error"`
	InputRequests            mcp.InputRequests        `json:"inputRequests"`
}

// parseWireTask reads a task of form p from its JSON object.
func parseWireTask(p taskProto, raw json.RawMessage) (*wireTask, error) {
	var j wireTaskJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("task: %w", err)
	}
	if j.TaskID == "" {
		return nil, errors.New("task: no taskId")
	}
	st, ok := parseTaskStatus(j.Status)
	if !ok {
		return nil, fmt.Errorf("task %s: unknown status %q", j.TaskID, j.Status)
	}
	w := &wireTask{ID: j.TaskID, Status: st, Message: j.StatusMessage, RequestState: j.RequestState,
		Result: j.Result, Error: j.Error, InputRequests: j.InputRequests}
	if t, err := time.Parse(time.RFC3339Nano, j.CreatedAt); err == nil {
		w.Created = t
	}
	if p == protoExt {
		w.TTL = millis(j.TTLSeconds, 1000)
		w.PollInterval = millis(j.PollIntervalMilliseconds, 1)
		if w.PollInterval == 0 {
			w.PollInterval = millis(j.PollInterval, 1)
		}
	} else {
		w.TTL = millis(j.TTL, 1)
		w.PollInterval = millis(j.PollInterval, 1)
	}
	return w, nil
}

// millis is *v units of ms milliseconds as a duration; 0 for none, and
// for what is not a positive number a duration can hold.
func millis(v *float64, ms float64) time.Duration {
	if v == nil || !(*v > 0) {
		return 0
	}
	d := *v * ms * float64(time.Millisecond)
	if d > math.MaxInt64/2 {
		return 0
	}
	return time.Duration(d)
}

// parseTaskStatus reads a status of the wire; "lost" is the Manager's own
// and no server's.
func parseTaskStatus(s string) (TaskStatus, bool) {
	switch st := TaskStatus(s); st {
	case TaskWorking, TaskInputRequired, TaskCompleted, TaskFailed, TaskCancelled:
		return st, true
	}
	return "", false
}

// startAnswer is what a task-augmented tools/call came back with: a task,
// or (a server may decide so) the tool's result at once.
type startAnswer struct {
	task   *wireTask
	result *mcp.CallToolResult
	// input is an answer of 2026-07-28 asking for input before the call
	// goes on (SEP-2322), with the state to send back with the answers.
	input        mcp.InputRequests
	requestState string
}

// parseStartAnswer reads the answer to a task-augmented tools/call of form
// p.
func parseStartAnswer(p taskProto, raw json.RawMessage) (*startAnswer, error) {
	var probe struct {
		ResultType    string            `json:"resultType"`
		Task          json.RawMessage   `json:"task"`
		InputRequests mcp.InputRequests `json:"inputRequests"`
		RequestState  string            `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("tools/call answer: %w", err)
	}
	switch {
	case p == protoExt && probe.ResultType == resultTypeTask:
		w, err := parseWireTask(p, raw)
		if err != nil {
			return nil, err
		}
		// The seed of a task carries no outcome (SEP-2663: a client must
		// not use these fields of a CreateTaskResult).
		w.Result, w.Error, w.InputRequests = nil, nil, nil
		return &startAnswer{task: w}, nil
	case p == protoExt && probe.ResultType == string(mcp.ResultTypeInputRequired):
		return &startAnswer{input: probe.InputRequests, requestState: probe.RequestState}, nil
	case p == protoCore && len(probe.Task) > 0 && string(probe.Task) != "null":
		w, err := parseWireTask(p, probe.Task)
		if err != nil {
			return nil, err
		}
		return &startAnswer{task: w}, nil
	}
	res, err := parseToolResult(raw)
	if err != nil {
		return nil, err
	}
	return &startAnswer{result: res}, nil
}

// parseToolResult reads a CallToolResult. Unlike mcp.ParseCallToolResult it
// takes one with no content: mcp-go's tasks/result leaves out an empty
// content list.
func parseToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, errors.New("tool result: not a JSON object")
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("tool result: %w", err)
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return &res, nil
}

// taskParams are the params of a request about task id (tasks/get,
// tasks/result, tasks/cancel, tasks/update), with the extension's request
// state when there is one.
func taskParams(id, requestState string) map[string]any {
	p := map[string]any{"taskId": id}
	if requestState != "" {
		p["requestState"] = requestState
	}
	return p
}

// errWrongProtocol is the error of a task request that found the server's
// runtime replaced by one of another protocol generation than the task's.
var errWrongProtocol = errors.New("the server's runtime now speaks another protocol generation than the task's")

// checkProto returns errWrongProtocol if c cannot carry a task of form p.
func checkProto(p taskProto, c *mcpclient.Client) error {
	if (p == protoExt) != mcp.IsModernProtocol(c.ProtocolVersion()) {
		return fmt.Errorf("%w (task %s, runtime %s)", errWrongProtocol, p, c.ProtocolVersion())
	}
	return nil
}

// startSend is the send function of a task-augmented tools/call of form
// proto: it starts the task and returns its handle, registered and saved
// (or, for a server that answered at once, a handle that is complete).
func (r *taskRegistry) startSend(proto taskProto, ttl time.Duration) func(context.Context, *slot, *mcpclient.Client, string, any) (*Task, error) {
	return func(ctx context.Context, s *slot, c *mcpclient.Client, tool string, args any) (*Task, error) {
		if err := checkProto(proto, c); err != nil {
			return nil, err
		}
		params := map[string]any{"name": tool}
		if a := omitNil(args); a != nil {
			params["arguments"] = a
		}
		if proto == protoCore {
			tp := map[string]any{}
			if ttl > 0 {
				tp["ttl"] = ttl.Milliseconds()
			}
			params["task"] = tp
		}
		for round := 1; ; round++ {
			raw, err := r.m.rawCall(ctx, s, c, string(mcp.MethodToolsCall), params, tool, proto == protoExt)
			if err != nil {
				return nil, err
			}
			a, err := parseStartAnswer(proto, raw)
			if err != nil {
				return nil, err
			}
			if a.input == nil {
				return r.started(s, c, tool, proto, a), nil
			}
			// 2026-07-28: the server asks for input before it takes the
			// call (SEP-2322); the call goes again with the answers.
			if round >= maxInputRounds {
				return nil, fmt.Errorf("the server asked for input %d times in a row", round)
			}
			responses, err := r.fulfil(ctx, s, c, a.input)
			if err != nil {
				return nil, err
			}
			params["inputResponses"] = responses
			delete(params, "requestState")
			if a.requestState != "" {
				params["requestState"] = a.requestState
			}
		}
	}
}

// maxInputRounds bounds the rounds of input a tools/call may ask for.
const maxInputRounds = 8

// started makes the handle of what a task-augmented tools/call on c
// returned. The task is bound to c's session, if it has one.
func (r *taskRegistry) started(s *slot, c *mcpclient.Client, tool string, proto taskProto, a *startAnswer) *Task {
	now := r.m.opts.clock.Now()
	if a.result != nil {
		t := newTask(r.m, s.name, tool, "", proto, now)
		t.status, t.emitted, t.result = TaskCompleted, TaskCompleted, a.result
		t.finished = true
		t.collected = true // nothing to collect: it is in no registry or store
		close(t.done)
		return t
	}
	w := a.task
	t := newTask(r.m, s.name, tool, w.ID, proto, now)
	t.status, t.emitted, t.message, t.created = w.Status, w.Status, w.Message, w.Created
	t.ttl, t.interval, t.requestState = w.TTL, w.PollInterval, w.RequestState
	if id := c.GetSessionId(); id != "" {
		t.session, t.sessProto, t.identity = id, c.ProtocolVersion(), sessionIdentity(s.config().spec)
	}
	r.add(t)
	return t
}

// taskCall sends method about t on c as rawCall does, in the session t is
// bound to when that is not c's own: a task an earlier runtime, or an
// earlier Manager, started on a server that binds tasks to the session
// that created them (the TypeScript SDK's servers do). When the server no
// longer knows that session, the request goes again in c's own session: a
// server that finds tasks by id alone still knows the task there, and one
// that binds them says it does not, and the task is lost.
func (r *taskRegistry) taskCall(ctx context.Context, s *slot, c *mcpclient.Client, t *Task, method string, params map[string]any, name string, ext bool) (json.RawMessage, error) {
	bound := t.boundSession(s, c)
	if bound == "" {
		return r.m.rawCall(ctx, s, c, method, params, name, ext)
	}
	raw, err := r.m.rawCall(transport.WithSession(ctx, bound), s, c, method, params, name, ext)
	if !errors.Is(err, transport.ErrSessionGone) {
		return raw, err
	}
	r.m.opts.logger.Info("mcpfleet: the session a task was started in is gone; asking about it in the runtime's own",
		"server", t.server, "task", t.id)
	t.mu.Lock()
	if t.session == bound {
		t.session, t.sessProto = c.GetSessionId(), c.ProtocolVersion()
	}
	t.mu.Unlock()
	r.saveLater(t)
	return r.m.rawCall(ctx, s, c, method, params, name, ext)
}

// boundSession returns the session t is to be asked about in on c's
// server: its own, when that is not c's and the server is the endpoint
// that gave it; "" otherwise.
func (t *Task) boundSession(s *slot, c *mcpclient.Client) string {
	t.mu.Lock()
	session, identity := t.session, t.identity
	t.mu.Unlock()
	if session == "" || session == c.GetSessionId() || identity != sessionIdentity(s.config().spec) {
		return ""
	}
	return session
}

// get sends tasks/get for t through the request pipeline.
func (r *taskRegistry) get(ctx context.Context, s *slot, t *Task) (*wireTask, error) {
	return do(ctx, s, request[*wireTask]{
		method: string(mcp.MethodTasksGet), name: t.id, op: "poll task", replay: alwaysReplayable,
		send: func(ctx context.Context, s *slot, c *mcpclient.Client, id string, _ any) (*wireTask, error) {
			if err := checkProto(t.proto, c); err != nil {
				return nil, err
			}
			t.mu.Lock()
			rs := t.requestState
			t.mu.Unlock()
			raw, err := r.taskCall(ctx, s, c, t, string(mcp.MethodTasksGet), taskParams(id, rs), id, t.proto == protoExt)
			if err != nil {
				return nil, err
			}
			w, err := parseWireTask(t.proto, raw)
			if err == nil && w.ID != id {
				err = fmt.Errorf("tasks/get of task %s answered about task %s", id, w.ID)
			}
			return w, err
		},
	}, nil, r.pollOptions(s), nil)
}

// pollOptions bound a poll: by the server's call Timeout, or else by
// taskPollTimeout.
func (r *taskRegistry) pollOptions(s *slot) []CallOption {
	if s.config().spec.Timeout > 0 {
		return nil
	}
	return taskPollTimeoutOption
}

// taskPollTimeout bounds a poll of a server with no call Timeout.
const taskPollTimeout = 30 * time.Second

var taskPollTimeoutOption = []CallOption{WithCallTimeout(taskPollTimeout)}

// result sends tasks/result for t. A patient one waits as long as the
// task runs, and ends with t's runtime.
func (r *taskRegistry) result(ctx context.Context, s *slot, t *Task, patient bool) (*mcp.CallToolResult, error) {
	opts := r.pollOptions(s)
	if patient {
		opts = nil
	}
	return do(ctx, s, request[*mcp.CallToolResult]{
		method: string(mcp.MethodTasksResult), name: t.id, op: "collect task", replay: alwaysReplayable, patient: patient,
		send: func(ctx context.Context, s *slot, c *mcpclient.Client, id string, _ any) (*mcp.CallToolResult, error) {
			if err := checkProto(t.proto, c); err != nil {
				return nil, err
			}
			if patient {
				// Ends at detach, so that Disable does not wait for it.
				if l := s.leaseOf(c); l != nil {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					defer cancel()
					defer context.AfterFunc(l.ctx, cancel)()
				}
			}
			raw, err := r.taskCall(ctx, s, c, t, string(mcp.MethodTasksResult), taskParams(id, ""), id, false)
			if err != nil {
				return nil, err
			}
			return parseToolResult(raw)
		},
	}, nil, opts, nil)
}

// fulfil answers input requests with the host's handlers, in key order, as
// the runtime of c would answer the server's own requests (the same
// admission, the same interceptors).
func (r *taskRegistry) fulfil(ctx context.Context, s *slot, c *mcpclient.Client, inputs mcp.InputRequests) (mcp.InputResponses, error) {
	l := s.leaseOf(c)
	if l == nil {
		return nil, errors.New("the runtime was replaced")
	}
	h := &leaseHandlers{m: r.m, l: l}
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(mcp.InputResponses, len(inputs))
	for _, k := range keys {
		in := inputs[k]
		switch in.Method {
		case mcp.MethodElicitationCreate:
			if r.m.opts.elicitation == nil || in.Elicitation == nil {
				return nil, fmt.Errorf("%q: elicitation: the host has no elicitation handler", k)
			}
			res, err := h.Elicit(ctx, mcp.ElicitationRequest{Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)}, Params: *in.Elicitation})
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = mcp.NewElicitationInputResponse(*res)
		case mcp.MethodSamplingCreateMessage:
			if r.m.opts.sampling == nil || in.Sampling == nil {
				return nil, fmt.Errorf("%q: sampling: the host has no sampling handler", k)
			}
			res, err := h.CreateMessage(ctx, mcp.CreateMessageRequest{Request: mcp.Request{Method: string(mcp.MethodSamplingCreateMessage)}, CreateMessageParams: *in.Sampling})
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = mcp.NewSamplingInputResponse(*res)
		case mcp.MethodListRoots:
			if !r.m.opts.rootsEnabled {
				return nil, fmt.Errorf("%q: roots: the host declares no roots", k)
			}
			res, err := h.ListRoots(ctx, mcp.ListRootsRequest{})
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = mcp.NewRootsInputResponse(*res)
		default:
			return nil, fmt.Errorf("%q: unsupported input request %q", k, in.Method)
		}
	}
	return out, nil
}

// sendCancel is the send function of tasks/cancel. A 2025-11-25 server
// answers with the task, which is taken in.
func (t *Task) sendCancel(ctx context.Context, s *slot, c *mcpclient.Client, id string, _ any) (struct{}, error) {
	if err := checkProto(t.proto, c); err != nil {
		return struct{}{}, err
	}
	t.mu.Lock()
	rs := t.requestState
	t.mu.Unlock()
	r := t.m.tasks
	raw, err := r.taskCall(ctx, s, c, t, string(mcp.MethodTasksCancel), taskParams(id, rs), id, t.proto == protoExt)
	if err != nil {
		return struct{}{}, err
	}
	if t.proto == protoCore {
		if w, err := parseWireTask(t.proto, raw); err == nil && w.ID == id {
			if r.observe(t, w) {
				_ = r.save(t)
			}
			if w.Status == TaskCancelled {
				r.end(t, TaskCancelled, nil, t.taskError(ErrTaskCancelled, nil, w.Message), "")
			}
		}
	}
	return struct{}{}, nil
}

// leaseOf returns the slot's lease if it is c's, or nil.
func (s *slot) leaseOf(c *mcpclient.Client) *lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.lease; l != nil && l.client == c {
		return l
	}
	return nil
}
