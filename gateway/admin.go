package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// EventReport is one client.Event as the admin endpoint's watch stream and
// the command line's `watch --json` give it.
type EventReport struct {
	Seq              uint64    `json:"seq"`
	Time             time.Time `json:"time"`
	Kind             string    `json:"kind"`
	Server           string    `json:"server"`
	From             string    `json:"from,omitempty"`
	To               string    `json:"to,omitempty"`
	Generation       uint64    `json:"generation,omitempty"`
	Attempt          int       `json:"attempt,omitempty"`
	NextRetry        time.Time `json:"nextRetry,omitzero"`
	Error            string    `json:"error,omitempty"`
	Protocol         string    `json:"protocol,omitempty"`
	Added            []string  `json:"added,omitempty"`
	Removed          []string  `json:"removed,omitempty"`
	Changed          []string  `json:"changed,omitempty"`
	Level            string    `json:"level,omitempty"`
	Logger           string    `json:"logger,omitempty"`
	Data             any       `json:"data,omitempty"`
	URI              string    `json:"uri,omitempty"`
	Method           string    `json:"method,omitempty"`
	Count            uint64    `json:"count,omitempty"`
	AuthorizationURL string    `json:"authorizationUrl,omitempty"`
	Dropped          uint64    `json:"dropped,omitempty"`
}

// MakeEventReport turns ev into its report.
func MakeEventReport(ev client.Event) EventReport {
	r := EventReport{Seq: ev.Seq, Time: ev.Time, Kind: ev.Kind.String(), Server: ev.Server,
		Generation: ev.Generation, Attempt: ev.Attempt, NextRetry: ev.NextRetry, Protocol: ev.Protocol,
		URI: ev.URI, Method: ev.Method, Count: ev.Count, AuthorizationURL: ev.AuthorizationURL, Dropped: ev.Dropped}
	if ev.Kind == client.EventState {
		r.From, r.To = ev.From.String(), ev.To.String()
	}
	if ev.Err != nil {
		r.Error = ev.Err.Error()
	}
	if d := ev.Diff; d != nil {
		r.Added, r.Removed, r.Changed = d.Added, d.Removed, d.Changed
	}
	if l := ev.Log; l != nil {
		r.Level, r.Logger, r.Data = string(l.Level), l.Logger, l.Data
	}
	return r
}

// CallRequest is the body of the admin endpoint's call.
type CallRequest struct {
	Tool      string          `json:"tool"` // qualified, or server/tool
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// StreamLine is one line of the admin endpoint's streamed answers (call,
// watch, auth): exactly one field is set.
type StreamLine struct {
	Servers  []ServerReport      `json:"servers,omitempty"`  // watch: the statuses, first
	Event    *EventReport        `json:"event,omitempty"`    // watch: each event after them
	Progress *ProgressReport     `json:"progress,omitempty"` // call
	Result   *mcp.CallToolResult `json:"result,omitempty"`   // call: the last line
	URL      string              `json:"url,omitempty"`      // auth: where to authorize
	Done     bool                `json:"done,omitempty"`     // auth: authorized
	Error    string              `json:"error,omitempty"`    // the last line of a failure
}

// ProgressReport is one progress notification of a call.
type ProgressReport struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Admin is the admin endpoint of a running gateway: JSON over HTTP for the
// command line's status, tools, call, watch and auth against it. Every
// request must carry the bearer token; a request with an Origin header (a
// browser) or a Host that is not local is refused, so that no web page can
// reach it through the user's browser. Serve it on a loopback address
// only.
//
//	GET  /v1/status              {"servers": [ServerReport...]}
//	GET  /v1/tools?q=QUERY&k=N   {"tools": [ToolReport...]}
//	POST /v1/call  CallRequest   StreamLine per line: progress..., result or error
//	GET  /v1/watch               StreamLine per line: servers, then event...
//	POST /v1/auth?server=NAME    StreamLine per line: url, then done or error
type Admin struct {
	m     *client.Manager
	token string
	gw    atomic.Pointer[Gateway] // see SetGateway

	mu sync.Mutex // guards ts
	ts *client.ToolSearch
}

// NewAdmin returns the admin endpoint of m, answering requests that carry
// token. It panics if token is empty: an admin endpoint without one would
// let any local process call every tool.
func NewAdmin(m *client.Manager, token string) *Admin {
	if token == "" {
		panic("mcpfleet: gateway: NewAdmin needs a token")
	}
	return &Admin{m: m, token: token}
}

// SetGateway names the gateway that serves m, so that the status reports
// what it decided of the catalog itself: the resource templates it
// quarantined (see QuarantinedTemplate).
func (a *Admin) SetGateway(g *Gateway) { a.gw.Store(g) }

// reports are the servers' reports, with what the gateway adds.
func (a *Admin) reports(statuses []client.ServerStatus) []ServerReport {
	out := MakeReports(statuses, a.m.Stats())
	if g := a.gw.Load(); g != nil {
		addQuarantined(out, g.QuarantinedTemplates())
	}
	return out
}

// Close releases the tool search index the endpoint may have built.
func (a *Admin) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts != nil {
		a.ts.Close()
		a.ts = nil
	}
}

func (a *Admin) search() *client.ToolSearch {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts == nil {
		a.ts = a.m.NewToolSearch()
	}
	return a.ts
}

func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" || !localHost(r.Host) {
		http.Error(w, "mcpfleet: the admin endpoint answers local programs only", http.StatusForbidden)
		return
	}
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
		http.Error(w, "mcpfleet: a bearer token is required", http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/status":
		writeJSON(w, map[string]any{"servers": a.reports(a.m.Statuses())})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/tools":
		k, _ := strconv.Atoi(r.URL.Query().Get("k"))
		q := r.URL.Query().Get("q")
		var ts *client.ToolSearch
		if q != "" {
			ts = a.search()
		}
		tools, err := ToolReports(a.m, ts, q, k)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"tools": tools})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/call":
		a.call(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/watch":
		a.watch(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/auth":
		a.auth(w, r)
	default:
		http.NotFound(w, r)
	}
}

// localHost reports whether a request's Host names this machine.
func localHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return netguard.IsLoopback(host)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// stream writes StreamLines, one JSON object a line, flushed each.
type stream struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	enc *json.Encoder
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	return &stream{w: w, enc: json.NewEncoder(w)}
}

func (s *stream) send(l StreamLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(l); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// Call calls tool ("server__tool" as the View names it, or "server/tool")
// with args on m, reporting progress to progress (which may be nil).
func Call(ctx context.Context, m *client.Manager, tool string, args json.RawMessage, progress func(ProgressReport)) (*mcp.CallToolResult, error) {
	var opts []client.CallOption
	if progress != nil {
		opts = append(opts, client.WithProgress(func(p mcp.ProgressNotification) {
			progress(ProgressReport{Progress: p.Params.Progress, Total: p.Params.Total, Message: p.Params.Message})
		}))
	}
	var a any
	if len(args) > 0 {
		a = args
	}
	if srvName, name, ok := strings.Cut(tool, "/"); ok {
		return m.CallTool(ctx, srvName, name, a, opts...)
	}
	return m.Call(ctx, tool, a, opts...)
}

func (a *Admin) call(w http.ResponseWriter, r *http.Request) {
	var req CallRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, client.DefaultMaxMessageBytes)).Decode(&req); err != nil {
		http.Error(w, "mcpfleet: the call's body: "+err.Error(), http.StatusBadRequest)
		return
	}
	s := newStream(w)
	res, err := Call(r.Context(), a.m, req.Tool, req.Arguments, func(p ProgressReport) { _ = s.send(StreamLine{Progress: &p}) })
	if err != nil {
		_ = s.send(StreamLine{Error: err.Error()})
		return
	}
	_ = s.send(StreamLine{Result: res})
}

func (a *Admin) watch(w http.ResponseWriter, r *http.Request) {
	statuses, _, events, cancel := a.m.Watch(0)
	defer cancel()
	s := newStream(w)
	if s.send(StreamLine{Servers: a.reports(statuses)}) != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-events:
			if !ok {
				_ = s.send(StreamLine{Error: "the fleet closed"})
				return
			}
			er := MakeEventReport(ev)
			if s.send(StreamLine{Event: &er}) != nil {
				return
			}
		}
	}
}

func (a *Admin) auth(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("server")
	if name == "" {
		http.Error(w, "mcpfleet: auth needs ?server=NAME", http.StatusBadRequest)
		return
	}
	s := newStream(w)
	err := Authorize(r.Context(), a.m, name, func(u string) error { return s.send(StreamLine{URL: u}) })
	if err != nil {
		_ = s.send(StreamLine{Error: err.Error()})
		return
	}
	_ = s.send(StreamLine{Done: true})
}

// ErrAdmin is the error of a request the admin endpoint refused.
var ErrAdmin = errors.New("mcpfleet: admin endpoint")

// AdminError turns a refusal of the admin endpoint (status and body) into
// an error.
func AdminError(status int, body string) error {
	return fmt.Errorf("%w: %d %s: %s", ErrAdmin, status, http.StatusText(status), strings.TrimSpace(body))
}

// Authorize runs the loopback OAuth flow of server name on m
// (client.Manager.AuthorizeLoopback), once the server's first connection
// attempt has ended: an authorization completed while that attempt is
// under way is not seen by it, which would leave the server waiting for
// another.
func Authorize(ctx context.Context, m *client.Manager, name string, open func(url string) error) error {
	statuses, _, events, cancel := m.Watch(0)
	state := lifecycle.Disconnected
	for _, st := range statuses {
		if st.Name == name {
			state = st.State
		}
	}
	for state == lifecycle.Connecting {
		select {
		case <-ctx.Done():
			cancel()
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				state = lifecycle.Closed
			} else if ev.Kind == client.EventState && ev.Server == name {
				state = ev.To
			}
		}
	}
	cancel()
	return m.AuthorizeLoopback(ctx, name, open)
}
