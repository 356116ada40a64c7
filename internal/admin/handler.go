package admin

import (
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

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

// Handler is the admin endpoint of a running serve: JSON over HTTP for the
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
type Handler struct {
	m     *client.Manager
	token string
	gw    atomic.Pointer[gateway.Gateway] // see SetGateway

	mu sync.Mutex // guards ts
	ts *client.ToolSearch
}

// New returns the admin endpoint of m, answering requests that carry
// token. It panics if token is empty: an admin endpoint without one would
// let any local process call every tool.
func New(m *client.Manager, token string) *Handler {
	if token == "" {
		panic("mcpfleet: admin: New needs a token")
	}
	return &Handler{m: m, token: token}
}

// SetGateway names the gateway that serves m, so that the status reports
// what it decided of the catalog itself: the resource templates it
// quarantined (see gateway.QuarantinedTemplate).
func (a *Handler) SetGateway(g *gateway.Gateway) { a.gw.Store(g) }

// reports are the servers' reports, with what the gateway adds.
func (a *Handler) reports(statuses []client.ServerStatus) []ServerReport {
	out := MakeReports(statuses, a.m.Stats())
	if g := a.gw.Load(); g != nil {
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
