package http_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
)

// testTimeout bounds every wait in a test.
const testTimeout = 20 * time.Second

// session is a Conn with the mcp-go client built on it the way the Manager
// builds it: NewClient, Start, Initialize, Ready.
type session struct {
	conn   *mcphttp.Conn
	client *mcpclient.Client
	// notes receives the method of every notification.
	notes chan string
}

// testLogLevel is the level testLogger writes from.
var testLogLevel = slog.LevelInfo

// testLogger logs into the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: testLogLevel}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// connect dials spec and runs the handshake; the session is closed when the
// test ends.
func connect(ctx context.Context, t testing.TB, spec mcphttp.Spec, opts ...mcphttp.Option) *session {
	t.Helper()
	s, err := tryConnect(ctx, t, spec, opts...)
	if err != nil {
		t.Fatalf("connect %v: %v", spec, err)
	}
	return s
}

func tryConnect(ctx context.Context, t testing.TB, spec mcphttp.Spec, opts ...mcphttp.Option) (*session, error) {
	t.Helper()
	opts = append([]mcphttp.Option{mcphttp.WithLogger(testLogger(t))}, opts...)
	conn, err := mcphttp.Dial(ctx, spec, opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := conn.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	s := &session{conn: conn, client: mcpclient.NewClient(conn.Transport()), notes: make(chan string, 64)}
	s.client.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case s.notes <- n.Method:
		default:
		}
	})
	if err := s.client.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpfleet-test", Version: "0"}
	if _, err := s.client.Initialize(ctx, init); err != nil {
		return nil, err
	}
	if err := conn.Ready(ctx, s.client); err != nil {
		return nil, err
	}
	return s, nil
}

// echo calls the echo tool and returns its text.
func (s *session) echo(ctx context.Context, msg string) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": msg}
	res, err := s.client.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", fmt.Errorf("echo: tool error %+v", res.Content)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		return "", fmt.Errorf("echo: content %T", res.Content[0])
	}
	return text.Text, nil
}

// mustEcho fails the test unless echo works.
func (s *session) mustEcho(ctx context.Context, t testing.TB, msg string) {
	t.Helper()
	got, err := s.echo(ctx, msg)
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if !strings.Contains(got, msg) {
		t.Fatalf("echo = %q, want it to contain %q", got, msg)
	}
}

// awaitNote waits for a notification with method.
func (s *session) awaitNote(ctx context.Context, t testing.TB, method string) {
	t.Helper()
	for {
		select {
		case got := <-s.notes:
			if got == method {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %s notification: %v", method, ctx.Err())
		}
	}
}

// awaitDone waits for the Conn to be known dead and returns how long it
// took from start.
func awaitDone(ctx context.Context, t testing.TB, conn *mcphttp.Conn, start time.Time) time.Duration {
	t.Helper()
	select {
	case <-conn.Done():
		return time.Since(start)
	case <-ctx.Done():
		t.Fatalf("Done did not close: %v", ctx.Err())
		return 0
	}
}
