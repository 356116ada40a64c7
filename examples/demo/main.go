// Command demo shows mcpfleet keeping a small fleet of MCP servers usable
// through a crash, a server restart and a switch off and on. It needs
// nothing but Go: the stdio servers are this program re-executed, and the
// HTTP server listens on 127.0.0.1.
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
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// serverEnv, when set, makes this program an MCP server over stdio named
// by its value instead of the demo.
const serverEnv = "MCPFLEET_DEMO_SERVER"

func main() {
	serveIfChild()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// serveIfChild runs the stdio server this process was started as, if any,
// and exits.
func serveIfChild() {
	name := os.Getenv(serverEnv)
	if name == "" {
		return
	}
	if err := server.ServeStdio(newServer(name)); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// newServer builds an MCP server with a "lookup" tool that answers with
// the server's name and its process id.
func newServer(name string) *server.MCPServer {
	srv := server.NewMCPServer(name, "1.0", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("lookup", mcp.WithString("text"), mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprintf("%s (pid %d) found %q", name, os.Getpid(), r.GetString("text", ""))), nil
		})
	srv.AddTool(mcp.NewTool("pid", mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint(os.Getpid())), nil
		})
	return srv
}

// stdioSpec runs this program as the stdio server name.
func stdioSpec(name string) (*stdio.Spec, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return &stdio.Spec{Command: exe, Env: map[string]string{
		serverEnv: name,
		// Under the race detector (the demo's test) a child would
		// otherwise linger a second at exit.
		"GORACE": "atexit_sleep_ms=0",
	}}, nil
}

func run(ctx context.Context, w io.Writer) error {
	web, err := startHTTP("127.0.0.1:0", newServer("search"))
	if err != nil {
		return err
	}
	defer func() { web.stop() }()

	m := client.New(client.WithTimeouts(client.Timeouts{Ready: 5 * time.Second}))
	defer m.Close()

	// The timeline merges what the demo did (lines) with what the manager
	// reported (events), in the order they happened.
	var (
		lines    []line
		received []client.Event
	)
	events, stop := m.Events(0)
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
	call := func(qualified string) string {
		res, err := m.Call(ctx, qualified, map[string]any{"text": "mcp"})
		if err != nil {
			say("   call %s: error: %v", qualified, err)
			return ""
		}
		say("   call %s: %s", qualified, resultText(res))
		return resultText(res)
	}
	waitState := func(name string, st lifecycle.State) error {
		if err := m.WaitFor(ctx, name, st); err != nil {
			return err
		}
		say("   %s is %s", name, st)
		return nil
	}

	step("adding two stdio servers and one HTTP server at %s", web.url)
	for _, name := range []string{"files", "notes"} {
		spec, err := stdioSpec(name)
		if err != nil {
			return err
		}
		if err := m.Add(ctx, name, client.ServerSpec{Stdio: spec}); err != nil {
			return err
		}
	}
	if err := m.Add(ctx, "search", client.ServerSpec{HTTP: &mcphttp.Spec{URL: web.url}}); err != nil {
		return err
	}
	for _, name := range []string{"files", "notes", "search"} {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			return err
		}
	}
	var names []string
	for t := range m.View().Tools() {
		names = append(names, t.Qualified())
	}
	say("   view v%d: %s", m.View().Version(), strings.Join(names, ", "))
	call("files__lookup")

	step("crashing the files server (SIGKILL); the manager reconnects it by itself")
	var pid int
	fmt.Sscan(call("files__pid"), &pid)
	if pid <= 0 {
		return fmt.Errorf("no pid from files")
	}
	if err := crash(pid); err != nil {
		return err
	}
	if err := waitState("files", lifecycle.Reconnecting); err != nil {
		return err
	}
	call("files__lookup") // waits for the new child, then goes through

	step("restarting the HTTP server on the same address")
	web.stop()
	if err := waitState("search", lifecycle.Reconnecting); err != nil {
		return err
	}
	if web, err = startHTTP(web.addr, newServer("search")); err != nil {
		return err
	}
	call("search__lookup") // no error: the manager redials the new server

	step("disabling notes: calls fail fast, its tools leave the view")
	if err := m.Disable(ctx, "notes"); err != nil {
		return err
	}
	call("notes__lookup")
	_, err = m.CallTool(ctx, "notes", "lookup", nil)
	say("   call notes/lookup: error: %v", err)

	step("enabling notes again")
	if err := m.Enable(ctx, "notes"); err != nil {
		return err
	}
	if err := waitState("notes", lifecycle.Connected); err != nil {
		return err
	}
	call("notes__lookup")

	statuses := m.Statuses()
	stats := m.Stats()
	step("closing the manager: every child is reaped")
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
			fmt.Fprintf(w, "%8.1f  %s\n", ms(lines[i].at.Sub(start)), lines[i].text)
		}
		fmt.Fprintf(w, "%8.1f  > %s\n", ms(e.Time.Sub(start)), describe(e))
	}
	for ; i < len(lines); i++ {
		fmt.Fprintf(w, "%8.1f  %s\n", ms(lines[i].at.Sub(start)), lines[i].text)
	}
	fmt.Fprintln(w, "\nfinal status (before close)")
	printStatus(w, statuses)
	fmt.Fprintln(w, "\nstats (before close)")
	printStats(w, stats)
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
		s := fmt.Sprintf("%-7s %s -> %s (generation %d)", e.Server, e.From, e.To, e.Generation)
		if e.Err != nil {
			s += ": " + e.Err.Error()
		}
		return s
	case client.EventCatalog:
		return fmt.Sprintf("%-7s catalog added %v removed %v changed %v", e.Server, e.Diff.Added, e.Diff.Removed, e.Diff.Changed)
	case client.EventRetry:
		return fmt.Sprintf("%-7s retry %d at +%v: %v", e.Server, e.Attempt, e.NextRetry.Sub(e.Time).Round(time.Millisecond), e.Err)
	default:
		return fmt.Sprintf("%-7s %s: %v", e.Server, e.Kind, e.Err)
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

// printStats prints each server's requests by outcome, its dials and
// reconnects, and its longest recovery.
func printStats(w io.Writer, st client.Stats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "   SERVER\tREQUESTS\tOK\tFAILED\tDIALS\tRECONNECTS\tRETRIES\tWORST RECOVERY")
	for _, s := range append(st.Servers, st.Total) {
		name := s.Name
		if name == "" {
			name = "(total)"
		}
		ok := s.Calls[client.OutcomeOK] + s.Calls[client.OutcomeToolError]
		fmt.Fprintf(tw, "   %s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", name, s.Requests(), ok, s.Requests()-ok,
			s.Dials, s.Reconnects, s.Retries, s.WorstRecovery.Round(time.Millisecond))
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
