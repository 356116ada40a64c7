package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/upstream"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawSession is a downstream session driven by hand over HTTP, to send
// what no SDK would.
type rawSession struct {
	t   testing.TB
	url string
	id  string
}

func newRawSession(t testing.TB, url string) *rawSession {
	s := &rawSession{t: t, url: url}
	resp, _ := s.post(initialize)
	s.id = resp.Header.Get("Mcp-Session-Id")
	if s.id == "" {
		t.Fatalf("initialize: no session id (%d)", resp.StatusCode)
	}
	if resp, _ := s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return s
}

// post sends body and returns the response and the JSON-RPC message in it.
func (s *rawSession) post(body string) (*http.Response, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(s.t), http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(text, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				text = d
			}
		}
	}
	var msg map[string]any
	_ = json.Unmarshal([]byte(strings.TrimSpace(text)), &msg)
	return resp, msg
}

// errorOf returns the message's error code and message, if it has one.
func errorOf(msg map[string]any) (float64, string) {
	e, _ := msg["error"].(map[string]any)
	if e == nil {
		return 0, ""
	}
	code, _ := e["code"].(float64)
	m, _ := e["message"].(string)
	return code, m
}

// TestBadInputHTTP: a malformed message gets a JSON-RPC error, one over the
// size limit is refused (413) with a JSON-RPC error carrying its id
// wherever the id is, and the session goes on serving after each.
func TestBadInputHTTP(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(upstream.New("a").MCPServer)}},
		gateway.WithMaxMessageBytes(1024))
	s := newRawSession(t, f.serveHTTP(t, gateway.HTTPOptions{}))
	works := func() {
		t.Helper()
		if _, msg := s.post(`{"jsonrpc":"2.0","id":100,"method":"tools/list"}`); msg["result"] == nil {
			t.Fatalf("tools/list after bad input: %v", msg)
		}
	}
	if _, msg := s.post(`{"jsonrpc":"2.0","id":2,"method":`); !hasCode(msg, -32700) {
		t.Fatalf("malformed JSON: %v", msg)
	}
	works()
	if _, msg := s.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"not an object"}`); msg["error"] == nil {
		t.Fatalf("params of the wrong type: %v", msg)
	}
	works()
	// Arguments that are not an object: a result the model can read, the
	// server never asked; as a task, an invalid-params error.
	for _, args := range []string{`[1,2]`, `"text"`, `7`} {
		_, msg := s.post(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a__echo","arguments":` + args + `}}`)
		res, _ := msg["result"].(map[string]any)
		if res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "a__echo: arguments must be a JSON object") {
			t.Fatalf("arguments %s: %v", args, msg)
		}
		_, msg = s.post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__echo","task":{},"arguments":` + args + `}}`)
		if code, m := errorOf(msg); code != -32602 || !strings.Contains(m, "a__echo: arguments must be a JSON object") {
			t.Fatalf("arguments %s of a task: %v", args, msg)
		}
		works()
	}
	if _, msg := s.post(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a__echo","arguments":null}}`); msg["result"] == nil {
		t.Fatalf("null arguments: %v", msg)
	}
	big := strings.Repeat("x", 2048)
	for _, x := range []struct {
		id   float64
		body string
	}{
		{4, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"` + big + `"}}}`},
		// The TypeScript SDK puts the id last.
		{5, `{"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"` + big + `"}},"jsonrpc":"2.0","id":5}`},
	} {
		resp, msg := s.post(x.body)
		code, m := errorOf(msg)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || code != -32600 || !strings.Contains(m, "message too large") ||
			!strings.Contains(m, "limit 1024") {
			t.Fatalf("oversized: %d %v", resp.StatusCode, msg)
		}
		if msg["id"] != x.id {
			t.Fatalf("oversized: id %v, want %v", msg["id"], x.id)
		}
		works()
	}
}

func hasCode(msg map[string]any, want float64) bool {
	code, _ := errorOf(msg)
	return code == want
}

// TestBadInputStdio: the same over stdio, where every message is a line
// and a refusal must carry the id for the client to match it.
func TestBadInputStdio(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(upstream.New("a").MCPServer)}},
		gateway.WithMaxMessageBytes(1024))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- f.g.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		for lines.Scan() {
			var msg map[string]any
			if err := json.Unmarshal(lines.Bytes(), &msg); err != nil {
				t.Fatalf("%q: %v", lines.Text(), err)
			}
			if msg["method"] != nil {
				continue // a notification of the gateway's
			}
			return msg
		}
		t.Fatalf("stdout ended: %v", lines.Err())
		return nil
	}
	send(initialize)
	if msg := next(); msg["result"] == nil {
		t.Fatalf("initialize: %v", msg)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":`)
	if msg := next(); !hasCode(msg, -32700) {
		t.Fatalf("malformed: %v", msg)
	}
	big := strings.Repeat("y", 4096)
	send(`{"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"` + big + `"}},"jsonrpc":"2.0","id":9}`)
	msg := next()
	if code, m := errorOf(msg); code != -32600 || msg["id"] != float64(9) || !strings.Contains(m, "message too large") {
		t.Fatalf("oversized: %v", msg)
	}
	send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"fine"}}}`)
	if msg := next(); msg["id"] != float64(10) || msg["result"] == nil {
		t.Fatalf("after bad input: %v", msg)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// TestStdioClientGoneCancels: a client over stdio that goes away (its
// stdin ends) has its calls in flight cancelled upstream.
func TestStdioClientGoneCancels(t *testing.T) {
	up := upstream.New("a")
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(up.MCPServer)}})
	inR, inW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- f.g.ServeStdio(context.Background(), inR, io.Discard) }()
	for _, line := range []string{
		initialize,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__slow","arguments":{"label":"gone"}}}`,
	} {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	mustRecv(t, up.Started, "gone")
	inW.Close()
	mustRecv(t, up.Cancelled, "gone")
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestCheckBind: beyond loopback the gateway needs authentication, and a
// bearer token needs TLS (or the host's explicit word that the path is
// safe): anyone on the path could otherwise read the token and call every
// tool with it.
func TestCheckBind(t *testing.T) {
	for _, c := range []struct {
		addr string
		s    gateway.BindSecurity
		want error
	}{
		{"127.0.0.1:8931", gateway.BindSecurity{}, nil},
		{"[::1]:8931", gateway.BindSecurity{Token: true}, nil},
		{"localhost:8931", gateway.BindSecurity{}, nil},
		{"0.0.0.0:8931", gateway.BindSecurity{}, gateway.ErrInsecureBind},
		{":8931", gateway.BindSecurity{}, gateway.ErrInsecureBind},
		{"0.0.0.0:8931", gateway.BindSecurity{Token: true}, gateway.ErrTokenInClear},
		{"10.0.0.5:8931", gateway.BindSecurity{Token: true, InsecureHTTP: true}, nil},
		{"0.0.0.0:8931", gateway.BindSecurity{Token: true, TLS: true}, nil},
		{"0.0.0.0:8931", gateway.BindSecurity{TLS: true, ClientCerts: true}, nil},
		{"0.0.0.0:8931", gateway.BindSecurity{TLS: true}, gateway.ErrInsecureBind},
	} {
		if err := gateway.CheckBind(c.addr, c.s); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("CheckBind(%s, %+v) = %v, want %v", c.addr, c.s, err, c.want)
		}
	}
}
