package faultinject_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
)

// sessionServer is the session handling of a Streamable HTTP server, and
// nothing more: a POST without a session id starts one, a DELETE ends it,
// a GET is a stream that lasts until the client goes.
func sessionServer(t *testing.T) *httptest.Server {
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.Method == http.MethodDelete:
		case r.Header.Get("Mcp-Session-Id") == "":
			w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s%d", n.Add(1)))
		case r.Header.Get("Mcp-Session-Id") == "gone":
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

// The proxy counts the sessions a server creates, the DELETEs and the
// answers that say a session is gone; Cut breaks every connection and the
// next request goes through; Down answers 502 until Up.
func TestHTTPProxySessions(t *testing.T) {
	p := faultinject.StartHTTPProxy(t, sessionServer(t).URL)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	status := func(method, session string) (int, error) {
		req, err := http.NewRequest(method, p.URL("/mcp"), strings.NewReader("{}"))
		if err != nil {
			return 0, err
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		return resp.StatusCode, resp.Body.Close()
	}
	do := func(method, session string) error {
		_, err := status(method, session)
		return err
	}
	for _, step := range []struct{ method, session string }{
		{http.MethodPost, ""}, {http.MethodPost, "s1"}, {http.MethodPost, ""}, {http.MethodPost, "gone"}, {http.MethodDelete, "s1"},
	} {
		if err := do(step.method, step.session); err != nil {
			t.Fatal(err)
		}
	}
	if s, d, g := p.Sessions(), p.Deletes(), p.Gone(); !slices.Equal(s, []string{"s1", "s2"}) || !slices.Equal(d, []string{"s1"}) || g != 1 {
		t.Fatalf("sessions %v, deletes %v, gone %d", s, d, g)
	}

	stream, err := client.Get(p.URL("/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if n := p.Cut(); n == 0 {
		t.Fatal("nothing to cut")
	}
	if _, err := io.ReadAll(stream.Body); err == nil {
		t.Fatal("the stream survived the cut")
	}
	if err := do(http.MethodPost, "s2"); err != nil {
		t.Fatalf("a request after the cut: %v", err)
	}

	p.Down()
	if code, err := status(http.MethodPost, "s2"); err != nil || code != http.StatusBadGateway {
		t.Fatalf("a request while the proxy is down: %d, %v; want 502", code, err)
	}
	p.Up()
	if err := do(http.MethodPost, "s2"); err != nil {
		t.Fatalf("a request after Up: %v", err)
	}
	if p.Cuts() < 1 {
		t.Fatalf("cuts %d", p.Cuts())
	}
}
