package gateway_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// echoServer is an mcp-go server with one tool, echo.
func echoServer(name string) *server.MCPServer {
	s := server.NewMCPServer(name, "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(name + ": " + req.GetString("text", "")), nil
	})
	return s
}

// TestBareToolNames: with one server its tools are served under their own
// names, and calls by them work; a second server brings the qualified
// names back.
func TestBareToolNames(t *testing.T) {
	f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: client.InProcess(echoServer("a"))}}, gateway.WithBareToolNames())
	c := dial(t, f.serveHTTP(t, gateway.HTTPOptions{}), "2025-11-25")
	n := collect(c)
	if got := toolNames(t, c); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("one server: %v", got)
	}
	if got := mustCall(t, c, "echo", map[string]any{"text": "x"}); got != "a: x" {
		t.Fatalf("a call by the bare name: %q", got)
	}
	if err := f.m.Add(testCtx(t), "b", client.ServerSpec{Dialer: client.InProcess(echoServer("b"))}); err != nil {
		t.Fatal(err)
	}
	if err := f.m.WaitFor(testCtx(t), "b", lifecycle.Connected); err != nil {
		t.Fatal(err)
	}
	for after := 0; !slices.Equal(toolNames(t, c), []string{"a__echo", "b__echo"}); {
		after = n.wait(t, after, method(mcp.MethodNotificationToolsListChanged))
	}
	if got := mustCall(t, c, "b__echo", map[string]any{"text": "y"}); got != "b: y" {
		t.Fatalf("a call by the qualified name: %q", got)
	}
}

// TestDropStaleTools: with WithDropStaleTools the tools of a server that is
// down leave the list until it is back; without it they stay, marked.
func TestDropStaleTools(t *testing.T) {
	for _, drop := range []bool{false, true} {
		dialer, up := inProcess(echoServer("a"))
		var opts []gateway.Option
		if drop {
			opts = append(opts, gateway.WithDropStaleTools())
		}
		f := newFleet(t, map[string]client.ServerSpec{"a": {Dialer: dialer}, "b": {Dialer: client.InProcess(echoServer("b"))}}, opts...)
		c := dial(t, f.serveHTTP(t, gateway.HTTPOptions{}), "2025-11-25")
		n := collect(c)
		evs, stop := f.m.Events(64)
		up.SetDialError(errors.New("down"))
		up.Kill(errors.New("killed"))
		for ev := range evs {
			if ev.Kind == client.EventState && ev.Server == "a" && ev.To == lifecycle.Reconnecting {
				break
			}
		}
		stop()
		want := []string{"a__echo", "b__echo"}
		if drop {
			want = []string{"b__echo"}
		}
		for after := 0; ; {
			res, err := c.ListTools(testCtx(t), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			stale := false
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if tool.Name == "a__echo" && tool.Meta != nil && tool.Meta.AdditionalFields[gateway.MetaStale] != nil {
					stale = true
				}
			}
			slices.Sort(names)
			if slices.Equal(names, want) && (drop || stale) {
				break
			}
			after = n.wait(t, after, method(mcp.MethodNotificationToolsListChanged))
		}
		up.SetDialError(nil)
		if err := f.m.Reconnect(testCtx(t), "a"); err != nil {
			t.Fatal(err)
		}
		if err := f.m.WaitFor(testCtx(t), "a", lifecycle.Connected); err != nil {
			t.Fatal(err)
		}
		for after := 0; !slices.Equal(toolNames(t, c), []string{"a__echo", "b__echo"}); {
			after = n.wait(t, after, method(mcp.MethodNotificationToolsListChanged))
		}
	}
}

// TestCheckSeparator: a separator is of the characters a tool name may
// have.
func TestCheckSeparator(t *testing.T) {
	for sep, ok := range map[string]bool{"__": true, ".": true, "-": true, "::": false, "/": false, "": false, "toolong___": false} {
		if err := gateway.CheckSeparator(sep); (err == nil) != ok {
			t.Errorf("CheckSeparator(%q) = %v", sep, err)
		}
	}
	if !gateway.ValidToolName("files__read_file") || gateway.ValidToolName("my server__read") || gateway.ValidToolName(strings.Repeat("x", 129)) {
		t.Error("ValidToolName")
	}
}
