package main

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/snapshot"
)

// timeline prints every event as it arrives, until the subscription is
// closed.
func (h *host) timeline(events <-chan client.Event) {
	for e := range events {
		var b strings.Builder
		if e.Dropped > 0 {
			fmt.Fprintf(&b, "* (%s lost: the timeline fell behind)\n", plural(int(e.Dropped), "event", "events"))
		}
		b.WriteString(eventLine(e) + "\n")
		h.write(b.String())
	}
}

// eventLine renders one event on one line: a catalog change that would
// make it wider than width says how many tools instead of naming them. A
// line with a cause is not cut: the cause is what the line is for.
func eventLine(e client.Event) string {
	stamp := "* " + e.Time.Format("15:04:05.000") + " "
	line := stamp + describe(e, false)
	if utf8.RuneCountInString(line) > width {
		line = stamp + describe(e, true)
	}
	if e.Err != nil {
		return line
	}
	return cut(line, width)
}

// describe renders one event; brief counts a catalog change's tools
// instead of naming them.
func describe(e client.Event, brief bool) string {
	var s string
	switch e.Kind {
	case client.EventState:
		s = fmt.Sprintf("%s %s -> %s (generation %d)", e.Server, e.From, e.To, e.Generation)
	case client.EventRetry:
		s = fmt.Sprintf("%s retry #%d in %s", e.Server, e.Attempt+1, e.NextRetry.Sub(e.Time).Round(time.Millisecond))
	case client.EventCatalog:
		s = e.Server + " catalog" + diffText(e.Diff, brief)
	default:
		s = fmt.Sprintf("%s %s", e.Server, e.Kind)
	}
	if e.Err != nil {
		s += ": " + firstLine(e.Err.Error())
	}
	if e.Kind == client.EventState && e.To == lifecycle.NeedsAuthorization {
		s += "; type: auth " + e.Server
	}
	return s
}

// diffText says what a catalog change did, leaving out what did not change.
func diffText(d *snapshot.Diff, brief bool) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	list := func(what string, names []string) {
		switch {
		case len(names) == 0:
		case brief:
			fmt.Fprintf(&b, " %s %s;", what, plural(len(names), "tool", "tools"))
		default:
			fmt.Fprintf(&b, " %s %s;", what, strings.Join(names, " "))
		}
	}
	list("added", d.Added)
	list("removed", d.Removed)
	list("changed", d.Changed)
	for _, q := range d.Quarantined {
		fmt.Fprintf(&b, " quarantined %s (%s's %s: name held by %s);", q.Qualified, q.Server, q.Tool, q.Holder)
	}
	for _, q := range d.Promoted {
		fmt.Fprintf(&b, " promoted %s (%s's %s);", q.Qualified, q.Server, q.Tool)
	}
	for _, f := range []struct {
		on   bool
		what string
	}{
		{d.PromptsChanged, "prompts"}, {d.ResourcesChanged, "resources"}, {d.ResourceTemplatesChanged, "resource templates"},
		// A catalog coming or going changes the info too; say so only
		// when it is the news.
		{d.InfoChanged && len(d.Added) == 0 && len(d.Removed) == 0, "server info"},
	} {
		if f.on {
			fmt.Fprintf(&b, " %s changed;", f.what)
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}
