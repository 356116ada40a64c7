package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/texttable"
)

func cmdDescribe(ctx context.Context, args []string, e *env) error {
	inv, err := prepare(ctx, e, cmdSpec{name: "describe", minArgs: 1, maxArgs: 1, json: true, wait: true,
		wantArgs: "the name of one tool (SERVER__TOOL, SERVER/TOOL, or TOOL when one server has it)"}, args)
	if err != nil {
		return err
	}
	defer inv.close()
	tools, err := inv.fleet.tools(ctx, "", 0, true)
	if err != nil {
		return err
	}
	tr, err := findTool(tools, inv.args[0])
	if err != nil {
		return err
	}
	if inv.json {
		return printJSON(e.stdout, tr)
	}
	writeTool(e.stdout, tr)
	return nil
}

// findTool returns the tool name names: its qualified name, SERVER/TOOL,
// or the server's own name of it when only one server has a tool of that
// name.
func findTool(tools []admin.ToolReport, name string) (admin.ToolReport, error) {
	var bare []admin.ToolReport
	names := make([]string, 0, len(tools))
	for _, tr := range tools {
		if tr.Name == name || tr.Server+"/"+tr.Tool == name {
			return tr, nil
		}
		if tr.Tool == name {
			bare = append(bare, tr)
		}
		names = append(names, tr.Name)
	}
	switch len(bare) {
	case 1:
		return bare[0], nil
	case 0:
		return admin.ToolReport{}, fmt.Errorf("no tool %q%s", name, didYouMean(name, names))
	}
	var which []string
	for _, tr := range bare {
		which = append(which, tr.Name)
	}
	return admin.ToolReport{}, fmt.Errorf("%d servers have a tool %q: say which, %s", len(bare), name, strings.Join(which, " or "))
}

// unknownTool returns " (did you mean …?)" when the fleet lists no tool
// name (qualified, or SERVER/TOOL), and "" when it does or cannot say.
func unknownTool(ctx context.Context, f fleet, name string) string {
	var tools []admin.ToolReport
	var err error
	if l, ok := f.(*localFleet); ok {
		tools, err = l.known() // no wait, and none of its notes: the call's error is what matters
	} else {
		tools, err = f.tools(ctx, "", 0, false)
	}
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(tools))
	for _, tr := range tools {
		if tr.Name == name || tr.Server+"/"+tr.Tool == name {
			return ""
		}
		names = append(names, tr.Name)
	}
	return didYouMean(strings.Replace(name, "/", "__", 1), names)
}

// writeTool prints what a tool says of itself: its name, server, title,
// hints, whole description, and its arguments, from its input schema.
func writeTool(w io.Writer, tr admin.ToolReport) {
	fmt.Fprintf(w, "%s  (server %s, tool %s)\n", termSafe(tr.Name, false), termSafe(tr.Server, false), termSafe(tr.Tool, false))
	if tr.Title != "" {
		fmt.Fprintf(w, "title: %s\n", termSafe(tr.Title, false))
	}
	var hints []string
	if tr.ReadOnly {
		hints = append(hints, "read-only")
	}
	for _, h := range []struct {
		name string
		v    *bool
	}{{"destructive", tr.Destructive}, {"idempotent", tr.Idempotent}, {"open-world", tr.OpenWorld}} {
		if h.v != nil {
			if *h.v {
				hints = append(hints, h.name)
			} else {
				hints = append(hints, "not "+h.name)
			}
		}
	}
	if len(hints) > 0 {
		fmt.Fprintf(w, "hints: %s\n", strings.Join(hints, ", "))
	}
	for para := range strings.SplitSeq(strings.TrimSpace(tr.Description), "\n") {
		if para == "" {
			fmt.Fprintln(w)
		}
		for _, l := range texttable.Wrap(termSafe(para, false), 50) {
			fmt.Fprintln(w, l)
		}
	}
	writeArguments(w, tr.InputSchema)
	if len(tr.OutputSchema) > 0 {
		fmt.Fprintln(w, "output schema:")
		writeSchema(w, tr.OutputSchema)
	}
}

// writeArguments lists the properties of an input schema, one a line
// (name, type, required, description), then the schema itself.
func writeArguments(w io.Writer, schema json.RawMessage) {
	var s struct {
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return
	}
	if len(s.Properties) == 0 {
		fmt.Fprintln(w, "arguments: none")
	} else {
		fmt.Fprintln(w, "arguments:")
		t := texttable.Table{Shrink: []texttable.Shrink{{Col: 3, Min: 20}, {Col: 0, Min: 12}}}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		t.Row("  NAME", "TYPE", "REQUIRED", "DESCRIPTION")
		for _, n := range names {
			p := s.Properties[n]
			req := ""
			if slices.Contains(s.Required, n) {
				req = "yes"
			}
			typ := ""
			switch v := p.Type.(type) {
			case string:
				typ = v
			case []any:
				parts := make([]string, 0, len(v))
				for _, x := range v {
					parts = append(parts, fmt.Sprint(x))
				}
				typ = strings.Join(parts, "|")
			}
			t.Row("  "+termSafe(n, false), termSafe(typ, false), req, termSafe(firstLine(p.Description), false))
		}
		t.Write(w)
	}
	fmt.Fprintln(w, "input schema:")
	writeSchema(w, schema)
}

// writeSchema prints a JSON Schema indented, escaped for the terminal.
func writeSchema(w io.Writer, schema json.RawMessage) {
	var b bytes.Buffer
	if json.Indent(&b, schema, "  ", "  ") != nil {
		b.Reset()
		b.Write(schema)
	}
	fmt.Fprintln(w, "  "+string(jsonSafe(b.Bytes())))
}
