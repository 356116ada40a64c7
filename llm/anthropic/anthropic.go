// Package anthropic connects a fleet of MCP servers to Claude through the
// official Go SDK (github.com/anthropics/anthropic-sdk-go/v2): it turns
// the fleet's tools into the Messages API's tool params, runs the tool_use
// blocks of a response through the fleet (concurrently), and turns the
// results into tool_result blocks, images and structured content
// included, errors explained in words the model can act on.
//
// The API of this package may still change before v1, and its module is
// not in the record of the core's API (api/*.txt): New and the loop of
// Tools (or DeferredTools, MetaTools), Respond and Converse are meant to
// stay; the signatures follow the SDK's types, which change between its
// versions.
//
// Three ways to offer tools:
//
//   - Tools: every tool (or a budgeted toolsearch.Selection), in
//     qualified-name order, so the same catalog gives the same bytes and
//     the prompt cache keeps hitting.
//   - DeferredTools: every tool with defer_loading, plus Anthropic's own
//     tool search tool (BM25 or regex, run by the API), which loads the
//     few the model needs.
//   - MetaTools: the tools with defer_loading, plus the fleet's own
//     search_tools (toolsearch BM25, run here): Respond answers it with
//     tool_reference blocks, which load the found tools, and call_tool is
//     not needed.
//
// input_schema goes as the server wrote it: the API takes JSON Schema.
// Only a schema that is not an object is reported (it is sent as an
// object with no properties).
package anthropic

import (
	"context"
	"encoding/base64"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// SearchKind picks the tool search tool DeferredTools adds.
type SearchKind int

const (
	// SearchBM25 is Anthropic's tool_search_tool_bm25_20251119.
	SearchBM25 SearchKind = iota
	// SearchRegex is Anthropic's tool_search_tool_regex_20251119.
	SearchRegex
)

// Adapter runs a model's tool calls through a fleet.
type Adapter struct {
	fleet llm.Fleet
	run   llm.RunOptions // run.Meta: the meta-tools, if any
}

// New returns an Adapter over f. With llm.WithMetaTools, Respond answers
// the meta-tools' calls: search_tools with tool_reference blocks (see
// MetaTools), call_tool by calling.
func New(f llm.Fleet, opts ...llm.AdapterOption) *Adapter {
	a := &Adapter{fleet: f}
	for _, o := range opts {
		o(&a.run)
	}
	return a
}

// Tools returns the tool params of tools, in their order (a View's tools
// and a Selection's come sorted by qualified name), and a report for each
// tool whose schema needed a change.
func Tools(tools []snapshot.Tool) ([]sdk.ToolUnionParam, []llm.Report) {
	out := make([]sdk.ToolUnionParam, 0, len(tools))
	var reports []llm.Report
	for _, t := range tools {
		def := t.Definition()
		p, r := toolParam(schemaTool{name: t.Qualified(), desc: def.Description, schema: toolsearch.InputSchema(def)})
		out = append(out, sdk.ToolUnionParam{OfTool: &p})
		if !r.OK() {
			reports = append(reports, r)
		}
	}
	return out, reports
}

// ViewTools returns the tool params of every tool in v.
func ViewTools(v *snapshot.View) ([]sdk.ToolUnionParam, []llm.Report) {
	return Tools(viewTools(v))
}

func viewTools(v *snapshot.View) []snapshot.Tool {
	tools := make([]snapshot.Tool, 0, v.NumTools())
	for i := range v.NumTools() {
		tools = append(tools, v.ToolAt(i))
	}
	return tools
}

// DeferredTools returns every tool of v with defer_loading set, after
// Anthropic's tool search tool of the given kind: the model sees only the
// search tool until it finds what it needs.
func DeferredTools(v *snapshot.View, kind SearchKind) ([]sdk.ToolUnionParam, []llm.Report) {
	tools, reports := Tools(viewTools(v))
	for _, t := range tools {
		t.OfTool.DeferLoading = param.NewOpt(true)
	}
	var search sdk.ToolUnionParam
	if kind == SearchRegex {
		search.OfToolSearchToolRegex20251119 = &sdk.ToolSearchToolRegex20251119Param{Type: sdk.ToolSearchToolRegex20251119TypeToolSearchToolRegex20251119}
	} else {
		search.OfToolSearchToolBm25_20251119 = &sdk.ToolSearchToolBm25_20251119Param{Type: sdk.ToolSearchToolBm25_20251119TypeToolSearchToolBm25_20251119}
	}
	return append([]sdk.ToolUnionParam{search}, tools...), reports
}

// MetaTools returns the meta search tool, then every tool of v with
// defer_loading set: the fleet's own search stands in for Anthropic's,
// and Respond answers it with tool_reference blocks that load the found
// tools. Give the Adapter the same MetaTools (llm.WithMetaTools).
func MetaTools(v *snapshot.View, m *llm.MetaTools) ([]sdk.ToolUnionParam, []llm.Report) {
	tools, reports := Tools(viewTools(v))
	for _, t := range tools {
		t.OfTool.DeferLoading = param.NewOpt(true)
	}
	search := m.SearchTool()
	p, _ := toolParam(schemaTool{name: search.Name, desc: search.Description, schema: toolsearch.InputSchema(search)})
	return append([]sdk.ToolUnionParam{{OfTool: &p}}, tools...), reports
}

// schemaTool is what toolParam needs of a tool.
type schemaTool struct {
	name, desc string
	schema     map[string]any
}

// toolParam is the tool param of one tool: its schema as written, in the
// SDK's shape (properties and required apart, the rest as extra fields).
func toolParam(st schemaTool) (sdk.ToolParam, llm.Report) {
	r := llm.Report{Tool: st.name}
	schema := llm.ObjectSchema(st.schema)
	if schema["type"] != "object" {
		r.Reasons = append(r.Reasons, "the input schema is not an object; sent as an object with no properties")
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	in := sdk.ToolInputSchemaParam{Properties: schema["properties"]}
	if req, ok := schema["required"].([]any); ok {
		for _, x := range req {
			if s, ok := x.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	p := sdk.ToolParam{Name: st.name, InputSchema: in}
	if st.desc != "" {
		p.Description = param.NewOpt(st.desc)
	}
	return p, r
}

// ToolCalls returns the tool_use blocks of msg as calls, in order.
func ToolCalls(msg *sdk.Message) []llm.ToolCall {
	var calls []llm.ToolCall
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			calls = append(calls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
		}
	}
	return calls
}

// Respond runs every tool_use block of msg through the fleet, concurrently,
// and returns the user message of their tool_result blocks, in the same
// order; ok is false when msg asked for no tool.
func (a *Adapter) Respond(ctx context.Context, msg *sdk.Message) (reply sdk.MessageParam, ok bool) {
	calls := ToolCalls(msg)
	if len(calls) == 0 {
		return sdk.MessageParam{}, false
	}
	var refs map[string][]toolsearch.Hit
	if a.run.Meta != nil {
		search, _ := a.run.Meta.Names()
		refs = map[string][]toolsearch.Hit{}
		var rest []llm.ToolCall
		for _, c := range calls {
			if c.Name != search {
				rest = append(rest, c)
				continue
			}
			args, _ := llm.Arguments(c.Arguments)
			if hits, err := a.run.Meta.Find(args); err == nil {
				refs[c.ID] = hits
			} else {
				rest = append(rest, c) // the handler explains the error
			}
		}
		calls = rest
	}
	outcomes := llm.Run(ctx, a.fleet, calls, a.run)
	byID := map[string]llm.Outcome{}
	for _, o := range outcomes {
		byID[o.Call.ID] = o
	}
	var blocks []sdk.ContentBlockParamUnion
	for _, c := range ToolCalls(msg) {
		if hits, ok := refs[c.ID]; ok {
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: references(c.ID, hits)})
			continue
		}
		blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: ToolResult(byID[c.ID])})
	}
	return sdk.NewUserMessage(blocks...), true
}

// references answers a tool search with tool_reference blocks, which load
// the found (deferred) tools for the model.
func references(id string, hits []toolsearch.Hit) *sdk.ToolResultBlockParam {
	r := &sdk.ToolResultBlockParam{ToolUseID: id}
	for _, h := range hits {
		r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfToolReference: &sdk.ToolReferenceBlockParam{ToolName: h.Qualified}})
	}
	if len(hits) == 0 {
		r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: "No tool matches; try other words."}})
	}
	return r
}

// ToolResult is the tool_result block of one outcome: text parts as text
// blocks, images the API takes (JPEG, PNG, GIF, WebP) as image blocks,
// structured content as JSON text, anything else described in words; and
// is_error when the tool said so or the call failed.
func ToolResult(o llm.Outcome) *sdk.ToolResultBlockParam {
	r := &sdk.ToolResultBlockParam{ToolUseID: o.Call.ID}
	if o.Result != nil && o.Result.IsError {
		r.IsError = param.NewOpt(true)
	}
	for _, p := range llm.Parts(o.Result) {
		var c sdk.ToolResultBlockParamContentUnion
		if media, ok := imageTypes[p.MIMEType]; ok && p.Kind == llm.PartImage {
			c.OfImage = &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{
				Data: base64.StdEncoding.EncodeToString(p.Data), MediaType: media}}}
		} else {
			c.OfText = &sdk.TextBlockParam{Text: llm.Describe(p)}
		}
		r.Content = append(r.Content, c)
	}
	if len(r.Content) == 0 {
		r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: "(no output)"}})
	}
	return r
}

var imageTypes = map[string]sdk.Base64ImageSourceMediaType{
	"image/jpeg": sdk.Base64ImageSourceMediaTypeImageJPEG, "image/png": sdk.Base64ImageSourceMediaTypeImagePNG,
	"image/gif": sdk.Base64ImageSourceMediaTypeImageGIF, "image/webp": sdk.Base64ImageSourceMediaTypeImageWebP,
}

// DefaultMaxTurns bounds Converse when it is given no limit.
const DefaultMaxTurns = 10

// Converse sends params to the Messages API, runs the tool calls of each
// response through the fleet and sends the results back, until a
// response asks for no tool or maxTurns responses came (DefaultMaxTurns
// if zero). It returns the last response and the messages of the whole
// conversation, the last response included.
func (a *Adapter) Converse(ctx context.Context, c *sdk.Client, params sdk.MessageNewParams, maxTurns int) (*sdk.Message, []sdk.MessageParam, error) {
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	for turn := 0; ; turn++ {
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			return nil, params.Messages, err
		}
		params.Messages = append(params.Messages, msg.ToParam())
		reply, ok := a.Respond(ctx, msg)
		if !ok || turn+1 == maxTurns {
			return msg, params.Messages, nil
		}
		params.Messages = append(params.Messages, reply)
	}
}
