package admin

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// ServerReport is one server's status as the admin endpoint and the
// command line's --json give it: client.ServerStatus and the server's
// request counters, in plain JSON. Errors are their messages, which the
// Manager keeps free of secrets.
type ServerReport struct {
	Name             string    `json:"name"`
	State            string    `json:"state"`
	Generation       uint64    `json:"generation"`
	Attempt          int       `json:"attempt,omitempty"`
	NextRetry        time.Time `json:"nextRetry,omitzero"`
	LastError        string    `json:"lastError,omitempty"`
	CatalogError     string    `json:"catalogError,omitempty"`
	ConnectedAt      time.Time `json:"connectedAt,omitzero"`
	InState          string    `json:"inState,omitempty"` // how long it has been in State
	Protocol         string    `json:"protocol,omitempty"`
	ServerName       string    `json:"serverName,omitempty"` // what the server calls itself
	ServerVersion    string    `json:"serverVersion,omitempty"`
	Tools            int       `json:"tools"`
	FilteredTools    int       `json:"filteredTools,omitempty"`
	Quarantined      int       `json:"quarantined,omitempty"`
	Cached           bool      `json:"cached,omitempty"`
	InFlight         int64     `json:"inFlight"`
	Requests         uint64    `json:"requests"`
	Failed           uint64    `json:"failed"` // requests that ended other than ok or a tool's own error
	Reconnects       uint64    `json:"reconnects"`
	Retries          uint64    `json:"retries"` // requests sent again: resent unsent, or replayed after a loss
	AuthorizationURL string    `json:"authorizationUrl,omitempty"`
	IdleTimeout      string    `json:"idleTimeout,omitempty"`
	IdleSince        time.Time `json:"idleSince,omitzero"`
	// QuarantinedTemplates are the server's resource templates a gateway
	// does not serve, each with the other server's that it overlaps: "T
	// (overlaps H's U)". Only a running serve reports them.
	QuarantinedTemplates []string `json:"quarantinedTemplates,omitempty"`
}

// Reports returns a report per server of m, sorted by name.
func Reports(m *client.Manager) []ServerReport {
	return MakeReports(m.Statuses(), m.Stats())
}

// MakeReports builds the reports of statuses (sorted by name) with the
// counters of stats.
func MakeReports(statuses []client.ServerStatus, stats client.Stats) []ServerReport {
	byName := make(map[string]client.ServerStats, len(stats.Servers))
	for _, s := range stats.Servers {
		byName[s.Name] = s
	}
	out := make([]ServerReport, len(statuses))
	for i, s := range statuses {
		r := ServerReport{
			Name: s.Name, State: s.State.String(), Generation: s.Generation, Attempt: s.Attempt,
			NextRetry: s.NextRetry, ConnectedAt: s.ConnectedAt, Protocol: s.Protocol,
			ServerName: s.ServerInfo.Name, ServerVersion: s.ServerInfo.Version,
			Tools: s.Tools, FilteredTools: s.FilteredTools, Quarantined: len(s.Quarantined), Cached: s.Cached,
			InFlight: s.InFlight, AuthorizationURL: s.AuthorizationURL, IdleSince: s.IdleSince,
		}
		if s.LastError != nil {
			r.LastError = s.LastError.Error()
		}
		if s.CatalogError != nil {
			r.CatalogError = s.CatalogError.Error()
		}
		if s.IdleTimeout > 0 {
			r.IdleTimeout = s.IdleTimeout.String()
		}
		if st, ok := byName[s.Name]; ok {
			r.Requests = st.Requests()
			r.Failed = r.Requests - st.Calls[client.OutcomeOK] - st.Calls[client.OutcomeToolError]
			r.Reconnects, r.Retries = st.Reconnects, st.Retries
			r.InState = st.InState.Round(time.Millisecond).String()
		}
		out[i] = r
	}
	return out
}

// addQuarantined adds the quarantined templates to the reports of their
// servers.
func addQuarantined(reports []ServerReport, qs []gateway.QuarantinedTemplate) {
	for _, q := range qs {
		for i := range reports {
			if reports[i].Name == q.Server {
				reports[i].QuarantinedTemplates = append(reports[i].QuarantinedTemplates,
					fmt.Sprintf("%s (overlaps %s's %s)", q.Template, q.Holder, q.HolderTemplate))
			}
		}
	}
}

// ToolReport is one tool of the catalog, as `tools` lists it and
// `describe` shows it.
type ToolReport struct {
	Name        string  `json:"name"` // qualified
	Server      string  `json:"server"`
	Tool        string  `json:"tool"` // as the server names it
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	ReadOnly    bool    `json:"readOnly,omitempty"`
	Destructive *bool   `json:"destructive,omitempty"`
	Idempotent  *bool   `json:"idempotent,omitempty"`
	OpenWorld   *bool   `json:"openWorld,omitempty"`
	Score       float64 `json:"score,omitempty"` // of a search
	// InputSchema and OutputSchema are the tool's JSON Schemas, when asked
	// for.
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ToolReports lists m's tools, or, with a query, the best k matches of a
// tool search (see toolsearch) in ts; schemas adds each tool's schemas.
func ToolReports(m *client.Manager, ts *client.ToolSearch, query string, k int, schemas bool) ([]ToolReport, error) {
	var out []ToolReport
	if query == "" {
		v := m.View()
		out = make([]ToolReport, 0, v.NumTools())
		for i := range v.NumTools() {
			t := v.ToolAt(i)
			out = append(out, toolReport(t.Qualified(), t.Server(), t.Definition(), 0, schemas))
		}
		return out, nil
	}
	ts.Sync()
	hits, err := ts.Search(toolsearch.Query{Text: query, K: k})
	if err != nil {
		return nil, err
	}
	out = make([]ToolReport, 0, len(hits))
	for _, h := range hits {
		out = append(out, toolReport(h.Qualified, h.Tool.Server(), h.Tool.Definition(), h.Score, schemas))
	}
	return out, nil
}

func toolReport(qualified, srvName string, def mcp.Tool, score float64, schemas bool) ToolReport {
	r := ToolReport{Name: qualified, Server: srvName, Tool: def.Name, Title: def.Title, Description: def.Description, Score: score,
		Destructive: def.Annotations.DestructiveHint, Idempotent: def.Annotations.IdempotentHint, OpenWorld: def.Annotations.OpenWorldHint}
	if r.Title == "" {
		r.Title = def.Annotations.Title
	}
	r.ReadOnly = def.Annotations.ReadOnlyHint != nil && *def.Annotations.ReadOnlyHint
	if schemas {
		// As the server sent them: the definition's own JSON has them in
		// whichever of its two forms (typed or raw) it holds.
		var wire struct {
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if b, err := json.Marshal(def); err == nil && json.Unmarshal(b, &wire) == nil {
			r.InputSchema, r.OutputSchema = wire.InputSchema, wire.OutputSchema
		}
	}
	return r
}
