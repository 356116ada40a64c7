// Package quiet turns the logging of libraries mcpfleet builds on (mcp-go
// logs through its own slog.Logger, slog.Default() unless told otherwise)
// into Debug records of the host's logger: their lines are for whoever
// debugs the transport, and nothing of the module writes to stdout or
// stderr by itself.
package quiet

import (
	"context"
	"log/slog"
)

// Debug returns a logger that writes every record to l at slog.LevelDebug,
// whatever its own level; a nil l discards.
func Debug(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(debugHandler{l.Handler()})
}

type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{d.h.WithAttrs(attrs)}
}

func (d debugHandler) WithGroup(name string) slog.Handler { return debugHandler{d.h.WithGroup(name)} }
