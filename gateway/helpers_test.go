package gateway_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcpfleettransport "github.com/mcpfleet/mcpfleet/transport"
)

func TestMain(m *testing.M) {
	faultserver.Main() // the test binary doubles as the stdio test server
	goleak.VerifyTestMain(m)
}

// testCtx is a test's context: it ends with the test, and at the latest
// after a minute, so that a wait that never ends fails the test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fleet is a Manager with a Forwarder and a Gateway over it, closed when
// the test ends.
type fleet struct {
	m *client.Manager
	g *gateway.Gateway
}

func newFleet(t testing.TB, servers map[string]client.ServerSpec, opts ...gateway.Option) *fleet {
	t.Helper()
	return newFleetWith(t, servers, nil, opts...)
}

// newFleetWith is newFleet with options of the Manager's too.
func newFleetWith(t testing.TB, servers map[string]client.ServerSpec, mopts []client.Option, opts ...gateway.Option) *fleet {
	t.Helper()
	ctx := testCtx(t)
	fw := gateway.NewForwarder()
	m := client.New(append(fw.ClientOptions(), mopts...)...)
	for name, spec := range servers {
		if err := m.Add(ctx, name, spec); err != nil {
			t.Fatalf("Add %s: %v", name, err)
		}
	}
	for name, spec := range servers {
		if spec.Disabled || spec.Lazy {
			continue
		}
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			t.Fatalf("WaitFor %s: %v", name, err)
		}
	}
	g := gateway.New(m, append([]gateway.Option{gateway.WithForwarder(fw)}, opts...)...)
	t.Cleanup(func() {
		g.Close()
		m.Close()
	})
	return &fleet{m: m, g: g}
}

// serveHTTP serves f's gateway on an httptest server and returns its MCP
// endpoint.
func (f *fleet) serveHTTP(t testing.TB, o gateway.HTTPOptions) string {
	t.Helper()
	h := f.g.HTTPHandler(o)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.CloseClientConnections()
		ts.Close()
	})
	path := o.Path
	if path == "" {
		path = "/mcp"
	}
	return ts.URL + path
}

// inProcess returns a Dialer of srv whose connections the test can kill
// and whose dials it can make fail.
func inProcess(srv *server.MCPServer) (client.Dialer, *inproc.Server) {
	s := inproc.New(srv)
	return func(ctx context.Context) (mcpfleettransport.Conn, error) {
		c, err := s.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return c, nil
	}, s
}

// protocols are the two generations a downstream client may speak.
var protocols = []struct {
	name    string
	version string // "" for the newest
}{
	{"2026-07-28", ""},
	{"2025-11-25", "2025-11-25"},
}

// dial connects an mcp-go client to url, speaking version ("" for the
// newest), with opts.
func dial(t testing.TB, url, version string, opts ...mcpclient.ClientOption) *mcpclient.Client {
	t.Helper()
	ctx := testCtx(t)
	topts := []transport.StreamableHTTPCOption{transport.WithLogger(slog.New(slog.DiscardHandler))}
	if version != "" { // before 2026-07-28 requests and notifications come on a GET stream
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	if version != "" {
		opts = append(opts, mcpclient.WithProtocolVersion(version))
	}
	c := mcpclient.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "gateway-test", Version: "1"}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if version != "" {
		init.Params.ProtocolVersion = version
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// toolNames lists c's tools.
func toolNames(t testing.TB, c *mcpclient.Client) []string {
	t.Helper()
	res, err := c.ListTools(testCtx(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// callText calls tool with args and returns the text of its result, and
// whether it is an error result.
func callText(ctx context.Context, c *mcpclient.Client, tool string, args map[string]any) (string, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, nil
}

func mustCall(t testing.TB, c *mcpclient.Client, tool string, args map[string]any) string {
	t.Helper()
	text, isErr, err := callText(testCtx(t), c, tool, args)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if isErr {
		t.Fatalf("call %s: error result: %s", tool, text)
	}
	return text
}
