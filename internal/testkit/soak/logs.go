//go:build linux

package soak

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// logCatcher is the Manager's logger in the soak. The Manager logs a bug
// (an illegal transition it refused) as "mcpfleet: bug: …": each is a
// failure. Everything else at Warn and above (mcp-go's transports log
// through the same logger: a lost SSE stream, a DELETE to a dead server)
// is counted by message for the summary.
type logCatcher struct {
	led    *ledger
	lookup func(name string) *member
	attrs  []slog.Attr
	counts *logCounts
}

type logCounts struct {
	mu sync.Mutex
	n  map[string]int // level + folded message → records
}

func newLogCatcher(led *ledger, lookup func(string) *member) *logCatcher {
	return &logCatcher{led: led, lookup: lookup, counts: &logCounts{n: map[string]int{}}}
}

func (h *logCatcher) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *logCatcher) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	server := ""
	add := func(a slog.Attr) bool {
		if a.Key == "server" {
			server = a.Value.String()
		}
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if strings.HasPrefix(r.Message, "mcpfleet: bug") {
		h.led.fail(failure{rule: ruleLog, server: h.lookup(server), at: r.Time, detail: b.String(), errText: r.Message})
		return nil
	}
	h.counts.mu.Lock()
	h.counts.n[r.Level.String()+" "+fold(b.String(), "")]++
	h.counts.mu.Unlock()
	return nil
}

func (h *logCatcher) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

// WithGroup keeps the attributes flat: the soak only reads them.
func (h *logCatcher) WithGroup(string) slog.Handler { return h }

// top returns the total of counted records and the n most frequent
// messages with their counts.
func (c *logCounts) top(n int) (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	keys := make([]string, 0, len(c.n))
	for k, v := range c.n {
		total += v
		keys = append(keys, k)
	}
	sortByCount(keys, c.n)
	var out []string
	for i, k := range keys {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%d× %s", c.n[k], k))
	}
	return total, out
}

// matching counts the records whose message contains substr.
func (c *logCounts) matching(substr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.n {
		if strings.Contains(k, substr) {
			n += v
		}
	}
	return n
}
