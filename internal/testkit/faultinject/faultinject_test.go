package faultinject_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultinject"
)

func TestMain(m *testing.M) {
	faultinject.Main() // serves and exits when re-executed as the stdio server
	goleak.VerifyTestMain(m)
}

func callFault(ctx context.Context, cl *mcpclient.Client) (*mcp.CallToolResult, error) {
	var req mcp.CallToolRequest
	req.Params.Name = faultinject.ToolFault
	return cl.CallTool(ctx, req)
}

// Example runs the stdio server faulting after the response, over mcp-go's
// own stdio transport: the first call is answered, then the server dies.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "faultinject")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s := faultinject.NewStdio(dir, faultinject.AfterResponse)
	env := make([]string, 0, len(s.Env))
	for k, v := range s.Env {
		env = append(env, k+"="+v)
	}
	cl := mcpclient.NewClient(transport.NewStdio(s.Path, env, s.Args...))
	defer cl.Close()
	if err := cl.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "test"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		fmt.Println(err)
		return
	}
	res, err := callFault(ctx, cl)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	_, err = callFault(ctx, cl)
	fmt.Println("second call failed:", err != nil)
	fmt.Println("runs:", s.Executed())
	// Output:
	// faultinject: executed fault #1
	// second call failed: true
	// runs: 1
}

// TestHTTPFaults checks each fault of the HTTP server with mcp-go's own
// streamable HTTP client: what the client sees, that the tool ran, and
// whether the server is still up.
func TestHTTPFaults(t *testing.T) {
	cases := []struct {
		fault   faultinject.Fault
		wantErr bool
		ran     int64
	}{
		{faultinject.Fault{Point: faultinject.AfterWrite}, true, 1},
		{faultinject.Fault{Point: faultinject.MidResponse}, true, 1},
		{faultinject.Fault{Point: faultinject.AfterResponse}, false, 1},
		{faultinject.Fault{Point: faultinject.AfterWrite, Gone: true}, true, 1},
		{faultinject.Fault{Point: faultinject.MidResponse, Gone: true}, true, 1},
		{faultinject.Fault{Point: faultinject.AfterResponse, Gone: true}, false, 1},
		{faultinject.Fault{Point: faultinject.Stale404}, true, 0},
		{faultinject.Fault{Point: faultinject.Stale400}, true, 0},
	}
	for _, sseAnswers := range []bool{false, true} {
		for _, c := range cases {
			name := fmt.Sprintf("sse-answers=%v/%s/gone=%v", sseAnswers, c.fault.Point, c.fault.Gone)
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				srv := faultinject.StartHTTP(t, faultinject.HTTPOptions{SSEResponses: sseAnswers})
				tr, err := transport.NewStreamableHTTP(srv.URL())
				if err != nil {
					t.Fatal(err)
				}
				cl := mcpclient.NewClient(tr)
				defer cl.Close()
				if err := cl.Start(ctx); err != nil {
					t.Fatal(err)
				}
				var init mcp.InitializeRequest
				init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "test"}
				if _, err := cl.Initialize(ctx, init); err != nil {
					t.Fatal(err)
				}
				srv.Arm(c.fault)
				_, err = callFault(ctx, cl)
				if (err != nil) != c.wantErr {
					t.Errorf("call err = %v, want an error: %v", err, c.wantErr)
				}
				if n := srv.Executed(); n != c.ran {
					t.Errorf("the tool ran %d times, want %d", n, c.ran)
				}
				if err := srv.WaitGone(ctx); err != nil {
					t.Fatal(err)
				}
				if up := srv.Running(); up == c.fault.Gone {
					t.Errorf("server running: %v after a fault with Gone %v", up, c.fault.Gone)
				}
			})
		}
	}
}
