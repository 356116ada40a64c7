package faultserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ModeFlood serves correctly, and offers two tools with which a test makes
// the server hostile to its client on cue:
//
//   - "notify" writes notifications of one kind (the argument "kind": log,
//     progress, resource or list) at "rate" a second for "ms"
//     milliseconds, as fast as the client reads them, then stops by itself
//     and returns "sent=N". They are written straight to stdout, as a
//     hostile server would, so that neither the log level nor mcp-go's
//     buffer of notifications shapes them. For kind list it adds a tool
//     named "late" after the flood and sends one more list_changed: the
//     last notification of the flood announces a real change.
//   - "ask" sends "n" requests of one kind (sampling, elicitation or roots)
//     to the client at once, waits for every answer, and returns a
//     FloodAnswers as JSON.
const ModeFlood = "flood"

// FloodAnswers is what the "ask" tool returns: how the client answered.
type FloodAnswers struct {
	OK    int `json:"ok"`
	Error int `json:"error"`
	// Errors holds each distinct error message, with its count.
	Errors map[string]int `json:"errors"`
}

// lockedWriter serializes writes to the server's stdout: mcp-go writes
// each message with one Write, and so does the flood, so that no message
// splits another.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// runFlood serves ModeFlood until stdin reaches EOF.
func runFlood() int {
	out := &lockedWriter{w: os.Stdout}
	// Requests of the server's own are what this mode is about, on either
	// protocol.
	//lint:ignore SA1019 the hostile server uses the deprecated requests on purpose
	legacy := server.WithLegacyServerInitiatedRequests() //nolint:staticcheck // as above
	// Resources can be subscribed to (the host subscribes to the URI the
	// "resource" flood updates, or its updates are no events).
	s := server.NewMCPServer("mcpfleet-faultserver", "test", server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false), legacy)
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text", mcp.Required()),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true)})),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("notify", mcp.WithString("kind", mcp.Required()),
		mcp.WithNumber("rate", mcp.Required()), mcp.WithNumber("ms", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			kind := req.GetString("kind", "")
			line, ok := floodLines[kind]
			if !ok {
				return mcp.NewToolResultError("unknown kind " + kind), nil
			}
			d := time.Duration(req.GetFloat("ms", 0) * float64(time.Millisecond))
			sent, err := notifyFlood(out, line, req.GetFloat("rate", 0), d)
			if err != nil {
				return nil, err
			}
			if kind == "list" {
				s.AddTool(mcp.NewTool("late"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("late"), nil
				})
				if _, err := out.Write([]byte(line)); err != nil {
					return nil, err
				}
				sent++
			}
			return mcp.NewToolResultText(fmt.Sprintf("sent=%d", sent)), nil
		})
	s.AddTool(mcp.NewTool("ask", mcp.WithString("kind", mcp.Required()), mcp.WithNumber("n", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ask, ok := askers[req.GetString("kind", "")]
			if !ok {
				return mcp.NewToolResultError("unknown kind"), nil
			}
			n := int(req.GetFloat("n", 0))
			var (
				mu  sync.Mutex
				ans = FloodAnswers{Errors: map[string]int{}}
				wg  sync.WaitGroup
			)
			for range n {
				wg.Go(func() {
					err := ask(ctx, s)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						ans.Error++
						ans.Errors[err.Error()]++
						return
					}
					ans.OK++
				})
			}
			wg.Wait()
			b, err := json.Marshal(ans)
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(string(b)), nil
		})
	if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, out); err != nil {
		logf("listen: %v", err)
		return 1
	}
	return 0
}

// floodLines are the notifications of each kind "notify" sends, one line
// each.
var floodLines = map[string]string{
	"log":      `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"flood","data":"flood"}}` + "\n",
	"progress": `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"flood","progress":1}}` + "\n",
	"resource": `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"flood://r"}}` + "\n",
	"list":     `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n",
}

// notifyFlood writes line at rate a second for d, in batches, and returns how
// many it wrote. A client that reads slower slows it down (the pipe fills);
// it stops at d whatever it managed to send.
func notifyFlood(w io.Writer, line string, rate float64, d time.Duration) (int, error) {
	const batch = 64
	chunk := []byte(strings.Repeat(line, batch))
	if rate <= 0 {
		return 0, nil
	}
	start := time.Now()
	sent := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= d {
			return sent, nil
		}
		due := int(rate * elapsed.Seconds())
		if due-sent < batch {
			time.Sleep(time.Duration(float64(batch-(due-sent)) / rate * float64(time.Second)))
			continue
		}
		if _, err := w.Write(chunk); err != nil {
			return sent, err
		}
		sent += batch
	}
}

// askers send one request of a kind to the client.
var askers = map[string]func(context.Context, *server.MCPServer) error{
	"sampling": func(ctx context.Context, s *server.MCPServer) error {
		req := mcp.CreateMessageRequest{}
		req.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("flood")}}
		req.MaxTokens = 1
		//lint:ignore SA1019 as in runFlood
		_, err := s.RequestSampling(ctx, req) //nolint:staticcheck // as above
		return err
	},
	"elicitation": func(ctx context.Context, s *server.MCPServer) error {
		req := mcp.ElicitationRequest{}
		req.Params.Message = "flood"
		req.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{}}
		//lint:ignore SA1019 as in runFlood
		_, err := s.RequestElicitation(ctx, req) //nolint:staticcheck // as above
		return err
	},
	"roots": func(ctx context.Context, s *server.MCPServer) error {
		//lint:ignore SA1019 as in runFlood
		_, err := s.RequestRoots(ctx, mcp.ListRootsRequest{}) //nolint:staticcheck // as above
		return err
	},
}
