// Package tsclient drives the official TypeScript SDK's MCP client, as it
// is published (the pinned @modelcontextprotocol/sdk in testdata/npm),
// from Go tests: client.mjs, run with node, connects to a server over
// stdio or streamable HTTP and answers commands given as JSON lines.
package tsclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
)

// Client is one TypeScript SDK client, in a node process of its own.
type Client struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// Events receives what the client reports unasked: "tools/list_changed",
	// and "asked <method>" for each request of the server's it answered.
	// It is closed when the client exits.
	Events chan string

	mu      sync.Mutex
	nextID  int
	pending map[int]chan reply
	stderr  strings.Builder
	failure string // why connecting failed, as the client said
	exited  chan struct{}
}

type reply struct {
	Tools  []string        `json:"tools"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// Result is a tool's result as the client got it.
type Result struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// Text joins the result's text content.
func (r Result) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// StartStdio starts a client that runs command with args as its stdio
// server, with env added to the environment.
func StartStdio(t testing.TB, env []string, command string, args ...string) *Client {
	return start(t, env, append([]string{"stdio", command}, args...))
}

// StartHTTP starts a client of the streamable HTTP server at url.
func StartHTTP(t testing.TB, url string) *Client {
	return start(t, nil, []string{"http", url})
}

// StartHTTPWithToken starts a client of the streamable HTTP server at url
// that sends token as its bearer token.
func StartHTTPWithToken(t testing.TB, url, token string) *Client {
	return start(t, []string{"TSCLIENT_TOKEN=" + token}, []string{"http", url})
}

// StartHTTPOAuth starts a client of the streamable HTTP server at url that
// authorizes itself with the SDK's own OAuth (discovery from the server's
// 401, registration, authorization code with PKCE and the resource
// indicator), playing user at the authorization server (which must approve
// at once, as oauthtest's does, reading the user from the X-Test-User
// header).
func StartHTTPOAuth(t testing.TB, url, user string) *Client {
	return start(t, []string{"TSCLIENT_OAUTH=" + user}, []string{"http", url})
}

// TryHTTPWithToken is StartHTTPWithToken for a connection that may fail:
// the error says why the client could not connect.
func TryHTTPWithToken(t testing.TB, url, token string) (*Client, error) {
	return try(t, []string{"TSCLIENT_TOKEN=" + token}, []string{"http", url})
}

func start(t testing.TB, env []string, args []string) *Client {
	t.Helper()
	c, err := try(t, env, args)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func try(t testing.TB, env []string, args []string) (*Client, error) {
	t.Helper()
	sdk := npmtest.Package(t, "@modelcontextprotocol/sdk")
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "client.mjs")
	c := &Client{Events: make(chan string, 256), pending: map[int]chan reply{}, exited: make(chan struct{})}
	c.cmd = exec.Command("node", append([]string{script, sdk}, args...)...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &lockedBuilder{mu: &c.mu, b: &c.stderr}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go c.read(stdout, ready)
	t.Cleanup(c.Close)
	select {
	case <-ready:
	case <-c.exited:
		c.mu.Lock()
		failure := c.failure
		c.mu.Unlock()
		return nil, fmt.Errorf("tsclient: the client could not connect: %s\n%s", failure, c.Stderr())
	}
	return c, nil
}

type lockedBuilder struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Stderr returns what the client (and, over stdio, its server) wrote to
// stderr.
func (c *Client) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func (c *Client) read(stdout io.Reader, ready chan struct{}) {
	defer func() {
		_ = c.cmd.Wait()
		c.mu.Lock()
		for id, ch := range c.pending {
			ch <- reply{Error: "tsclient: the client exited"}
			delete(c.pending, id)
		}
		c.mu.Unlock()
		close(c.Events)
		close(c.exited)
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var line struct {
			reply
			ID     *int   `json:"id"`
			Event  string `json:"event"`
			Method string `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch {
		case line.Event == "ready":
			close(ready)
		case line.Event == "failed":
			c.mu.Lock()
			c.failure = line.Error
			c.mu.Unlock()
		case line.Event == "asked":
			c.event("asked " + line.Method)
		case line.Event != "":
			c.event(line.Event)
		case line.ID != nil:
			c.mu.Lock()
			ch := c.pending[*line.ID]
			delete(c.pending, *line.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- line.reply
			}
		}
	}
}

func (c *Client) event(e string) {
	select {
	case c.Events <- e:
	default: // a test that does not read them loses them
	}
}

func (c *Client) send(ctx context.Context, cmd map[string]any) (reply, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return reply{}, fmt.Errorf("tsclient: %w\n%s", err, c.Stderr())
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return reply{}, ctx.Err()
	}
}

// ListTools returns the names of the server's tools, sorted.
func (c *Client) ListTools(ctx context.Context) ([]string, error) {
	r, err := c.send(ctx, map[string]any{"op": "list"})
	if err == nil && r.Error != "" {
		err = fmt.Errorf("tsclient: list: %s", r.Error)
	}
	return r.Tools, err
}

// Call calls tool with args. An error the client raised (a JSON-RPC error,
// a timeout) is the error; an isError result is a result.
func (c *Client) Call(ctx context.Context, tool string, args map[string]any) (Result, error) {
	r, err := c.send(ctx, map[string]any{"op": "call", "name": tool, "arguments": args})
	if err != nil {
		return Result{}, err
	}
	if r.Error != "" {
		return Result{}, fmt.Errorf("tsclient: call %s: %s", tool, r.Error)
	}
	var res Result
	err = json.Unmarshal(r.Result, &res)
	return res, err
}

// Close closes the client (its stdin) and waits for node to exit; one
// that has not within ten seconds is killed.
func (c *Client) Close() {
	c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}
