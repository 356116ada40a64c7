// Command demo shows mcpfleet keeping a small fleet of MCP servers usable
// while one crashes and another is switched off and on again. It needs
// nothing but Go: the servers run in this process.
//
//	go run ./examples/demo
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/inproc"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// newServer builds an in-process MCP server with one tool that answers
// with its name and the text it was given.
func newServer(name, tool string) *inproc.Server {
	srv := server.NewMCPServer(name, "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool(tool, mcp.WithString("text"), mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name + " says " + r.GetString("text", "")), nil
		})
	return inproc.New(srv)
}

func run(ctx context.Context, w io.Writer) error {
	servers := map[string]*inproc.Server{
		"weather": newServer("weather", "forecast"),
		"files":   newServer("files", "read"),
		"notes":   newServer("notes", "search"),
	}
	m := client.New(client.WithReadyTimeout(5 * time.Second))
	defer m.Close()

	// The timeline merges what the demo did (lines) with what the manager
	// reported (events), in the order they happened.
	var (
		lines    []line
		received []client.Event
	)
	events, stop := m.Subscribe(0)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for e := range events {
			received = append(received, e)
		}
	}()
	say := func(format string, args ...any) {
		lines = append(lines, line{time.Now(), fmt.Sprintf(format, args...)})
	}
	step := func(format string, args ...any) { say("== "+format, args...) }
	call := func(qualified string) {
		res, err := m.Call(ctx, qualified, map[string]any{"text": "hello"})
		if err != nil {
			say("   call %s: error: %v", qualified, err)
			return
		}
		say("   call %s: %s", qualified, resultText(res))
	}

	step("adding three servers")
	for _, name := range []string{"weather", "files", "notes"} {
		if err := m.Add(ctx, name, client.ServerSpec{Dialer: client.InProcessServer(servers[name])}); err != nil {
			return err
		}
	}
	for name := range servers {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			return err
		}
	}
	tools := m.View().Tools()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Qualified
	}
	say("   view v%d: %s", m.View().Version(), strings.Join(names, ", "))
	call("weather__forecast")

	step("crashing the files server; the manager reconnects it by itself")
	servers["files"].Kill(nil)
	call("files__read") // waits for the new generation, then goes through
	st, err := m.Status("files")
	if err != nil {
		return err
	}
	say("   files is %s at generation %d", st.State, st.Generation)

	step("disabling notes: calls fail fast, its tools leave the view")
	if err := m.Disable(ctx, "notes"); err != nil {
		return err
	}
	call("notes__search")
	_, err = m.CallTool(ctx, "notes", "search", nil)
	say("   call notes/search: error: %v", err)

	step("enabling notes again")
	if err := m.Enable(ctx, "notes"); err != nil {
		return err
	}
	if err := m.WaitFor(ctx, "notes", lifecycle.Connected); err != nil {
		return err
	}
	call("notes__search")

	statuses := m.Statuses()
	step("closing the manager")
	if err := m.Close(); err != nil {
		return err
	}
	stop()
	<-collected

	fmt.Fprintln(w, "timeline (ms since start; > marks an event from the manager)")
	start := lines[0].at
	i := 0
	for _, e := range received {
		for ; i < len(lines) && !lines[i].at.After(e.Time); i++ {
			fmt.Fprintf(w, "%7.2f  %s\n", ms(lines[i].at.Sub(start)), lines[i].text)
		}
		fmt.Fprintf(w, "%7.2f  > %s\n", ms(e.Time.Sub(start)), describe(e))
	}
	for ; i < len(lines); i++ {
		fmt.Fprintf(w, "%7.2f  %s\n", ms(lines[i].at.Sub(start)), lines[i].text)
	}
	fmt.Fprintln(w, "\nfinal status (before close)")
	printStatus(w, statuses)
	return nil
}

type line struct {
	at   time.Time
	text string
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func describe(e client.Event) string {
	switch e.Kind {
	case client.EventState:
		s := fmt.Sprintf("%-8s %s -> %s (generation %d)", e.Server, e.From, e.To, e.Generation)
		if e.Err != nil {
			s += ": " + e.Err.Error()
		}
		return s
	case client.EventCatalog:
		return fmt.Sprintf("%-8s catalog added %v removed %v changed %v", e.Server, e.Diff.Added, e.Diff.Removed, e.Diff.Changed)
	default:
		return fmt.Sprintf("%-8s %s: %v", e.Server, e.Kind, e.Err)
	}
}

func printStatus(w io.Writer, statuses []client.ServerStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "   SERVER\tSTATE\tGENERATION\tTOOLS\tPROTOCOL")
	for _, s := range statuses {
		fmt.Fprintf(tw, "   %s\t%s\t%d\t%d\t%s\n", s.Name, s.State, s.Generation, s.Tools, s.Protocol)
	}
	tw.Flush()
}

func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}
