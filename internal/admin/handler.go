package admin

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
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

// Handler is the admin endpoint of a running serve: JSON over HTTP for the
// command line's status, tools, call, watch, auth, enable, disable,
// reconnect and reload against it, and a status page for a browser. Every
// request but the page's files must carry the bearer token; a request
// with an Origin header other than the endpoint's own (a browser on
// another page) or a Host that is not local is refused, so that no web
// page can reach it through the user's browser. Serve it on a loopback
// address only.
//
//	GET  /status                     the status page (/status.js, /status.css); the token in its #fragment
//	GET  /v1/events                  server-sent events: serve, servers, event (see events)
//	GET  /v1/status                  {"serve": ServeInfo, "servers": [ServerReport...]}
//	GET  /v1/tools?q=QUERY&k=N       {"tools": [ToolReport...]}; &schema=1 adds the schemas
//	POST /v1/call  CallRequest       StreamLine per line: progress..., result or error
//	GET  /v1/watch                   StreamLine per line: servers, then event...
//	POST /v1/auth?server=NAME        StreamLine per line: url, then done or error
//	POST /v1/servers/NAME/OP         OP enable, disable or reconnect: {"server": ServerReport}
//	POST /v1/reload                  ReloadReport: the config file read again, now
type Handler struct {
	m     *client.Manager
	token string
	o     Options
	mux   *http.ServeMux

	mu sync.Mutex // guards ts
	ts *client.ToolSearch
}

// Options are what a Handler reports beyond its Manager.
type Options struct {
	// Gateway is the gateway that serves the Manager, so that the status
	// reports what it decided of the catalog itself: the resource
	// templates it quarantined (see gateway.QuarantinedTemplate).
	Gateway *gateway.Gateway
	// Serve says which serve answers (status shows it).
	Serve ServeInfo
	// Reload, if set, reads the config file again and applies it at once
	// (configfile.Watcher.Reload): a command that has just edited the file
	// asks for it. Without it, POST /v1/reload answers 404.
	Reload func(ctx context.Context) (client.ApplyResult, error)
}

// ServeInfo says which serve an admin endpoint belongs to.
type ServeInfo struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Serving is what it serves MCP on: "stdio", or its HTTP endpoint.
	Serving string `json:"serving,omitempty"`
	Version string `json:"version,omitempty"`
	Config  string `json:"config,omitempty"`
}

// ReloadReport is the answer of POST /v1/reload: what the Apply did
// (client.ApplyResult.String), or why the file was not applied.
type ReloadReport struct {
	Summary string `json:"summary,omitempty"`
	Error   string `json:"error,omitempty"`
}

// New returns the admin endpoint of m, answering requests that carry
// token. It panics if token is empty: an admin endpoint without one would
// let any local process call every tool.
func New(m *client.Manager, token string, o Options) *Handler {
	if token == "" {
		panic("mcpfleet: admin: New needs a token")
	}
	a := &Handler{m: m, token: token, o: o, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /v1/status", a.status)
	a.mux.HandleFunc("GET /v1/tools", a.tools)
	a.mux.HandleFunc("POST /v1/call", a.call)
	a.mux.HandleFunc("GET /v1/watch", a.watch)
	a.mux.HandleFunc("POST /v1/auth", a.auth)
	a.mux.HandleFunc("POST /v1/servers/{name}/{op}", a.control)
	a.mux.HandleFunc("GET /v1/events", a.events)
	if o.Reload != nil {
		a.mux.HandleFunc("POST /v1/reload", a.reload)
	}
	return a
}

// reports are the servers' reports, with what the gateway adds.
func (a *Handler) reports(statuses []client.ServerStatus) []ServerReport {
	out := MakeReports(statuses, a.m.Stats())
	if g := a.o.Gateway; g != nil {
		addQuarantined(out, g.QuarantinedTemplates())
	}
	return out
}

// Close releases the tool search index the endpoint may have built.
func (a *Handler) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts != nil {
		a.ts.Close()
		a.ts = nil
	}
}

func (a *Handler) search() *client.ToolSearch {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ts == nil {
		a.ts = a.m.NewToolSearch()
	}
	return a.ts
}

func (a *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A browser names the page that sent a request (Origin): only the
	// status page itself, on this very address, may (DNS rebinding names
	// another host, which is refused too).
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host || !localHost(r.Host) {
		http.Error(w, "mcpfleet: the admin endpoint answers local programs and its own status page only", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodGet && servePage(w, r) {
		return
	}
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
		http.Error(w, "mcpfleet: a bearer token is required", http.StatusUnauthorized)
		return
	}
	a.mux.ServeHTTP(w, r)
}

func (a *Handler) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"serve": a.o.Serve, "servers": a.reports(a.m.Statuses())})
}

func (a *Handler) tools(w http.ResponseWriter, r *http.Request) {
	k, _ := strconv.Atoi(r.URL.Query().Get("k"))
	q := r.URL.Query().Get("q")
	var ts *client.ToolSearch
	if q != "" {
		ts = a.search()
	}
	tools, err := ToolReports(a.m, ts, q, k, r.URL.Query().Get("schema") == "1")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]any{"tools": tools})
}

// control enables, disables or reconnects a server, and answers with its
// report once the Manager did.
func (a *Handler) control(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var err error
	switch op := r.PathValue("op"); op {
	case "enable":
		err = a.m.Enable(r.Context(), name)
	case "disable":
		err = a.m.Disable(r.Context(), name)
	case "reconnect":
		err = a.m.Reconnect(r.Context(), name)
	default:
		http.Error(w, fmt.Sprintf("mcpfleet: no operation %q (want enable, disable or reconnect)", op), http.StatusNotFound)
		return
	}
	switch {
	case errors.Is(err, client.ErrUnknownServer):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	for _, rep := range a.reports(a.m.Statuses()) {
		if rep.Name == name {
			writeJSON(w, map[string]any{"server": rep})
			return
		}
	}
	http.Error(w, fmt.Sprintf("mcpfleet: server %q is gone", name), http.StatusNotFound)
}

func (a *Handler) reload(w http.ResponseWriter, r *http.Request) {
	res, err := a.o.Reload(r.Context())
	rep := ReloadReport{Summary: res.String()}
	if err != nil {
		rep.Error = err.Error()
	}
	writeJSON(w, rep)
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

func (a *Handler) call(w http.ResponseWriter, r *http.Request) {
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

func (a *Handler) watch(w http.ResponseWriter, r *http.Request) {
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

func (a *Handler) auth(w http.ResponseWriter, r *http.Request) {
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

// ErrRefused is the error of a request the admin endpoint refused.
var ErrRefused = errors.New("mcpfleet: admin endpoint")

// Refused turns a refusal of the admin endpoint (status and body) into an
// error that wraps ErrRefused.
func Refused(status int, body string) error {
	return fmt.Errorf("%w: %d %s: %s", ErrRefused, status, http.StatusText(status), strings.TrimSpace(body))
}
