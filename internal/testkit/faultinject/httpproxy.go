package faultinject

import (
	"context"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// HTTPProxy is a reverse proxy on 127.0.0.1 in front of a Streamable HTTP
// server that watches the MCP sessions going through it and can break the
// network between client and server:
//
//   - Cut breaks every TCP connection through it at once, on both sides,
//     as a network fault does: the client and the server see their
//     connections break, and the server lives on. New connections go
//     through as before.
//   - Down does the same and answers every request with 502 Bad Gateway
//     until Up, as a load balancer does whose server cannot be reached:
//     a network partition between them, the server living on. (A server
//     that refuses connections is one whose process is gone: clients take
//     what answers there later for a new process.)
//
// It counts the sessions the server created (an answer carrying an
// Mcp-Session-Id to a request that carried none), the DELETEs clients sent,
// and the answers that said a session was gone (404 to a request carrying
// an id), so that a test can tell a client that kept its session across a
// fault from one that started another.
type HTTPProxy struct {
	addr string // fixed by the first listen

	mu       sync.Mutex // guards the fields below
	target   *url.URL
	ln       net.Listener
	srv      *http.Server
	served   chan struct{}
	down     bool
	closed   bool
	conns    map[net.Conn]struct{} // client side and server side
	cuts     int
	sessions []Session   // in the order the server created them
	deletes  []Session   // the DELETEs: the session ids they named, when, in order
	gone     []time.Time // answers of 404 to a request carrying a session id

	upstream *http.Transport
}

// StartHTTPProxy starts a proxy to the server at target (its scheme, host
// and port: "http://127.0.0.1:8080"), and stops it when the test ends.
func StartHTTPProxy(t testing.TB, target string) *HTTPProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("faultinject: http proxy: %v", err)
	}
	p := &HTTPProxy{target: &url.URL{Scheme: u.Scheme, Host: u.Host}, conns: map[net.Conn]struct{}{}}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	p.upstream = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if !p.track(c) {
				c.Close()
				return nil, net.ErrClosed
			}
			return &trackedUpstream{Conn: c, p: p}, nil
		},
		// A connection per request: a kept-alive one that Cut closed
		// could be handed to the next request, which a POST does not
		// survive, and the proxy would answer 502 for a fault of its own.
		DisableKeepAlives:  true,
		DisableCompression: true,
	}
	if err := p.listen(); err != nil {
		t.Fatalf("faultinject: http proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// URL returns the proxy's URL at path ("/mcp").
func (p *HTTPProxy) URL(path string) string { return "http://" + p.addr + path }

// Addr returns the proxy's host:port, which stays across Down and Up.
func (p *HTTPProxy) Addr() string { return p.addr }

func (p *HTTPProxy) listen() error {
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var rp http.Handler = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport:      p.upstream,
		FlushInterval:  -1,
		ModifyResponse: p.observe,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			rp.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				if !p.track(c) {
					c.Close()
				}
			case http.StateClosed, http.StateHijacked:
				p.untrack(c)
			}
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	served := make(chan struct{})
	p.mu.Lock()
	p.ln, p.srv, p.served, p.addr = ln, srv, served, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return nil
}

// track adds c to the connections Cut breaks; false if the proxy is
// closed, and c must not be used.
func (p *HTTPProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *HTTPProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// trackedUpstream is a connection to the server that leaves the proxy's
// set when it closes.
type trackedUpstream struct {
	net.Conn
	p    *HTTPProxy
	once sync.Once
}

func (c *trackedUpstream) Close() error {
	c.once.Do(func() { c.p.untrack(c.Conn) })
	return c.Conn.Close()
}

// Session is a session the server created, as the proxy saw it: its id,
// and when the answer that created it went through.
type Session struct {
	ID string
	At time.Time
	// SSE marks a session of the legacy HTTP+SSE transport: the event
	// stream itself (a GET whose answer is an event stream, on a path
	// ending in /sse), which lasts as long as that stream. Its ID is "".
	SSE bool
}

// observe counts what the answer to a request says of its session.
func (p *HTTPProxy) observe(resp *http.Response) error {
	req := resp.Request
	sent := req.Header.Get("Mcp-Session-Id")
	got := resp.Header.Get("Mcp-Session-Id")
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case req.Method == http.MethodDelete:
		p.deletes = append(p.deletes, Session{ID: sent, At: now})
	case sent == "" && got != "" && resp.StatusCode == http.StatusOK:
		p.sessions = append(p.sessions, Session{ID: got, At: now})
	case sent != "" && resp.StatusCode == http.StatusNotFound:
		p.gone = append(p.gone, now)
	case req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && media == "text/event-stream" &&
		strings.HasSuffix(req.URL.Path, "/sse"):
		p.sessions = append(p.sessions, Session{At: now, SSE: true})
	}
	return nil
}

// SetTarget sends the requests from now on to the server at target (as
// StartHTTPProxy takes it) and cuts every connection: a server restarted
// elsewhere, which knows none of the old one's sessions, behind the same
// address.
func (p *HTTPProxy) SetTarget(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = &url.URL{Scheme: u.Scheme, Host: u.Host}
	p.cutLocked()
	return nil
}

// Cut breaks every connection through the proxy now, on both sides, and
// returns how many it broke.
func (p *HTTPProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cutLocked()
}

func (p *HTTPProxy) cutLocked() int {
	n := 0
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
		n++
	}
	if n > 0 {
		p.cuts++
	}
	return n
}

// Down cuts every connection and answers every request with 502 Bad
// Gateway until Up: the server cannot be reached, and lives on.
func (p *HTTPProxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.cutLocked()
}

// Up lets requests through to the server again after Down.
func (p *HTTPProxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// Close stops the proxy and breaks its connections.
func (p *HTTPProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	ln, served := p.ln, p.served
	p.cutLocked()
	p.mu.Unlock()
	_ = ln.Close()
	<-served
	p.upstream.CloseIdleConnections()
}

// Sessions returns the ids of the sessions the server created, in order
// (legacy SSE sessions left out).
func (p *HTTPProxy) Sessions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, s := range p.sessions {
		if !s.SSE {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// Created returns the sessions the server created, legacy SSE ones
// included, in order.
func (p *HTTPProxy) Created() []Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Session(nil), p.sessions...)
}

// Deletes returns the session ids of the DELETEs clients sent, in order.
func (p *HTTPProxy) Deletes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, len(p.deletes))
	for i, d := range p.deletes {
		ids[i] = d.ID
	}
	return ids
}

// Deleted returns the DELETEs clients sent (the session each named, and
// when), in order.
func (p *HTTPProxy) Deleted() []Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Session(nil), p.deletes...)
}

// Gone returns how many answers said a session was gone (HTTP 404 to a
// request carrying a session id).
func (p *HTTPProxy) Gone() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.gone)
}

// GoneAt returns when the answers that said a session was gone went
// through, in order.
func (p *HTTPProxy) GoneAt() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.gone...)
}

// Cuts returns how many times Cut (or Down) broke connections.
func (p *HTTPProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}
