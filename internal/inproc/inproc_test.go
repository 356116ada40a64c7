package inproc_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/inproc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// stepServer has a tool "steps" that sends one progress notification per
// step, each with the message "<call>/<step>", and then answers.
func stepServer() *server.MCPServer {
	srv := server.NewMCPServer("steps", "1.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("steps", mcp.WithString("call"), mcp.WithNumber("steps")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			call, steps := r.GetString("call", ""), r.GetInt("steps", 0)
			for i := range steps {
				err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress),
					map[string]any{"progressToken": call, "progress": i + 1, "total": steps, "message": fmt.Sprintf("%s/%d", call, i+1)})
				if err != nil {
					return nil, err
				}
			}
			return mcp.NewToolResultText(call + " done"), nil
		})
	return srv
}

// connect dials s and returns an initialized mcp-go client on the
// connection, whose notifications go to onNote. The client is closed when
// the test ends.
func connect(ctx context.Context, t testing.TB, s *inproc.Server, onNote func(mcp.JSONRPCNotification)) (*inproc.Conn, *mcpclient.Client, error) {
	conn, err := s.Dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	c := mcpclient.NewClient(conn.Transport())
	t.Cleanup(func() { c.Close() })
	c.OnNotification(onNote)
	if err := c.Start(ctx); err != nil {
		return nil, nil, err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		return nil, nil, err
	}
	return conn, c, nil
}

func mustConnect(ctx context.Context, t *testing.T, s *inproc.Server, onNote func(mcp.JSONRPCNotification)) (*inproc.Conn, *mcpclient.Client) {
	t.Helper()
	conn, c, err := connect(ctx, t, s, onNote)
	if err != nil {
		t.Fatal(err)
	}
	return conn, c
}

func callSteps(ctx context.Context, c *mcpclient.Client, call string, steps int) (string, error) {
	var req mcp.CallToolRequest
	req.Params.Name = "steps"
	req.Params.Arguments = map[string]any{"call": call, "steps": steps}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	return res.Content[0].(mcp.TextContent).Text, nil
}

func progressMessage(n mcp.JSONRPCNotification) string {
	msg, _ := n.Params.AdditionalFields["message"].(string)
	return msg
}

// TestNotificationsBeforeResponse checks that the notifications a server
// sends while it handles a request reach the client before the response,
// as over a stream, call after call.
func TestNotificationsBeforeResponse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		log []string // progress messages and results, in the order the client saw them
	)
	_, c := mustConnect(ctx, t, inproc.New(stepServer()), func(n mcp.JSONRPCNotification) {
		mu.Lock()
		log = append(log, progressMessage(n))
		mu.Unlock()
	})

	const calls, steps = 50, 3
	var want []string
	for i := range calls {
		call := fmt.Sprint(i)
		for j := range steps {
			want = append(want, fmt.Sprintf("%s/%d", call, j+1))
		}
		want = append(want, call+" done")
		text, err := callSteps(ctx, c, call, steps)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		log = append(log, text)
		if !slices.Equal(log, want) {
			t.Fatalf("after call %d the client saw\n%q\nwant\n%q", i, log, want)
		}
		mu.Unlock()
	}
}

// TestNotificationsBeforeResponseConcurrent runs calls at once on one
// connection: each call's own notifications come before its response.
func TestNotificationsBeforeResponseConcurrent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		mu   sync.Mutex
		seen = map[string]int{} // call -> progress notifications seen
	)
	_, c := mustConnect(ctx, t, inproc.New(stepServer()), func(n mcp.JSONRPCNotification) {
		mu.Lock()
		seen[fmt.Sprint(n.Params.AdditionalFields["progressToken"])]++
		mu.Unlock()
	})
	const workers, calls, steps = 4, 25, 3
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				call := fmt.Sprintf("%d.%d", w, i)
				if _, err := callSteps(ctx, c, call, steps); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got := seen[call]
				mu.Unlock()
				if got != steps {
					t.Errorf("call %s returned after %d of its %d notifications", call, got, steps)
					return
				}
			}
		})
	}
	wg.Wait()
}

// stuckClient connects to a server of stepServer with a notification
// handler that blocks until release is closed; entered gets a value each
// time it starts blocking.
func stuckClient(ctx context.Context, t *testing.T) (conn *inproc.Conn, c *mcpclient.Client, entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	conn, c = mustConnect(ctx, t, inproc.New(stepServer()), func(mcp.JSONRPCNotification) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	})
	return conn, c, entered, release
}

// TestWaitForNotificationsEndsWithConnection checks that a response held
// back behind a notification the client is slow to take is lost, not
// waited for forever, when the connection dies.
func TestWaitForNotificationsEndsWithConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, c, entered, release := stuckClient(ctx, t)

	errc := make(chan error, 1)
	go func() {
		_, err := callSteps(ctx, c, "a", 1)
		errc <- err
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("no notification reached the client")
	}
	conn.Kill(nil)
	select {
	case err := <-errc:
		if !errors.Is(err, transport.ErrTransportClosed) {
			t.Fatalf("call on a killed connection: %v, want ErrTransportClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("the call still waits on a killed connection")
	}
	close(release)
}

// TestWaitForNotificationsEndsWithContext checks that a caller who gives up
// while the response is held back behind a notification gets its
// context's error.
func TestWaitForNotificationsEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, c, entered, release := stuckClient(ctx, t)

	callCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := callSteps(callCtx, c, "a", 1)
		errc <- err
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("no notification reached the client")
	}
	stop()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("call whose context ended: %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("the call still waits after its context ended")
	}
	close(release)
}

// TestSessionsOfOneServer dials many connections to one mcp-go server at
// once, through two Servers: every session gets its own ID, and each
// connection's notifications reach that connection only.
func TestSessionsOfOneServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := stepServer()
	servers := []*inproc.Server{inproc.New(srv), inproc.New(srv)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			var got []string // only the handler touches it until the call returned
			_, c, err := connect(ctx, t, servers[i%2], func(n mcp.JSONRPCNotification) { got = append(got, progressMessage(n)) })
			if err != nil {
				t.Error(err)
				return
			}
			call := fmt.Sprint(i)
			if _, err := callSteps(ctx, c, call, 2); err != nil {
				t.Error(err)
				return
			}
			if want := []string{call + "/1", call + "/2"}; !slices.Equal(got, want) {
				t.Errorf("connection %d saw %q, want %q", i, got, want)
			}
		})
	}
	wg.Wait()
}

// A notification the server sends while it handles a call reaches the
// client before the call's result, as over a stream.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := inproc.New(stepServer())
	conn, err := s.Dial(ctx)
	if err != nil {
		panic(err)
	}
	c := mcpclient.NewClient(conn.Transport())
	defer c.Close()
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		fmt.Println("progress", progressMessage(n))
	})
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		panic(err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = "steps"
	req.Params.Arguments = map[string]any{"call": "job", "steps": 2}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Println("result", res.Content[0].(mcp.TextContent).Text)
	// Output:
	// progress job/1
	// progress job/2
	// result job done
}
