package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// status prints one row per server, and under the row of a server that
// has one its last error.
func (h *host) status(w io.Writer) { writeStatus(w, h.m.Statuses(), time.Now()) }

// writeStatus is status for given statuses at now, fitted to width.
func writeStatus(w io.Writer, statuses []client.ServerStatus, now time.Time) {
	if len(statuses) == 0 {
		fmt.Fprintln(w, "no servers")
		return
	}
	t := table{shrink: []shrink{{col: 0, min: 12}, {col: 5, min: 10}, {col: 6, min: 10}}}
	t.row("SERVER", "STATE", "GEN", "TOOLS", "QUARANTINED", "RETRY", "IDLE")
	for _, s := range statuses {
		retry := "-"
		switch {
		case !s.NextRetry.IsZero() && s.NextRetry.After(now):
			retry = fmt.Sprintf("#%d in %s", s.Attempt+1, s.NextRetry.Sub(now).Round(time.Millisecond))
		case !s.NextRetry.IsZero():
			retry = fmt.Sprintf("#%d dialing", s.Attempt+1)
		case s.Attempt > 0:
			retry = fmt.Sprintf("%d failed", s.Attempt)
		}
		t.row(s.Name, s.State.String(), fmt.Sprint(s.Generation), fmt.Sprint(s.Tools), fmt.Sprint(len(s.Quarantined)),
			retry, idle(s, now))
		switch {
		case s.LastError != nil:
			t.note("  last error: " + firstLine(s.LastError.Error()))
		case s.CatalogError != nil:
			t.note("  catalog error: " + firstLine(s.CatalogError.Error()))
		}
	}
	t.write(w)
}

// idle says whether the server was closed for going unused ("idle 2m3s":
// for how long; the next call starts it), or after how long unused it
// will be ("after 5m0s"); "-" if it has no idle timeout.
func idle(s client.ServerStatus, now time.Time) string {
	switch {
	case s.State == lifecycle.Disconnected && !s.IdleSince.IsZero():
		return "idle " + now.Sub(s.IdleSince).Round(time.Second).String()
	case s.IdleTimeout > 0:
		return "after " + s.IdleTimeout.String()
	}
	return "-"
}

// stats prints every server's counters: requests by outcome, dials,
// reconnects, transparent retries, and how long recoveries took.
func (h *host) stats(w io.Writer) {
	st := h.m.Stats()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "SERVER\tSTATE\tFOR")
	for o := client.OutcomeOK; o <= client.OutcomeTooLarge; o++ {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(o.String()))
	}
	fmt.Fprintln(tw, "\tIN FLIGHT\tDIALS\tFAILED DIALS\tRECONNECTS\tRETRIES\tLAST RECOVERY\tWORST")
	for _, s := range append(st.Servers, st.Total) {
		name, state, since := s.Name, s.State.String(), s.InState.Round(time.Second).String()
		if name == "" {
			name, state, since = "(total)", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s", name, state, since)
		for o := client.OutcomeOK; o <= client.OutcomeTooLarge; o++ {
			fmt.Fprintf(tw, "\t%d", s.Calls[o])
		}
		fmt.Fprintf(tw, "\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", s.InFlight, s.Dials, s.DialFailures, s.Reconnects,
			s.Retries, s.LastRecovery.Round(time.Millisecond), s.WorstRecovery.Round(time.Millisecond))
	}
	tw.Flush()
}

// tools lists the View's tools, of one server or of all, and the tools
// left out of it by a name collision.
func (h *host) tools(w io.Writer, server string) {
	if server != "" {
		if _, err := h.m.Status(server); err != nil {
			fmt.Fprintf(w, "tools: %v\n", err)
			return
		}
	}
	view := h.m.View()
	// A description is cut first, then a long name.
	tab := table{shrink: []shrink{{col: 1, min: 30}, {col: 0, min: 20}}}
	n := 0
	for t := range view.Tools() {
		if server != "" && t.Server() != server {
			continue
		}
		n++
		tab.row(t.Qualified(), firstLine(t.Definition().Description))
	}
	for _, q := range view.Quarantined() {
		if server != "" && q.Server != server {
			continue
		}
		tab.row("-", fmt.Sprintf("(quarantined: %s's tool %q has the name %s held by %s)", q.Server, q.Tool, q.Qualified, q.Holder))
	}
	tab.write(w)
	if n == 0 {
		if server != "" {
			fmt.Fprintf(w, "no tools published for %s\n", server)
		} else {
			fmt.Fprintln(w, "no tools published")
		}
	}
	if server != "" {
		if st, _ := h.m.Status(server); st.FilteredTools > 0 {
			f, _ := h.m.ToolFilter(server)
			fmt.Fprintf(w, "(%d more filtered out: %s)\n", st.FilteredTools, f)
		}
	}
}

// call calls a tool with the JSON object in args and prints what came back.
func (h *host) call(ctx context.Context, w io.Writer, line string) {
	name, raw, _ := strings.Cut(line, " ")
	if name == "" {
		fmt.Fprintln(w, `call: usage: call <server__tool> [{"json": "arguments"}]`)
		return
	}
	args, err := parseArgs(raw)
	if err != nil {
		fmt.Fprintf(w, "call: bad arguments: %v\n", err)
		return
	}
	start := time.Now()
	res, err := h.m.Call(ctx, name, args)
	if errors.Is(err, client.ErrToolNotFound) {
		if server, tool, ok := h.unpublished(name); ok {
			// Its server has no catalog yet (first connect under way, or
			// lazy): CallTool waits for it, where Call cannot route.
			res, err = h.m.CallTool(ctx, server, tool, args)
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		fmt.Fprintf(w, "call %s: error after %s: %v\n", name, took, err)
		if errors.Is(err, client.ErrToolNotFound) {
			fmt.Fprintln(w, "  (tools lists the names the view has now)")
		}
		return
	}
	if res.IsError {
		fmt.Fprintf(w, "call %s: TOOL ERROR (isError) after %s:\n", name, took)
	} else {
		fmt.Fprintf(w, "call %s: ok after %s:\n", name, took)
	}
	for _, c := range res.Content {
		fmt.Fprintln(w, indent(contentText(c)))
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			fmt.Fprintln(w, indent(string(b)))
		}
	}
}

// unpublished splits a qualified name whose server has published no
// catalog yet into that server and the tool, as the default separator and
// the config's tool prefixes make them. It cannot undo the short form the
// View gives a long name, but a long name is not typed by hand.
func (h *host) unpublished(qualified string) (server, tool string, ok bool) {
	for name, sc := range h.cfg.Servers {
		prefix := name
		if sc.ToolPrefix != "" {
			prefix = sc.ToolPrefix
		}
		tool, ok := strings.CutPrefix(qualified, prefix+separator)
		if !ok || tool == "" {
			continue
		}
		if _, published := h.m.View().Catalog(name); published {
			continue // the tool is really not there
		}
		if st, err := h.m.Status(name); err == nil && st.State.Accepting() {
			return name, tool, true
		}
	}
	return "", "", false
}

// parseArgs decodes a call's arguments: nothing, or one JSON object.
func parseArgs(raw string) (map[string]any, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // pass large integers through as the user wrote them
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: more than one value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, not %s", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// contentText renders one content item of a result as text.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case mcp.TextContent:
		return c.Text
	case mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d base64 bytes]", c.MIMEType, len(c.Data))
	case mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d base64 bytes]", c.MIMEType, len(c.Data))
	case mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s]", c.URI)
	case mcp.EmbeddedResource:
		if t, ok := c.Resource.(mcp.TextResourceContents); ok {
			return fmt.Sprintf("[resource %s]\n%s", t.URI, t.Text)
		}
		return "[embedded resource]"
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Sprintf("[%T]", c)
	}
	return string(b)
}

// toggle runs enable, disable or reconnect on one server.
func (h *host) toggle(ctx context.Context, w io.Writer, verb, name string) {
	if name == "" || strings.ContainsRune(name, ' ') {
		fmt.Fprintf(w, "%s: usage: %s <server>\n", verb, verb)
		return
	}
	var err error
	switch verb {
	case "enable":
		err = h.m.Enable(ctx, name)
	case "disable":
		err = h.m.Disable(ctx, name)
	case "reconnect":
		err = h.m.Reconnect(ctx, name)
	}
	if err != nil {
		fmt.Fprintf(w, "%s %s: %v\n", verb, name, err)
		return
	}
	st, err := h.m.Status(name)
	if err != nil {
		fmt.Fprintf(w, "%s %s: done; %v\n", verb, name, err)
		return
	}
	// Disable has finished by now; Enable and Reconnect have only started.
	fmt.Fprintf(w, "%s %s: done; now %s\n", verb, name, st.State)
}

// stderr prints what a stdio server last wrote to its stderr.
func (h *host) stderr(w io.Writer, name string) {
	st, err := h.m.Status(name)
	if err != nil {
		fmt.Fprintf(w, "stderr: %v\n", err)
		return
	}
	// Status keeps the lines of the live runtime, or of the last one or
	// the last failed dial, so a server that died at start shows why.
	if len(st.Stderr) == 0 {
		fmt.Fprintf(w, "%s wrote nothing to stderr\n", name)
	}
	for _, l := range st.Stderr {
		fmt.Fprintf(w, "%s! %s\n", name, l)
	}
	if st.State != lifecycle.Connected && st.LastError != nil {
		fmt.Fprintf(w, "%s is %s; its last error:\n%s\n", name, st.State, indent(st.LastError.Error()))
	}
}

// reload re-reads the config file, applies it, and says what changed.
func (h *host) reload(ctx context.Context, w io.Writer) {
	cfg, err := h.load()
	if err != nil {
		fmt.Fprintf(w, "reload: %v\n(nothing changed)\n", err)
		return
	}
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	res, applyErr := h.m.Apply(actx, cfg)
	cancel()
	old := h.cfg
	h.cfg = cfg
	fmt.Fprintf(w, "reload %s: %s\n", h.path, res)
	// Apply changes an idle timeout in place and does not count it as a
	// change: say so here.
	for _, name := range res.Unchanged {
		before, after := old.Servers[name].IdleTimeout, cfg.Servers[name].IdleTimeout
		if before != after {
			fmt.Fprintf(w, "reload: %s idle timeout %s -> %s, in place\n", name, idleText(before), idleText(after))
		}
	}
	if applyErr != nil {
		fmt.Fprintf(w, "reload: apply: %v\n", applyErr)
	}
}

// idleText shows an idle timeout, 0 as "off".
func idleText(d time.Duration) string {
	if d <= 0 {
		return "off"
	}
	return d.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func indent(s string) string {
	var b bytes.Buffer
	for l := range strings.Lines(s) {
		b.WriteString("  " + l)
	}
	return strings.TrimRight(b.String(), "\n")
}

// authTimeout bounds how long a loopback authorization waits for the user.
const authTimeout = 5 * time.Minute

// auth authorizes an OAuth server. With the server's name alone it prints
// the authorization URL and waits, in the background, for the browser's
// redirect on the loopback redirect URI; with a redirect URL or a code
// pasted after the name (a headless or SSH host, where the browser's
// redirect cannot come back) it completes the authorization with it.
func (h *host) auth(ctx context.Context, w io.Writer, args string) {
	name, pasted, _ := strings.Cut(args, " ")
	pasted = strings.TrimSpace(pasted)
	if name == "" {
		fmt.Fprintln(w, "auth: usage: auth <server> [redirect URL or code]")
		return
	}
	if pasted != "" {
		if cancel, ok := h.auths[name]; ok {
			cancel() // the loopback listener is not needed any more
			delete(h.auths, name)
		}
		if err := h.m.CompleteAuthorization(ctx, name, pasted); err != nil {
			fmt.Fprintf(w, "auth: %v\n", err)
			return
		}
		fmt.Fprintf(w, "auth: %s authorized\n", name)
		return
	}
	if cancel, ok := h.auths[name]; ok {
		cancel()
	}
	actx, cancel := context.WithTimeout(ctx, authTimeout)
	h.auths[name] = cancel
	shown := make(chan string, 1)
	h.authWG.Add(1)
	go func() {
		defer h.authWG.Done()
		defer cancel()
		err := h.m.AuthorizeLoopback(actx, name, func(url string) error {
			shown <- url
			return nil
		})
		switch {
		case err == nil:
			h.printf("auth: %s authorized\n", name)
		case actx.Err() != nil:
			// Replaced by a pasted redirect, a new auth, or the host's end.
		default:
			h.printf("auth: %v\n", err)
		}
		close(shown)
	}()
	if url, ok := <-shown; ok {
		fmt.Fprintf(w, "auth: open this URL to authorize %s:\n  %s\n"+
			"auth: waiting for the redirect on this machine; on another machine, paste it: auth %s <redirect URL or code>\n",
			name, url, name)
	}
}

// stopAuths ends the loopback authorizations under way and waits for them.
func (h *host) stopAuths() {
	for _, cancel := range h.auths {
		cancel()
	}
	h.authWG.Wait()
}

// filter runs allow or deny: it replaces that list of a server's tool
// filter with the entries given (none clears it), keeps the other list,
// and says what the View has now. Nothing is sent to the server; a reload
// puts back the config file's filter if it says otherwise.
func (h *host) filter(w io.Writer, verb, args string) {
	fields := strings.Fields(args)
	if len(fields) == 0 {
		fmt.Fprintf(w, "%s: usage: %s <server> [tool or glob ...]   (none clears the %s list)\n", verb, verb, verb)
		return
	}
	name, entries := fields[0], fields[1:]
	f, err := h.m.ToolFilter(name)
	if err != nil {
		fmt.Fprintf(w, "%s: %v\n", verb, err)
		return
	}
	if verb == "allow" {
		f.Allow = entries
	} else {
		f.Deny = entries
	}
	if err := h.m.SetToolFilter(name, f); err != nil {
		fmt.Fprintf(w, "%s %s: %v\n", verb, name, err)
		return
	}
	fmt.Fprintf(w, "%s %s: done; filter: %s\n", verb, name, f)
	if st, err := h.m.Status(name); err == nil {
		fmt.Fprintf(w, "%s: tools: %d published, %d filtered out\n", name, st.Tools, st.FilteredTools)
	}
}
