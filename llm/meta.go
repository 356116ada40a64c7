package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// Default names of the meta-tools. They contain no separator a Manager
// qualifies with ("__"), so they cannot collide with a fleet tool.
const (
	DefaultSearchToolName = "search_tools"
	DefaultCallToolName   = "call_tool"
)

// DefaultSearchResults is how many tools search_tools returns when the
// model does not say.
const DefaultSearchResults = 5

// MetaTools are two tools a host gives its model in place of a large
// catalog: search_tools finds tools by what they do and returns their
// definitions, call_tool calls one of them by name. The model pays for two
// definitions instead of hundreds, and the fleet can change under it: a
// search sees the current catalog.
//
// A gateway serves the same tools over MCP: Tools gives the definitions,
// SearchHandler and CallHandler the handlers (wrap them in mcp-go's
// server.ToolHandlerFunc with req.GetArguments()).
type MetaTools struct {
	fleet    Fleet
	search   Searcher
	names    [2]string // search, call
	defaults toolsearch.Query
	now      func() time.Time
}

// MetaOption configures MetaTools.
type MetaOption func(*MetaTools)

// WithMetaNames renames the two tools (for a host whose own tools use
// the default names).
func WithMetaNames(search, call string) MetaOption {
	return func(m *MetaTools) { m.names = [2]string{search, call} }
}

// WithSearchDefaults sets what every search_tools query starts from: the
// servers and the hints it keeps to, and the tools it leaves out (a host
// that lets its model use only read-only tools sets Require:
// toolsearch.HintReadOnly). The model's own text and limit fill in the
// rest. They bound calls as well as searches: call_tool, and a Run with
// these MetaTools, refuse a tool the search would never offer (Allowed).
func WithSearchDefaults(q toolsearch.Query) MetaOption {
	return func(m *MetaTools) { m.defaults = q }
}

// NewMetaTools returns the meta-tools over f, searching with s.
func NewMetaTools(f Fleet, s Searcher, opts ...MetaOption) *MetaTools {
	m := &MetaTools{fleet: f, search: s, names: [2]string{DefaultSearchToolName, DefaultCallToolName}, now: time.Now}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Names returns the names of the search and the call tool.
func (m *MetaTools) Names() (search, call string) { return m.names[0], m.names[1] }

// Has reports whether name is one of the meta-tools.
func (m *MetaTools) Has(name string) bool { return name == m.names[0] || name == m.names[1] }

// Tools returns the two definitions, search first.
func (m *MetaTools) Tools() []mcp.Tool { return []mcp.Tool{m.SearchTool(), m.CallTool()} }

// SearchTool is the definition of search_tools.
func (m *MetaTools) SearchTool() mcp.Tool {
	return mcp.NewTool(m.names[0],
		mcp.WithDescription("Search the available tools by what you want to do, in plain words "+
			"(for example \"open a pull request\" or \"read a file\"). Returns the best matching tools "+
			"with their names, descriptions and input schemas; call one with "+m.names[1]+"."),
		mcp.WithString("query", mcp.Required(), mcp.Description("What you want a tool to do.")),
		mcp.WithNumber("limit", mcp.Description(fmt.Sprintf("How many tools to return (1-20, default %d).", DefaultSearchResults))),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
}

// CallTool is the definition of call_tool.
func (m *MetaTools) CallTool() mcp.Tool {
	return mcp.NewTool(m.names[1],
		mcp.WithDescription("Call a tool that "+m.names[0]+" found, by its exact name, with arguments that match its input schema."),
		mcp.WithString("name", mcp.Required(), mcp.Description("The tool's name as "+m.names[0]+" returned it.")),
		mcp.WithObject("arguments", mcp.Description("The tool's arguments, an object matching its input schema.")),
	)
}

// Handle runs the meta-tool name with args; the error of an unknown name
// is the only error it returns.
func (m *MetaTools) Handle(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	switch name {
	case m.names[0]:
		return m.SearchHandler()(ctx, args)
	case m.names[1]:
		return m.CallHandler()(ctx, args)
	}
	return nil, fmt.Errorf("mcpfleet: llm: %q is not a meta-tool", name)
}

// FoundTool is one tool search_tools returns, in its structured content.
type FoundTool struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Server      string         `json:"server"`
	InputSchema map[string]any `json:"inputSchema"`
}

// SearchHandler returns the handler of search_tools: it answers with the
// found tools as structured content ({"tools": [FoundTool...]}) and the
// same JSON as text. A search that fails is an isError result.
func (m *MetaTools) SearchHandler() func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		hits, err := m.Find(args)
		if err != nil {
			return ErrorResult(err.Error()), nil
		}
		found := make([]FoundTool, len(hits))
		for i, h := range hits {
			def := h.Tool.Definition()
			found[i] = FoundTool{Name: h.Qualified, Title: def.Title, Description: def.Description,
				Server: h.Tool.Server(), InputSchema: toolsearch.InputSchema(def)}
		}
		body := map[string]any{"tools": found}
		if len(found) == 0 {
			body["hint"] = "no tool matches; try other words"
		}
		text, _ := json.Marshal(body)
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}, StructuredContent: body}, nil
	}
}

// Find runs the search that search_tools would for args ("query" and
// "limit"): for an adapter that renders the hits its own way (Anthropic's
// tool references).
func (m *MetaTools) Find(args map[string]any) ([]toolsearch.Hit, error) {
	text, _ := args["query"].(string)
	if text == "" {
		return nil, fmt.Errorf("%s needs a non-empty \"query\" saying what the tool should do", m.names[0])
	}
	k := DefaultSearchResults
	if l, ok := args["limit"].(float64); ok && l >= 1 {
		k = min(int(l), 20)
	}
	q := m.defaults
	q.Text, q.K, q.Mode = text, k, toolsearch.ModeBM25
	return m.search.Search(q)
}

// CallHandler returns the handler of call_tool: the called tool's result
// as it is, or an isError result that explains a failure (Explain). Only
// a tool the View holds and the search could offer (Allowed) can be
// called; the meta-tools cannot call themselves.
func (m *MetaTools) CallHandler() func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		name, _ := args["name"].(string)
		if name == "" || m.Has(name) {
			return ErrorResult(fmt.Sprintf("%s needs the \"name\" of a tool that %s returned", m.names[1], m.names[0])), nil
		}
		callArgs, ok := args["arguments"].(map[string]any)
		if !ok {
			if args["arguments"] != nil {
				return ErrorResult(fmt.Sprintf("the \"arguments\" of %s must be an object matching the tool's input schema", m.names[1])), nil
			}
			callArgs = map[string]any{}
		}
		if err := m.Allowed(name); err != nil {
			return ErrorResult(m.refusal(err)), nil
		}
		res, err := m.fleet.Call(ctx, name, callArgs)
		if err != nil {
			return ErrorResult(Explain(name, err, m.now())), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		return res, nil
	}
}

// ErrNotAllowed is the error of a call of a tool that the meta-tools'
// search would never offer under its defaults (WithSearchDefaults): a tool
// of another server, one without the required hints, or an excluded one.
var ErrNotAllowed = errors.New("mcpfleet: llm: tool not allowed")

// Allowed returns nil when the search could offer the tool qualified, and
// otherwise an error wrapping ErrNotAllowed that says which default keeps
// it out. The search answers, with the same filter it searches with, so
// the two cannot disagree; a tool its index does not hold (yet) is not
// allowed either. MetaTools without search defaults allow every tool.
func (m *MetaTools) Allowed(qualified string) error {
	d := m.defaults
	if len(d.Servers) == 0 && d.Require == 0 && len(d.Exclude) == 0 {
		return nil
	}
	if m.offers(qualified, d) {
		return nil
	}
	var why string
	switch {
	case !m.offers(qualified, toolsearch.Query{}):
		why = "it is not a tool " + m.names[0] + " offers"
	case !m.offers(qualified, toolsearch.Query{Servers: d.Servers}):
		why = "only the tools of server " + strings.Join(d.Servers, ", server ") + " may be called here"
	case !m.offers(qualified, toolsearch.Query{Servers: d.Servers, Require: d.Require}):
		why = "only tools that promise to be " + hintWords(d.Require) + " may be called here"
	default:
		why = "the host excluded it"
	}
	return fmt.Errorf("%w: %s is not allowed: %s", ErrNotAllowed, qualified, why)
}

// offers reports whether a search under q's filters finds the tool
// qualified by its exact name.
func (m *MetaTools) offers(qualified string, q toolsearch.Query) bool {
	q.Text, q.Mode, q.K = qualified, toolsearch.ModeExact, -1
	hits, err := m.search.Search(q)
	if err != nil {
		return false
	}
	for _, h := range hits {
		if h.Qualified == qualified {
			return true
		}
	}
	return false
}

// refusal is the model's text for an error of Allowed.
func (m *MetaTools) refusal(err error) string {
	return strings.TrimPrefix(err.Error(), ErrNotAllowed.Error()+": ") +
		"; do not try it again. Use " + m.names[0] + " to find a tool that is allowed."
}

// hintWords names the promises of h, in words.
func hintWords(h toolsearch.Hint) string {
	var w []string
	for _, x := range []struct {
		h    toolsearch.Hint
		word string
	}{{toolsearch.HintReadOnly, "read-only"}, {toolsearch.HintNonDestructive, "non-destructive"},
		{toolsearch.HintIdempotent, "idempotent"}, {toolsearch.HintClosedWorld, "closed-world"}} {
		if h&x.h != 0 {
			w = append(w, x.word)
		}
	}
	return strings.Join(w, ", ")
}
