package client

import (
	"context"
	"fmt"
	"log/slog"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// LogMessage is one notifications/message a server sent: the payload of an
// EventLog.
type LogMessage struct {
	Level  mcp.LoggingLevel
	Logger string // the server's name for the logger; may be empty
	Data   any    // any JSON value: usually a string, sometimes an object
}

// SetLevel asks server to send log messages of level and above, and
// remembers the level: every later runtime of the server is told the same
// right after its handshake, before the host can call it. On the
// 2026-07-28 protocol mcp-go sends the level in the _meta of each request
// rather than with logging/setLevel. Like a call, SetLevel waits for a
// server that is connecting; if it fails the level is still remembered.
func (m *Manager) SetLevel(ctx context.Context, server string, level mcp.LoggingLevel) error {
	// A level an interceptor refused is not remembered.
	_, err := run(ctx, m, server, request[struct{}]{
		method: string(mcp.MethodSetLogLevel), name: string(level), op: "set level",
		replay: alwaysReplayable, send: sendLevel,
		accepted: func(s *slot) { s.setLogLevel(level) },
	}, nil)
	return err
}

func sendLevel(ctx context.Context, _ *slot, c *mcpclient.Client, level string, _ any) (struct{}, error) {
	return struct{}{}, setLevel(ctx, c, mcp.LoggingLevel(level))
}

func setLevel(ctx context.Context, c *mcpclient.Client, level mcp.LoggingLevel) error {
	req := mcp.SetLevelRequest{}
	req.Params.Level = level
	//lint:ignore SA1019 the Logging feature is deprecated on 2026-07-28, not gone: servers of the older protocol still use it
	return c.SetLevel(ctx, req) //nolint:staticcheck // as above
}

// restoreLevel tells a new runtime the level the host last set, if any. A
// failure is logged and leaves the runtime usable: logging is advisory.
func (s *slot) restoreLevel(ctx context.Context, c *mcpclient.Client) {
	s.mu.Lock()
	level := s.logLevelLocked()
	s.mu.Unlock()
	if level == "" {
		return
	}
	if err := setLevel(ctx, c, level); err != nil {
		s.m.opts.logger.Warn("mcpfleet: could not restore the log level on the new runtime",
			"server", s.name, "level", level, "error", err)
	}
}

// onLog turns a notifications/message from l into an EventLog and a record
// of the Manager's logger, with the server's name. Messages from a detached
// runtime are dropped. It runs on the transport's goroutine and never
// blocks.
func (l *lease) onLog(n mcp.JSONRPCNotification) {
	var params mcp.LoggingMessageNotificationParams
	if !decodeParams(n.Params, &params) || l.ctx.Err() != nil {
		return
	}
	s := l.slot
	// The record is written before the event is queued, so that whoever
	// sees the event finds the record already there.
	attrs := []any{"server", s.name, "level", string(params.Level)}
	if params.Logger != "" {
		attrs = append(attrs, "logger", params.Logger)
	}
	msg := "mcpfleet: server log"
	if str, ok := params.Data.(string); ok {
		msg = fmt.Sprintf("mcpfleet: server log: %s", str)
	} else {
		attrs = append(attrs, "data", params.Data)
	}
	s.m.opts.logger.Log(context.Background(), slogLevel(params.Level), msg, attrs...)

	s.mu.Lock()
	defer s.mu.Unlock()
	if l.ctx.Err() == nil {
		s.emitLocked(Event{Kind: EventLog, Log: &LogMessage{Level: params.Level, Logger: params.Logger, Data: params.Data}})
	}
}

// slogLevel maps the syslog severities MCP uses onto slog's four levels.
func slogLevel(l mcp.LoggingLevel) slog.Level {
	switch l {
	case mcp.LoggingLevelDebug:
		return slog.LevelDebug
	case mcp.LoggingLevelInfo, mcp.LoggingLevelNotice:
		return slog.LevelInfo
	case mcp.LoggingLevelWarning:
		return slog.LevelWarn
	case "":
		return slog.LevelInfo
	default: // error, critical, alert, emergency
		return slog.LevelError
	}
}

// setLogLevel records the level the host asked for, told again to every
// new runtime.
func (s *slot) setLogLevel(level mcp.LoggingLevel) {
	s.mu.Lock()
	s.more().logLevel = level
	s.mu.Unlock()
}
