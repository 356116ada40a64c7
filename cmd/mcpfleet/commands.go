package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/jsonkind"
	"github.com/mcpfleet/mcpfleet/internal/texttable"
)

func cmdStatus(ctx context.Context, args []string, e *env) error {
	var web, noBrowser bool
	inv, err := prepare(ctx, e, cmdSpec{name: "status", json: true, wait: true,
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&web, "web", false, "open the running serve's status page in a browser (and print its address)")
			fs.BoolVar(&noBrowser, "no-browser", false, "with --web: print the address only")
		},
		noFleet: func() bool { return web }}, args)
	if err != nil {
		return err
	}
	defer inv.close()
	if web {
		return statusPage(ctx, e, &inv.commonFlags, noBrowser)
	}
	st, err := inv.fleet.status(ctx)
	if err != nil {
		return err
	}
	if inv.json {
		err = printJSON(e.stdout, st)
	} else {
		for _, l := range serveLines(st, inv.direct) {
			fmt.Fprintln(e.stdout, l)
		}
		writeStatus(e.stdout, st.Servers, time.Now())
	}
	if err == nil && st.applyErr != nil {
		err = errNotAsConfigured
	}
	return err
}

// serveLines say which serve answered a command, and which others of the
// config run; or that none did.
func serveLines(st statusReport, direct bool) []string {
	if st.Serve == nil {
		if direct {
			return []string{"no serve asked (--direct): the servers were started for this command"}
		}
		return []string{"no serve of this config runs: the servers were started for this command"}
	}
	describe := func(s admin.ServeInfo) string {
		line := fmt.Sprintf("serve pid %d (%s, since %s", s.PID, s.Serving, s.Started.Local().Format("15:04:05"))
		if s.Version != "" {
			line += ", " + s.Version
		}
		return line + ")"
	}
	lines := []string{describe(*st.Serve)}
	if len(st.Others) > 0 {
		lines[0] += fmt.Sprintf(", the newest of %d", len(st.Others)+1)
	}
	for _, o := range st.Others {
		lines = append(lines, "also running: "+describe(o))
	}
	for i, l := range lines {
		lines[i] = texttable.Cut(termSafe(l, false), texttable.Width)
	}
	return lines
}

// writeStatus prints one row per server, fitted to 100 columns, with its
// last error (or where to authorize it) under it.
func writeStatus(w io.Writer, reports []admin.ServerReport, now time.Time) {
	if len(reports) == 0 {
		fmt.Fprintln(w, "no servers")
		return
	}
	t := texttable.Table{Shrink: []texttable.Shrink{{Col: 0, Min: 12}, {Col: 7, Min: 8}, {Col: 1, Min: 12}}}
	t.Row("SERVER", "STATE", "GEN", "TOOLS", "CALLS", "FAILED", "RECONNECTS", "RETRY")
	for _, r := range reports {
		retry := "-"
		switch {
		case !retrying(r.State):
			// A server that failed for good, or is off, has no retry: a
			// slow probe of a PermanentlyFailed one is not one.
			if r.State == "PermanentlyFailed" && r.Attempt > 0 {
				retry = fmt.Sprintf("%d failed", r.Attempt)
			}
		case !r.NextRetry.IsZero() && r.NextRetry.After(now):
			retry = fmt.Sprintf("#%d in %s", r.Attempt+1, r.NextRetry.Sub(now).Round(100*time.Millisecond))
		case !r.NextRetry.IsZero():
			retry = fmt.Sprintf("#%d dialing", r.Attempt+1)
		case r.Attempt > 0:
			retry = fmt.Sprintf("%d failed", r.Attempt)
		}
		state := r.State
		if r.Cached {
			state += " (cached)"
		}
		t.Row(termSafe(r.Name, false), state, strconv.FormatUint(r.Generation, 10), strconv.Itoa(r.Tools), strconv.FormatUint(r.Requests, 10),
			strconv.FormatUint(r.Failed, 10), strconv.FormatUint(r.Reconnects, 10), retry)
		switch {
		case r.AuthorizationURL != "":
			t.Note("  authorize: mcpfleet auth " + termSafe(r.Name, false))
		case r.LastError != "":
			t.Note("  last error: " + termSafe(firstLine(r.LastError), false))
		case r.CatalogError != "":
			t.Note("  catalog error: " + termSafe(firstLine(r.CatalogError), false))
		}
		for _, q := range r.QuarantinedTemplates {
			t.Note("  quarantined resource template: " + termSafe(q, false))
		}
	}
	t.Write(w)
}

// retrying reports whether a server in state (a report's) has retries:
// it is connecting, first or again.
func retrying(state string) bool {
	return state == "Connecting" || state == "Reconnecting"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// printJSON prints v as indented JSON, with what a terminal would act on
// escaped (see jsonSafe).
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonSafe(b), '\n'))
	return err
}

func cmdTools(ctx context.Context, args []string, e *env) error {
	var k int
	var schemas bool
	inv, err := prepare(ctx, e, cmdSpec{name: "tools", maxArgs: -1, json: true, wait: true,
		flags: func(fs *flag.FlagSet) {
			fs.IntVar(&k, "k", 10, "how many matches of QUERY to show")
			fs.BoolVar(&schemas, "schema", false, "show each tool's input schema (its arguments)")
		}}, args)
	if err != nil {
		return err
	}
	defer inv.close()
	query := strings.Join(inv.args, " ")
	tools, err := inv.fleet.tools(ctx, query, k, schemas)
	if err != nil {
		return err
	}
	if inv.json {
		return printJSON(e.stdout, map[string]any{"tools": tools})
	}
	if schemas {
		for i, tr := range tools {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			writeTool(e.stdout, tr)
		}
		return nil
	}
	writeTools(e.stdout, tools, query)
	return nil
}

// writeTools prints one row per tool: its name, whether it declares itself
// read-only, and the first line of its description.
func writeTools(w io.Writer, tools []admin.ToolReport, query string) {
	if len(tools) == 0 {
		if query != "" {
			fmt.Fprintf(w, "no tool matches %q\n", query)
		} else {
			fmt.Fprintln(w, "no tools")
		}
		return
	}
	t := texttable.Table{Shrink: []texttable.Shrink{{Col: 2, Min: 30}, {Col: 0, Min: 20}}}
	t.Row("TOOL", "READ-ONLY", "DESCRIPTION")
	for _, tr := range tools {
		mark := ""
		if tr.ReadOnly {
			mark = "yes"
		}
		t.Row(termSafe(tr.Name, false), mark, termSafe(firstLine(tr.Description), false))
	}
	t.Write(w)
}

func cmdCall(ctx context.Context, args []string, e *env) error {
	var timeout time.Duration
	inv, err := prepare(ctx, e, cmdSpec{name: "call", minArgs: 1, maxArgs: 2, json: true,
		wantArgs: "a tool and, optionally, its arguments as a JSON object",
		flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&timeout, "timeout", 0, "give up on the call after this long (0: never)")
		},
		check: func(pos []string) error {
			if len(pos) == 2 {
				return checkArguments(pos[1])
			}
			return nil
		}}, args)
	if err != nil {
		return err
	}
	defer inv.close()
	pos := inv.args
	var callArgs json.RawMessage
	if len(pos) == 2 && strings.TrimSpace(pos[1]) != "null" { // null: no arguments, not "arguments": null
		callArgs = json.RawMessage(pos[1])
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	p := newProgress(e.stderr, e.tty)
	label := "calling " + pos[0]
	if e.tty {
		p.set(label)
	}
	res, err := inv.fleet.call(ctx, pos[0], callArgs, func(r admin.ProgressReport) { p.set(label + ": " + progressText(r)) })
	p.end()
	if err != nil {
		if hint := unknownTool(ctx, inv.fleet, pos[0]); hint != "" {
			return fmt.Errorf("%w%s", err, hint)
		}
		return err
	}
	if inv.json {
		if err := printJSON(e.stdout, res); err != nil {
			return err
		}
	} else if res.IsError {
		// The tool ran and said it failed: its words, said to be its own.
		fmt.Fprintf(e.stderr, "mcpfleet call: tool %s returned an error: ", termSafe(pos[0], false))
		writeResult(e.stderr, res)
	} else {
		writeResult(e.stdout, res)
	}
	if res.IsError {
		return errErrorResult
	}
	return nil
}

// checkArguments refuses call's arguments unless they are a JSON object,
// saying what they are instead.
func checkArguments(arg string) error {
	var v any
	if err := json.Unmarshal([]byte(arg), &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return usagef("the arguments are not JSON (%v, at byte %d): give a JSON object, as '{\"path\": \"/tmp\"}'", se, se.Offset)
		}
		return usagef("the arguments are not JSON (%v): give a JSON object, as '{\"path\": \"/tmp\"}'", err)
	}
	switch v.(type) {
	case nil, map[string]any: // null is no arguments, as {} is
		return nil
	}
	return usagef("the arguments must be a JSON object ({...} of names and values), not %s", jsonkind.Of(v))
}

// progressText renders a progress report: "3/10 copying".
func progressText(r admin.ProgressReport) string {
	s := strconv.FormatFloat(r.Progress, 'f', -1, 64)
	if r.Total > 0 {
		s += "/" + strconv.FormatFloat(r.Total, 'f', -1, 64)
	}
	if r.Message != "" {
		s += " " + termSafe(r.Message, false)
	}
	return s
}

// writeResult prints a tool's result: its text, and a line for each piece
// that is not text; the structured content if there is nothing else. What
// the server wrote is shown with what a terminal would act on escaped
// (termSafe); its lines and tabs are kept.
func writeResult(w io.Writer, res *mcp.CallToolResult) {
	printed := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			fmt.Fprintln(w, termSafe(c.Text, true))
		case mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d base64 bytes]\n", termSafe(c.MIMEType, false), len(c.Data))
		case mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d base64 bytes]\n", termSafe(c.MIMEType, false), len(c.Data))
		case mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", termSafe(c.URI, false))
		case mcp.EmbeddedResource:
			if t, ok := c.Resource.(mcp.TextResourceContents); ok {
				fmt.Fprintf(w, "[resource %s]\n%s\n", termSafe(t.URI, false), termSafe(t.Text, true))
			} else {
				fmt.Fprintln(w, "[embedded resource]")
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintln(w, string(jsonSafe(b)))
		}
		printed = true
	}
	if !printed && res.StructuredContent != nil {
		b, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		fmt.Fprintln(w, string(jsonSafe(b)))
	}
}

// openBrowser opens url in the user's browser. Tests replace it.
var openBrowser = func(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() //nolint:errcheck // the browser's exit says nothing about the authorization
	return nil
}

func cmdAuth(ctx context.Context, args []string, e *env) error {
	var noBrowser bool
	inv, err := prepare(ctx, e, cmdSpec{name: "auth", minArgs: 1, maxArgs: 1, wantArgs: "the name of one server",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&noBrowser, "no-browser", false, "print the URL only; do not open a browser")
		}}, args)
	if err != nil {
		return err
	}
	defer inv.close()
	server := inv.args[0]
	p := newProgress(e.stderr, e.tty)
	defer p.end()
	err = inv.fleet.auth(ctx, server, func(url string) error {
		fmt.Fprintf(e.stderr, "To authorize %s, open:\n  %s\n", termSafe(server, false), termSafe(url, false))
		if !noBrowser {
			if err := openBrowser(url); err != nil {
				fmt.Fprintf(e.stderr, "(could not open a browser: %v)\n", err)
			}
		}
		p.set("waiting for the browser to come back")
		return nil
	})
	if err != nil {
		return err
	}
	p.end()
	fmt.Fprintf(e.stdout, "%s is authorized\n", server)
	return nil
}

func cmdWatch(ctx context.Context, args []string, e *env) error {
	inv, err := prepare(ctx, e, cmdSpec{name: "watch", json: true}, args)
	if err != nil {
		return err
	}
	defer inv.close()
	err = inv.fleet.watch(ctx, func(l admin.StreamLine) error {
		if inv.json {
			b, err := json.Marshal(l)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, string(jsonSafe(b)))
			return err
		}
		switch {
		case l.Servers != nil:
			writeStatus(e.stdout, l.Servers, time.Now())
		case l.Event != nil:
			_, err := fmt.Fprintln(e.stdout, eventLine(*l.Event))
			return err
		case l.Error != "":
			return errors.New(l.Error) // printed escaped, as every error is (run)
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil // interrupted: how a watch ends
	}
	return err
}

// eventLine renders an event on one line of at most 100 columns.
func eventLine(r admin.EventReport) string {
	var b strings.Builder
	b.WriteString(r.Time.Format("15:04:05.000") + " " + r.Server + ": ")
	switch r.Kind {
	case "state":
		fmt.Fprintf(&b, "%s -> %s (generation %d", r.From, r.To, r.Generation)
		if r.Attempt > 0 {
			fmt.Fprintf(&b, ", attempt %d", r.Attempt)
		}
		if !r.NextRetry.IsZero() && retrying(r.To) {
			fmt.Fprintf(&b, ", next retry in %s", time.Until(r.NextRetry).Round(time.Millisecond))
		}
		b.WriteString(")")
	case "catalog":
		b.WriteString("catalog")
		for _, x := range []struct {
			sign  string
			names []string
		}{{"+", r.Added}, {"-", r.Removed}, {"~", r.Changed}} {
			if len(x.names) > 0 {
				fmt.Fprintf(&b, " %s%s", x.sign, texttable.Plural(len(x.names), "tool", "tools"))
			}
		}
	case "log":
		fmt.Fprintf(&b, "log %s", r.Level)
		if r.Logger != "" {
			b.WriteString(" " + r.Logger)
		}
		data, _ := json.Marshal(r.Data)
		if s, ok := r.Data.(string); ok {
			data = []byte(s)
		}
		b.WriteString(": " + string(data))
	case "resource-updated":
		b.WriteString("updated " + r.URI)
	case "retry":
		fmt.Fprintf(&b, "dial %d failed", r.Attempt)
		if !r.NextRetry.IsZero() {
			fmt.Fprintf(&b, ", next in %s", time.Until(r.NextRetry).Round(time.Millisecond))
		}
	default:
		b.WriteString(r.Kind)
		if r.Method != "" {
			b.WriteString(" " + r.Method)
		}
		if r.Count > 0 {
			fmt.Fprintf(&b, " (%d)", r.Count)
		}
	}
	if r.Error != "" {
		b.WriteString(": " + firstLine(r.Error))
	}
	if r.Dropped > 0 {
		fmt.Fprintf(&b, " [%s lost before]", texttable.Plural(int(r.Dropped), "event", "events"))
	}
	// Names, log messages and errors are the servers' words: shown, not
	// obeyed, on one line.
	return texttable.Cut(termSafe(b.String(), false), texttable.Width)
}

// statusPage prints the address of the running serve's status page, with
// the token of its admin file in the fragment (which a browser never
// sends), and opens it unless noBrowser.
func statusPage(ctx context.Context, e *env, flags *commonFlags, noBrowser bool) error {
	config, err := configPath(flags.config)
	if err != nil {
		return err
	}
	if config, err = filepath.Abs(config); err != nil {
		return err
	}
	paths, err := pathsFor(config)
	if err != nil {
		return err
	}
	r, notes := findServe(ctx, e, paths)
	if r == nil {
		for _, n := range notes {
			fmt.Fprintf(e.stderr, "mcpfleet: %s\n", n)
		}
		return fmt.Errorf("the status page is a serve's, and no serve of %s runs: start one (mcpfleet serve)", config)
	}
	defer r.close()
	u := r.base + "/status#token=" + r.token
	fmt.Fprintf(e.stdout, "the status page of serve pid %d (the address holds its token: keep it to yourself):\n  %s\n", r.info.PID, u)
	if !noBrowser {
		if err := openBrowser(u); err != nil {
			fmt.Fprintf(e.stderr, "(could not open a browser: %v)\n", err)
		}
	}
	return nil
}
