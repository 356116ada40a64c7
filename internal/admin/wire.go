package admin

import (
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
)

// EventReport is one client.Event as the admin endpoint's watch stream and
// the command line's `watch --json` give it.
type EventReport struct {
	Seq              uint64    `json:"seq"`
	Time             time.Time `json:"time"`
	Kind             string    `json:"kind"`
	Server           string    `json:"server"`
	From             string    `json:"from,omitempty"`
	To               string    `json:"to,omitempty"`
	Generation       uint64    `json:"generation,omitempty"`
	Attempt          int       `json:"attempt,omitempty"`
	NextRetry        time.Time `json:"nextRetry,omitzero"`
	Error            string    `json:"error,omitempty"`
	Protocol         string    `json:"protocol,omitempty"`
	Added            []string  `json:"added,omitempty"`
	Removed          []string  `json:"removed,omitempty"`
	Changed          []string  `json:"changed,omitempty"`
	Level            string    `json:"level,omitempty"`
	Logger           string    `json:"logger,omitempty"`
	Data             any       `json:"data,omitempty"`
	URI              string    `json:"uri,omitempty"`
	Method           string    `json:"method,omitempty"`
	Count            uint64    `json:"count,omitempty"`
	AuthorizationURL string    `json:"authorizationUrl,omitempty"`
	Dropped          uint64    `json:"dropped,omitempty"`
}

// MakeEventReport turns ev into its report.
func MakeEventReport(ev client.Event) EventReport {
	r := EventReport{Seq: ev.Seq, Time: ev.Time, Kind: ev.Kind.String(), Server: ev.Server,
		Generation: ev.Generation, Attempt: ev.Attempt, NextRetry: ev.NextRetry, Protocol: ev.Protocol,
		URI: ev.URI, Method: ev.Method, Count: ev.Count, AuthorizationURL: ev.AuthorizationURL, Dropped: ev.Dropped}
	if ev.Kind == client.EventState {
		r.From, r.To = ev.From.String(), ev.To.String()
	}
	if ev.Err != nil {
		r.Error = ev.Err.Error()
	}
	if d := ev.Diff; d != nil {
		r.Added, r.Removed, r.Changed = d.Added, d.Removed, d.Changed
	}
	if l := ev.Log; l != nil {
		r.Level, r.Logger, r.Data = string(l.Level), l.Logger, l.Data
	}
	return r
}

// CallRequest is the body of the admin endpoint's call.
type CallRequest struct {
	Tool      string          `json:"tool"` // qualified, or server/tool
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// StreamLine is one line of the admin endpoint's streamed answers (call,
// watch, auth): exactly one field is set.
type StreamLine struct {
	Servers  []ServerReport      `json:"servers,omitempty"`  // watch: the statuses, first
	Event    *EventReport        `json:"event,omitempty"`    // watch: each event after them
	Progress *ProgressReport     `json:"progress,omitempty"` // call
	Result   *mcp.CallToolResult `json:"result,omitempty"`   // call: the last line
	URL      string              `json:"url,omitempty"`      // auth: where to authorize
	Done     bool                `json:"done,omitempty"`     // auth: authorized
	Error    string              `json:"error,omitempty"`    // the last line of a failure
}

// ProgressReport is one progress notification of a call.
type ProgressReport struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}
