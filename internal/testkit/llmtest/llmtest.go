// Package llmtest is what the LLM adapters' tests share: a Manager with
// in-process servers whose tools return text, structured content, images
// and errors (two of them only answer when called at the same time, which
// proves a model turn's calls run concurrently), a stand-in for a
// provider's HTTP API that replays canned responses and records requests,
// and golden files with an -update flag.
package llmtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files of the LLM adapter tests")

// Golden compares got with testdata/name, or writes it there with -update.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the adapter sent (go test -update rewrites it):\n got: %.600s\nwant: %.600s", path, got, want)
	}
}

// Marshal is json.Marshal that fails t on an error.
func Marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Indent reindents JSON for a readable golden file; its bytes stay those
// the SDK sent, only whitespace differs.
func Indent(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// CorpusFleet is a Fleet over some servers of the tool corpus: a View
// only; its calls fail.
type CorpusFleet struct{ V *snapshot.View }

// NewCorpusFleet returns the View of the named corpus servers, published
// in the order named.
func NewCorpusFleet(t testing.TB, names ...string) CorpusFleet {
	t.Helper()
	all, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var keep []toolcorpus.Server
	for _, n := range names {
		for _, s := range all {
			if s.Name == n {
				keep = append(keep, s)
			}
		}
	}
	if len(keep) != len(names) {
		t.Fatalf("corpus has %d of the servers %v", len(keep), names)
	}
	return CorpusFleet{V: toolcorpus.View(toolcorpus.Publisher(keep, 1))}
}

// View returns the View.
func (f CorpusFleet) View() *snapshot.View { return f.V }

// Call fails: the corpus has no servers behind it.
func (f CorpusFleet) Call(context.Context, string, any, ...client.CallOption) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("the corpus fleet cannot call tools")
}

// PNG is a 1x1 PNG the photos server returns.
var PNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// Fleet is a Manager with these servers, all in process:
//
//   - weather: get_forecast(city) answers text and structured content
//     {"city", "tempC": 21}.
//   - photos: get_photo(id) answers an image and a caption; flaky() answers
//     isError "quota exceeded".
//   - off: ping(), disabled, so a call fails with ErrDisabled.
//
// get_forecast and get_photo answer only once both are in flight (or fail
// with isError "not called concurrently" after 10 s), so a model turn that
// calls both proves they ran at once.
func Fleet(t testing.TB) *client.Manager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	var once [2]sync.Once
	barrier := func(ctx context.Context, i int) bool {
		once[i].Do(arrived.Done)
		select {
		case <-both:
			return true
		case <-time.After(10 * time.Second):
			return false
		case <-ctx.Done():
			return false
		}
	}
	t.Cleanup(func() {
		once[0].Do(arrived.Done)
		once[1].Do(arrived.Done)
		<-both
	})

	weather := server.NewMCPServer("weather", "1.0.0")
	weather.AddTool(mcp.NewTool("get_forecast", mcp.WithDescription("Get the weather forecast for a city"),
		mcp.WithString("city", mcp.Required(), mcp.Description("City name")),
		mcp.WithNumber("days", mcp.Description("How many days ahead")),
		mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !barrier(ctx, 0) {
				return mcp.NewToolResultError("not called concurrently"), nil
			}
			city := req.GetString("city", "?")
			return mcp.NewToolResultStructured(map[string]any{"city": city, "tempC": 21}, "Sunny in "+city+", 21 °C"), nil
		})
	photos := server.NewMCPServer("photos", "1.0.0")
	photos.AddTool(mcp.NewTool("get_photo", mcp.WithDescription("Get a photo by id"),
		mcp.WithString("id", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !barrier(ctx, 1) {
				return mcp.NewToolResultError("not called concurrently"), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("photo " + req.GetString("id", "?")),
				mcp.NewImageContent(base64.StdEncoding.EncodeToString(PNG), "image/png"),
			}}, nil
		})
	photos.AddTool(mcp.NewTool("flaky", mcp.WithDescription("Fails with a tool error")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("quota exceeded"), nil
		})
	off := server.NewMCPServer("off", "1.0.0")
	off.AddTool(mcp.NewTool("ping", mcp.WithDescription("Ping")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("pong"), nil
		})

	m := client.New()
	t.Cleanup(func() { m.Close() })
	for name, srv := range map[string]*server.MCPServer{"weather": weather, "photos": photos, "off": off} {
		if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcess(srv)}); err != nil {
			t.Fatal(err)
		}
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Disable(ctx, "off"); err != nil {
		t.Fatal(err)
	}
	return m
}

// Reconnect reconnects the weather and photos servers of Fleet and waits
// for the event of each one's new runtime.
func Reconnect(t testing.TB, m *client.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"weather", "photos"} {
		before, err := m.Status(name)
		if err != nil {
			t.Fatal(err)
		}
		events, stop := m.Events(0)
		if err := m.Reconnect(ctx, name); err != nil {
			stop()
			t.Fatal(err)
		}
		for connected := false; !connected; {
			select {
			case e := <-events:
				connected = e.Server == name && e.Kind == client.EventState && e.To == lifecycle.Connected && e.Generation > before.Generation
			case <-ctx.Done():
				stop()
				t.Fatalf("%s: no new runtime", name)
			}
		}
		stop()
	}
}

// ExampleFleet is an empty Manager for the adapters' examples.
func ExampleFleet() *client.Manager { return client.New() }

// Provider is a stand-in for an LLM provider's HTTP API: it answers each
// request with the next of its responses and records what it was sent.
type Provider struct {
	URL string

	mu        sync.Mutex
	responses []string
	requests  []Request
}

// Request is one request the stand-in got.
type Request struct {
	Method, Path string
	Body         []byte
}

// NewProvider starts a stand-in that answers with responses, in order,
// as JSON, and 500 once they run out.
func NewProvider(t testing.TB, responses ...string) *Provider {
	t.Helper()
	p := &Provider{responses: responses}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.requests = append(p.requests, Request{Method: r.Method, Path: r.URL.Path, Body: body})
		var resp string
		ok := len(p.responses) > 0
		if ok {
			resp, p.responses = p.responses[0], p.responses[1:]
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"the stand-in has no more responses"}}`)
			return
		}
		io.WriteString(w, resp)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Requests returns what the stand-in was sent so far.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// ReadFile reads testdata/name, for canned responses kept as files.
func ReadFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
