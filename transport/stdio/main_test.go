package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the servers: these run one and exit when
	// the binary was re-executed as a child, and return otherwise.
	faultserver.Main()
	gosdkserver.Main()
	hostMain() // after the servers: the host's children inherit its variable
	goleak.VerifyTestMain(m)
}

// waitBound bounds every wait on an event in these tests. Generous, since
// -race on a busy 2-core machine is slow; what matters is that nothing
// waits forever, and the latencies are logged. No passing test waits it
// out, so its size costs nothing: at 5 s, with two busy loops beside the
// suite on a machine loaded 16 deep, a 4 MiB answer (TestAnswerOverTheSizeLimit)
// and a node server's start (TestThirdPartyServers) took longer.
const waitBound = 30 * time.Second

// escalationBound bounds a Close whose options make one of its waits
// waitBound long (eofClose's grace, a kill or term timeout): a third of it,
// so that a Close that waited one out fails, and a slow machine's close of
// a few hundred milliseconds does not.
const escalationBound = waitBound / 3

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func faultSpec(mode string, extraEnv ...string) Spec {
	inv := faultserver.Command(mode, extraEnv...)
	return Spec{Command: inv.Path, Args: inv.Args, Env: inv.Env}
}

// fastClose keeps Close's escalation short so tests of hanging children
// stay fast.
var fastClose = []Option{WithCloseGrace(100 * time.Millisecond), WithTermTimeout(300 * time.Millisecond), WithKillTimeout(waitBound)}

// eofClose is for tests that expect the child to exit on stdin EOF. Its
// grace only bounds a broken child: with a short one, how fast a child
// (race-built, on a busy machine) gets to reading stdin would decide
// whether it exits by itself or of SIGTERM.
var eofClose = []Option{WithCloseGrace(waitBound), WithTermTimeout(300 * time.Millisecond), WithKillTimeout(waitBound)}

// startedLine starts the first line the fault server writes to stderr:
// its runtime is up and it is about to serve.
const startedLine = "faultserver: pid="

// dial starts spec and registers a cleanup that closes the Conn and then
// checks that no child or zombie of ours is left.
func dial(t testing.TB, spec Spec, opts ...Option) *Conn {
	t.Helper()
	c, err := Dial(testCtx(t, waitBound), spec, opts...)
	if err != nil {
		t.Fatalf("Dial(%s): %v", spec, err)
	}
	t.Cleanup(func() {
		if err := c.Close(testCtx(t, waitBound)); err != nil {
			t.Errorf("Close: %v", err)
		}
		noChildren(t)
		// Every goroutine of ours and mcp-go's is gone once Close returns
		// (goleak retries briefly while they finish exiting).
		goleak.VerifyNone(t)
	})
	return c
}

// connect builds an mcp-go client on the Conn, starts it and runs the
// handshake, as the Manager does.
func connect(ctx context.Context, c *Conn) (*mcpclient.Client, error) {
	cl := mcpclient.NewClient(c.Transport())
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	var req mcp.InitializeRequest
	req.Params.ClientInfo = mcp.Implementation{Name: "mcpfleet-test", Version: "test"}
	if _, err := cl.Initialize(ctx, req); err != nil {
		return cl, err
	}
	return cl, nil
}

func mustConnect(t testing.TB, c *Conn) *mcpclient.Client {
	t.Helper()
	cl, err := connect(testCtx(t, waitBound), c)
	if err != nil {
		t.Fatalf("connect: %v (Err: %v)", err, c.Err())
	}
	return cl
}

func callTool(ctx context.Context, cl *mcpclient.Client, name string, args map[string]any) (string, error) {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return b.String(), &toolError{b.String()}
	}
	return b.String(), nil
}

type toolError struct{ msg string }

func (e *toolError) Error() string { return "tool error: " + e.msg }

// waitDone waits for the Conn's Done and returns how long it took.
func waitDone(t testing.TB, c *Conn) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-c.Done():
		return time.Since(start)
	case <-time.After(waitBound):
		t.Fatalf("Done not closed within %v", waitBound)
		return 0
	}
}

// lineHandler is a slog.Handler that forwards each mirrored stderr line to
// a channel, so a test can wait for a line the server writes instead of
// sleeping. It drops lines when nobody keeps up.
type lineHandler chan string

func (h lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h lineHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h lineHandler) WithGroup(string) slog.Handler            { return h }
func (h lineHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			select {
			case h <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

// waitLine waits for a mirrored stderr line containing want.
func waitLine(t testing.TB, lines lineHandler, want string) string {
	t.Helper()
	timeout := time.After(waitBound)
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("no stderr line containing %q within %v", want, waitBound)
		}
	}
}

// why classifies an error for the event sequence.
func why(err error) string {
	switch {
	case errors.Is(err, transport.ErrTransportClosed):
		return "transport-closed"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	}
	return "other(" + err.Error() + ")"
}

// how describes the end of the process for the event sequence.
func how(err error) string {
	var e *ExitError
	if !errors.As(err, &e) {
		return fmt.Sprintf("not an ExitError: %v", err)
	}
	if e.Signal != 0 {
		return signalName(e.Signal)
	}
	return fmt.Sprintf("exit %d", e.Code)
}
