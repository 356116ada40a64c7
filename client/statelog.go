package client

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// Bounds of what stateLog writes for one server that keeps changing: a
// burst of lines, then one line every logEvery, each saying how many it
// left out. A server failing every 10 ms for a minute writes
// logBurst+60s/logEvery lines (about twenty), not thousands.
const (
	logBurst = 8
	logEvery = 5 * time.Second
)

// stateLog writes the lines WithLogger promises, one per state change and
// failed attempt of each server, from the goroutine that delivers events:
// never under a slot's lock, and never holding up a slot. It is that
// goroutine's own, and needs no lock.
type stateLog struct {
	log     *slog.Logger
	tools   func(server string) int // the published catalog's tools
	servers map[string]*serverLog
}

// serverLog is what stateLog remembers of one server.
type serverLog struct {
	since      time.Time     // when the current connect began; zero when not connecting
	limit      *rate.Limiter // lines of this server, but Error ones; made at the first (full, as if made before)
	suppressed int           // lines left out since the last one written
}

func newStateLog(log *slog.Logger, tools func(string) int) *stateLog {
	return &stateLog{log: log, tools: tools, servers: map[string]*serverLog{}}
}

// write logs what e says, if it is a state change or a failed attempt.
func (l *stateLog) write(e Event) {
	if e.Kind != EventState && e.Kind != EventRetry {
		return
	}
	sl := l.servers[e.Server]
	if sl == nil {
		sl = &serverLog{}
		l.servers[e.Server] = sl
	}
	level, msg, attrs := l.describe(sl, e)
	switch e.To {
	case lifecycle.Connecting, lifecycle.Reconnecting:
		if sl.since.IsZero() {
			sl.since = e.Time
		}
	default:
		if e.Kind == EventState {
			sl.since = time.Time{}
		}
	}
	if e.Kind == EventState && e.To == lifecycle.Closed {
		delete(l.servers, e.Server) // a server added again starts afresh
	}
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	if flapping(e) {
		if sl.limit == nil {
			sl.limit = rate.NewLimiter(rate.Every(logEvery), logBurst)
		}
		if !sl.limit.AllowN(e.Time, 1) {
			sl.suppressed++
			return
		}
	}
	if sl.suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", sl.suppressed))
		sl.suppressed = 0
	}
	l.log.LogAttrs(ctx, level, msg, attrs...)
}

// flapping reports whether e is of the kind a flapping server repeats: a
// failed attempt, a connect, a loss. Those are rate limited; the host's
// own switches and the states that need a person always get their line.
func flapping(e Event) bool {
	if e.Kind == EventRetry {
		return true
	}
	switch e.To {
	case lifecycle.Connecting, lifecycle.Reconnecting, lifecycle.Connected:
		return true
	}
	return false
}

// describe chooses the level, message and attributes of e's line.
func (l *stateLog) describe(sl *serverLog, e Event) (slog.Level, string, []slog.Attr) {
	attrs := []slog.Attr{slog.String("server", e.Server), slog.Uint64("generation", e.Generation)}
	withErr := func() {
		if e.Err != nil {
			attrs = append(attrs, slog.String("err", e.Err.Error()))
		}
	}
	withRetry := func() {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
		if !e.NextRetry.IsZero() {
			attrs = append(attrs, slog.Duration("next_retry_in", e.NextRetry.Sub(e.Time).Round(time.Millisecond)))
		}
	}
	if e.Kind == EventRetry {
		withErr()
		withRetry()
		return slog.LevelWarn, "mcpfleet: connect attempt failed", attrs
	}
	attrs = append(attrs, slog.String("state", e.To.String()))
	switch e.To {
	case lifecycle.Connected:
		attrs = append(attrs, slog.Int("tools", l.tools(e.Server)))
		if e.Protocol != "" {
			attrs = append(attrs, slog.String("protocol", e.Protocol))
		}
		if !sl.since.IsZero() {
			attrs = append(attrs, slog.Duration("took", e.Time.Sub(sl.since).Round(time.Millisecond)))
		}
		return slog.LevelInfo, "mcpfleet: server connected", attrs
	case lifecycle.Reconnecting:
		withErr()
		withRetry()
		if e.From == lifecycle.Connected {
			return slog.LevelWarn, "mcpfleet: server lost; reconnecting", attrs
		}
		return slog.LevelWarn, "mcpfleet: server reconnecting", attrs
	case lifecycle.PermanentlyFailed:
		withErr()
		attrs = append(attrs, slog.Int("attempt", e.Attempt), slog.String("hint",
			"fix the cause: the server is probed again now and then, and Reconnect tries at once"))
		return slog.LevelError, "mcpfleet: server failed", attrs
	case lifecycle.NeedsAuthorization:
		withErr()
		attrs = append(attrs, slog.String("hint",
			"the user must authorize the client: see StartAuthorization and AuthorizeLoopback"))
		return slog.LevelError, "mcpfleet: server needs authorization", attrs
	case lifecycle.Disconnected:
		if e.From == lifecycle.Disabled {
			return slog.LevelDebug, "mcpfleet: server enabled; it starts on its first request", attrs
		}
		withErr()
		return slog.LevelInfo, "mcpfleet: server stopped until its next request", attrs
	case lifecycle.Disabled:
		return slog.LevelInfo, "mcpfleet: server disabled", attrs
	}
	withErr()
	return slog.LevelDebug, "mcpfleet: server " + e.To.String(), attrs
}
