package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/cputime"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// BenchmarkPeers is a call (echo, one string argument) through a gateway
// over streamable HTTP to one stdio upstream (the fault server: mcp-go's
// server, a Go child), side by side in one run:
//
//   - impl=gateway: this gateway (a Manager and the Gateway's HTTP
//     handler, in the benchmark's process), with the per-client limits off
//     (the others have none);
//   - impl=floor: the least a gateway on this stack does: mcp-go's
//     streamable HTTP server whose tool forwards the request to an mcp-go
//     stdio client of the upstream (which names itself, as every MCP
//     client must), in the benchmark's process;
//   - impl=floor-listed: the floor whose stdio client listed the
//     upstream's tools first, as a gateway must to serve them: mcp-go's
//     client then mirrors the x-mcp-header arguments of every tools/call
//     into HTTP headers (SEP-2243) from the listed definition, over stdio
//     too, where no header goes anywhere. What that costs the floor is
//     what it costs the gateway's Manager (see BENCHMARKS.md);
//   - impl=mcp-proxy and impl=supergateway: the gateways users pick
//     instead, from npm (testdata/npm), each a node process of its own
//     that starts the upstream, as their users run them (supergateway's
//     default is stateless: a child per request).
//
// The clients are mcp-go's over streamable HTTP, speaking 2025-11-25 (the
// newest protocol all four serve), callers=1 (one client calling in a
// loop) or callers=16 (sixteen clients, each its own session, calling at
// once): ns/op is the wall time per call. After the timed calls the
// upstream is killed and each gateway is asked again (for 10 s):
// answers-after-kill is 1 if it answered.
func BenchmarkPeers(b *testing.B) {
	inv := faultserver.Command(faultserver.ModeNormal)
	for _, impl := range []string{"gateway", "floor", "floor-listed", "mcp-proxy", "supergateway"} {
		for _, callers := range []int{1, 16} {
			b.Run(fmt.Sprintf("impl=%s/callers=%d", impl, callers), func(b *testing.B) {
				url, tool := startPeer(b, impl, inv)
				clients := make([]*mcpclient.Client, callers)
				for i := range clients {
					clients[i] = peerClient(b, url)
				}
				call := func(c *mcpclient.Client, name string) (*mcp.CallToolResult, error) {
					req := mcp.CallToolRequest{}
					req.Params.Name, req.Params.Arguments = name, map[string]any{"text": "hello"}
					return c.CallTool(context.Background(), req)
				}
				if res, err := call(clients[0], tool+"echo"); err != nil || res.IsError {
					b.Fatalf("first call: %+v %v", res, err)
				}
				var next atomic.Int64
				var failed atomic.Int64
				cpu := cputime.Process()
				b.ResetTimer()
				var wg sync.WaitGroup
				for _, c := range clients {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							if res, err := call(c, tool+"echo"); err != nil || res.IsError {
								failed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				if impl == "gateway" || strings.HasPrefix(impl, "floor") {
					// The process's CPU per call: client, gateway and
					// server side in one (the upstream child's not);
					// the node gateways' is in processes of their own.
					cputime.Report(b, cpu)
				}
				if n := failed.Load(); n > 0 {
					b.Fatalf("%d of %d calls failed", n, b.N)
				}
				// Not in the run that sizes b.N (the check takes up to
				// 10 s), nor with PEERS_SKIP_KILL set, for counts of the
				// calls' instructions alone (BENCHMARKS.md, issue 40).
				if b.N > 1 && os.Getenv("PEERS_SKIP_KILL") == "" {
					b.ReportMetric(answersAfterKill(b, clients[0], tool, call), "answers-after-kill")
				}
			})
		}
	}
}

// answersAfterKill kills the upstream (by the pid it tells) and reports 1
// if the gateway answers a call again within 10 s.
func answersAfterKill(b *testing.B, c *mcpclient.Client, tool string,
	call func(*mcpclient.Client, string) (*mcp.CallToolResult, error)) float64 {
	res, err := call(c, tool+"pid")
	if err != nil || res.IsError || len(res.Content) == 0 {
		b.Fatalf("pid: %+v %v", res, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(res.Content[0].(mcp.TextContent).Text))
	if err != nil {
		b.Fatal(err)
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool+"echo", map[string]any{"text": "after"}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := c.CallTool(cctx, req)
		ccancel()
		if err == nil && !res.IsError {
			return 1
		}
		select { // a gateway that reconnects needs a moment; ask again
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return 0
}

// peerClient connects an mcp-go client to url, 2025-11-25.
func peerClient(b *testing.B, url string) *mcpclient.Client {
	b.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion("2025-11-25"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatalf("initialize %s: %v", url, err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// startPeer starts impl in front of the upstream inv and returns its MCP
// endpoint and the prefix of the upstream's tools there.
func startPeer(b *testing.B, impl string, inv faultserver.Invocation) (url, prefix string) {
	b.Helper()
	switch impl {
	case "gateway":
		m := client.New()
		b.Cleanup(func() { m.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Add(ctx, "up", client.ServerSpec{Stdio: &stdio.Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}}); err != nil {
			b.Fatal(err)
		}
		if err := m.WaitFor(ctx, "up", lifecycle.Connected); err != nil {
			b.Fatal(err)
		}
		g := gateway.New(m, gateway.WithClientLimits(-1, -1), gateway.WithSessionCaps(-1, -1, -1))
		h := g.HTTPHandler(gateway.HTTPOptions{})
		ts := httptest.NewServer(h)
		b.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = h.Shutdown(ctx)
			ts.CloseClientConnections()
			ts.Close()
			g.Close()
		})
		return ts.URL + "/mcp", "up__"
	case "floor", "floor-listed":
		up, err := mcpclient.NewStdioMCPClient(inv.Path, inv.EnvList(), inv.Args...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { up.Close() })
		// A client names itself (clientInfo is required by every
		// protocol revision's initialize, and 2026-07-28 carries it in
		// every request's _meta), as the gateway's Manager does.
		init := mcp.InitializeRequest{}
		init.Params.ClientInfo = mcp.Implementation{Name: "floor", Version: "1"}
		if _, err := up.Initialize(context.Background(), init); err != nil {
			b.Fatal(err)
		}
		if impl == "floor-listed" {
			if _, err := up.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
				b.Fatal(err)
			}
		}
		s := server.NewMCPServer("floor", "1")
		forward := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, req)
		}
		s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), forward)
		s.AddTool(mcp.NewTool("pid"), forward)
		ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
		b.Cleanup(func() {
			ts.CloseClientConnections()
			ts.Close()
		})
		return ts.URL + "/mcp", ""
	}
	port := freePort(b)
	var args []string
	var ready string
	switch impl {
	case "mcp-proxy":
		args = append([]string{"--port", port, "--host", "127.0.0.1", "--", inv.Path}, inv.Args...)
		ready = "starting server on port " + port
	case "supergateway":
		args = []string{"--stdio", strings.Join(append([]string{inv.Path}, inv.Args...), " "),
			"--outputTransport", "streamableHttp", "--port", port}
		ready = "Listening on port " + port
	}
	cmd := exec.Command(npmtest.Bin(b, impl), args...)
	cmd.Env = append(os.Environ(), inv.EnvList()...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	seen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(seen) })
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-seen:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s never said %q", impl, ready)
	}
	// mcp-proxy says so a moment before it listens.
	for start := time.Now(); ; {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			break
		}
		if time.Since(start) > 30*time.Second {
			b.Fatalf("%s does not listen on %s: %v", impl, port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "http://127.0.0.1:" + port + "/mcp", ""
}

// freePort returns a port of 127.0.0.1 free a moment ago.
func freePort(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}
