// Package openai connects a fleet of MCP servers to OpenAI's models
// through the official Go SDK (github.com/openai/openai-go/v3), on both of
// its APIs: Chat Completions and Responses.
//
// The API of this package may still change before v1, and its module is
// not in the record of the core's API (api/*.txt): New and the loops of
// both APIs (ChatTools, ChatRespond, ConverseChat; ResponsesTools,
// ResponsesRespond, ConverseResponses) and Embedder are meant to stay; the
// signatures follow the SDK's types, which change between its versions.
//
// Tool definitions are converted for strict mode (llm.StrictSchema): all
// properties required, optional ones nullable, additionalProperties false,
// unsupported keywords dropped and reported. A schema strict mode cannot
// express goes out non-strict, as the server wrote it, with the reason in
// the report: no tool is left out. Before a call reaches the server, the
// nulls a strict model sends for optional properties are removed.
//
// The Responses API can also defer tools: ResponsesDeferredTools groups
// them in one namespace per server, each function with defer_loading, and
// adds OpenAI's hosted tool_search; ResponsesClientSearch offers a
// client-executed tool_search that the fleet's own index answers (Respond
// returns the found tools in a tool_search_output item). Chat Completions
// has neither in this SDK version (no defer_loading, no tool_search on its
// tool params), so there the meta-tools (llm.MetaTools) are the way to
// keep a large fleet out of the prompt.
//
// Tool results: Responses takes text and images in a function_call_output;
// a Chat Completions tool message takes text only, so images are
// described there and sent after the tool messages in one user message.
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// Adapter runs a model's tool calls through a fleet.
type Adapter struct {
	fleet llm.Fleet
	run   llm.RunOptions // run.Meta: the meta-tools, if any
}

// New returns an Adapter over f. With llm.WithMetaTools, the Adapter
// answers the meta-tools: their function calls, and the client-executed
// tool_search of ResponsesClientSearch.
func New(f llm.Fleet, opts ...llm.AdapterOption) *Adapter {
	a := &Adapter{fleet: f}
	for _, o := range opts {
		o(&a.run)
	}
	return a
}

// function is one tool converted for OpenAI.
type function struct {
	name, desc string
	params     map[string]any
	strict     bool
}

func convert(name, desc string, schema map[string]any) (function, llm.Report) {
	params, conv := llm.StrictSchema(schema)
	return function{name: name, desc: desc, params: params, strict: conv.Strict}, llm.Report{Tool: name, Conversion: conv}
}

func convertTools(tools []snapshot.Tool) ([]function, []llm.Report) {
	out := make([]function, 0, len(tools))
	var reports []llm.Report
	for _, t := range tools {
		def := t.Definition()
		f, r := convert(t.Qualified(), def.Description, toolsearch.InputSchema(def))
		out = append(out, f)
		if !r.OK() {
			reports = append(reports, r)
		}
	}
	return out, reports
}

func metaFunctions(m *llm.MetaTools) []function {
	var out []function
	for _, t := range m.Tools() {
		f, _ := convert(t.Name, t.Description, toolsearch.InputSchema(t))
		out = append(out, f)
	}
	return out
}

// ViewTools returns every tool of v, in qualified-name order.
func ViewTools(v *snapshot.View) []snapshot.Tool {
	tools := make([]snapshot.Tool, 0, v.NumTools())
	for i := range v.NumTools() {
		tools = append(tools, v.ToolAt(i))
	}
	return tools
}

// ChatTools returns the Chat Completions tool params of tools, in their
// order, and the conversion report of each tool whose schema changed or
// went non-strict.
func ChatTools(tools []snapshot.Tool) ([]sdk.ChatCompletionToolUnionParam, []llm.Report) {
	fs, reports := convertTools(tools)
	return chatTools(fs), reports
}

// ChatMetaTools returns the meta-tools as Chat Completions tool params.
func ChatMetaTools(m *llm.MetaTools) []sdk.ChatCompletionToolUnionParam {
	return chatTools(metaFunctions(m))
}

func chatTools(fs []function) []sdk.ChatCompletionToolUnionParam {
	out := make([]sdk.ChatCompletionToolUnionParam, len(fs))
	for i, f := range fs {
		def := shared.FunctionDefinitionParam{Name: f.name, Parameters: f.params, Strict: param.NewOpt(f.strict)}
		if f.desc != "" {
			def.Description = param.NewOpt(f.desc)
		}
		out[i] = sdk.ChatCompletionFunctionTool(def)
	}
	return out
}

// ResponsesTools returns the Responses function tools of tools, in their
// order, with the conversion reports.
func ResponsesTools(tools []snapshot.Tool) ([]responses.ToolUnionParam, []llm.Report) {
	fs, reports := convertTools(tools)
	out := make([]responses.ToolUnionParam, len(fs))
	for i, f := range fs {
		out[i] = responses.ToolUnionParam{OfFunction: functionParam(f)}
	}
	return out, reports
}

func functionParam(f function) *responses.FunctionToolParam {
	p := &responses.FunctionToolParam{Name: f.name, Parameters: f.params, Strict: param.NewOpt(f.strict)}
	if f.desc != "" {
		p.Description = param.NewOpt(f.desc)
	}
	return p
}

// ResponsesDeferredTools returns OpenAI's hosted tool_search and every
// tool of v deferred (defer_loading), grouped in one namespace per server
// (named after the server, described by its instructions or name). The
// model calls a tool by its own name within the namespace; Respond maps it
// back to the qualified name.
func ResponsesDeferredTools(v *snapshot.View) ([]responses.ToolUnionParam, []llm.Report) {
	out := []responses.ToolUnionParam{{OfToolSearch: &responses.ToolSearchToolParam{Execution: responses.ToolSearchToolExecutionServer}}}
	var reports []llm.Report
	byServer := map[string][]responses.NamespaceToolToolUnionParam{}
	for _, t := range ViewTools(v) {
		def := t.Definition()
		f, r := convert(t.Qualified(), def.Description, toolsearch.InputSchema(def))
		if !r.OK() {
			reports = append(reports, r)
		}
		fn := &responses.NamespaceToolToolFunctionParam{Name: t.Name(), Parameters: f.params,
			Strict: param.NewOpt(f.strict), DeferLoading: param.NewOpt(true)}
		if f.desc != "" {
			fn.Description = param.NewOpt(f.desc)
		}
		byServer[t.Server()] = append(byServer[t.Server()], responses.NamespaceToolToolUnionParam{OfFunction: fn})
	}
	for c := range v.Catalogs() {
		if tools := byServer[c.Server()]; len(tools) > 0 {
			out = append(out, responses.ToolUnionParam{OfNamespace: &responses.NamespaceToolParam{
				Name: c.Server(), Description: namespaceDescription(c), Tools: tools}})
		}
	}
	return out, reports
}

func namespaceDescription(c snapshot.Catalog) string {
	if s := c.Instructions(); s != "" {
		return s
	}
	if info := c.ServerInfo(); info.Name != "" {
		return "Tools of the MCP server " + info.Name
	}
	return "Tools of the MCP server " + c.Server()
}

// ResponsesClientSearch returns a client-executed tool_search whose
// description and parameters are the meta search tool's, and the meta
// call tool is not needed: Respond answers each tool_search_call with a
// tool_search_output of the tools the fleet's index found, which the
// model then calls by name. Give the Adapter the same MetaTools.
func ResponsesClientSearch(m *llm.MetaTools) []responses.ToolUnionParam {
	s := m.SearchTool()
	return []responses.ToolUnionParam{{OfToolSearch: &responses.ToolSearchToolParam{
		Execution: responses.ToolSearchToolExecutionClient, Description: param.NewOpt(s.Description),
		Parameters: toolsearch.InputSchema(s),
	}}}
}

// prepare drops the nulls a strict model sends for the optional
// properties of the tool it calls.
func (a *Adapter) prepare(calls []llm.ToolCall) {
	v := a.fleet.View()
	for i, c := range calls {
		t, ok := v.Tool(c.Name)
		if !ok {
			continue
		}
		args, err := llm.Arguments(c.Arguments)
		if err != nil {
			continue
		}
		llm.DropOptionalNulls(toolsearch.InputSchema(t.Definition()), args)
		if b, err := json.Marshal(args); err == nil {
			calls[i].Arguments = b
		}
	}
}

// ChatToolCalls returns the tool calls of a completion's first choice.
func ChatToolCalls(c *sdk.ChatCompletion) []llm.ToolCall {
	if len(c.Choices) == 0 {
		return nil
	}
	var calls []llm.ToolCall
	for _, tc := range c.Choices[0].Message.ToolCalls {
		calls = append(calls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return calls
}

// ChatRespond runs the tool calls of c's first choice through the fleet,
// concurrently, and returns the messages to append: one tool message per
// call, in order, then, if any result held images, one user message with
// them (a tool message takes text only). ok is false when c asked for no
// tool.
func (a *Adapter) ChatRespond(ctx context.Context, c *sdk.ChatCompletion) (msgs []sdk.ChatCompletionMessageParamUnion, ok bool) {
	calls := ChatToolCalls(c)
	if len(calls) == 0 {
		return nil, false
	}
	a.prepare(calls)
	var images []sdk.ChatCompletionContentPartUnionParam
	for _, o := range llm.Run(ctx, a.fleet, calls, a.run) {
		parts := llm.Parts(o.Result)
		text := llm.Text(parts)
		if o.Result.IsError {
			text = "Error: " + text
		}
		msgs = append(msgs, sdk.ToolMessage(text, o.Call.ID))
		for _, p := range parts {
			if p.Kind == llm.PartImage {
				images = append(images, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(p)}))
			}
		}
	}
	if len(images) > 0 {
		intro := sdk.TextContentPart("The images the tool calls above returned, in order.")
		msgs = append(msgs, sdk.UserMessage(append([]sdk.ChatCompletionContentPartUnionParam{intro}, images...)))
	}
	return msgs, true
}

func dataURL(p llm.Part) string {
	return "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

// ResponsesToolCalls returns the function calls among r's output items.
// A call inside a namespace is named by its qualified name if v has the
// namespace's server.
func ResponsesToolCalls(v *snapshot.View, r *responses.Response) []llm.ToolCall {
	var calls []llm.ToolCall
	for _, item := range r.Output {
		if item.Type != "function_call" {
			continue
		}
		fc := item.AsFunctionCall()
		calls = append(calls, llm.ToolCall{ID: fc.CallID, Name: qualify(v, fc.Namespace, fc.Name), Arguments: json.RawMessage(fc.Arguments)})
	}
	return calls
}

// qualify maps a namespaced call (server, own tool name) to the tool's
// qualified name.
func qualify(v *snapshot.View, namespace, name string) string {
	if namespace == "" {
		return name
	}
	if _, ok := v.Catalog(namespace); !ok {
		return namespace + "." + name
	}
	for i := range v.NumTools() {
		if t := v.ToolAt(i); t.Server() == namespace && t.Name() == name {
			return t.Qualified()
		}
	}
	return namespace + "." + name
}

// ResponsesRespond runs r's function calls through the fleet,
// concurrently, and answers its client-executed tool searches; it returns
// the input items of the next request, in the order of r's output
// (function_call_output with text and images, tool_search_output with the
// found tools). ok is false when r asked for nothing.
func (a *Adapter) ResponsesRespond(ctx context.Context, r *responses.Response) (items []responses.ResponseInputItemUnionParam, ok bool) {
	v := a.fleet.View()
	calls := ResponsesToolCalls(v, r)
	a.prepare(calls)
	byID := map[string]llm.Outcome{}
	for _, o := range llm.Run(ctx, a.fleet, calls, a.run) {
		byID[o.Call.ID] = o
	}
	for _, item := range r.Output {
		switch item.Type {
		case "function_call":
			fc := item.AsFunctionCall()
			items = append(items, functionOutput(byID[fc.CallID]))
		case "tool_search_call":
			sc := item.AsToolSearchCall()
			if sc.Execution != "client" {
				continue
			}
			items = append(items, a.searchOutput(sc))
		}
	}
	return items, len(items) > 0
}

func functionOutput(o llm.Outcome) responses.ResponseInputItemUnionParam {
	var list responses.ResponseFunctionCallOutputItemListParam
	prefix := ""
	if o.Result.IsError {
		prefix = "Error: "
	}
	for i, p := range llm.Parts(o.Result) {
		if p.Kind == llm.PartImage {
			list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: param.NewOpt(dataURL(p))}})
			continue
		}
		text := llm.Describe(p)
		if i == 0 {
			text = prefix + text
		}
		list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: text}})
	}
	if len(list) == 0 {
		list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: prefix + "(no output)"}})
	}
	return responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
		CallID: param.NewOpt(o.Call.ID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: list},
	}}
}

// searchOutput answers a client tool search with the tools the fleet's
// index finds, as function tools the model can call next.
func (a *Adapter) searchOutput(sc responses.ResponseToolSearchCall) responses.ResponseInputItemUnionParam {
	out := &responses.ResponseToolSearchOutputItemParam{CallID: param.NewOpt(sc.CallID), Execution: responses.ResponseToolSearchOutputItemParamExecutionClient}
	out.Tools = []responses.ResponseToolSearchOutputItemParamToolUnion{}
	if a.run.Meta != nil {
		args, _ := sc.Arguments.(map[string]any)
		if hits, err := a.run.Meta.Find(args); err == nil {
			tools := make([]snapshot.Tool, len(hits))
			for i, h := range hits {
				tools[i] = h.Tool
			}
			fs, _ := convertTools(tools)
			for _, f := range fs {
				out.Tools = append(out.Tools, responses.ResponseToolSearchOutputItemParamToolUnion{OfFunction: functionParam(f)})
			}
		}
	}
	return responses.ResponseInputItemUnionParam{OfToolSearchOutput: out}
}

// DefaultMaxTurns bounds the conversations when given no limit.
const DefaultMaxTurns = 10

// ConverseChat sends params to Chat Completions, answers the tool calls of
// each completion through the fleet and sends the results back, until a
// completion asks for no tool or maxTurns completions came. It returns
// the last completion and the whole conversation.
func (a *Adapter) ConverseChat(ctx context.Context, c *sdk.Client, params sdk.ChatCompletionNewParams, maxTurns int) (*sdk.ChatCompletion, []sdk.ChatCompletionMessageParamUnion, error) {
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	for turn := 0; ; turn++ {
		comp, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			return nil, params.Messages, err
		}
		if len(comp.Choices) == 0 {
			return comp, params.Messages, fmt.Errorf("mcpfleet: openai: a completion with no choice")
		}
		params.Messages = append(params.Messages, comp.Choices[0].Message.ToParam())
		msgs, ok := a.ChatRespond(ctx, comp)
		if !ok || turn+1 == maxTurns {
			return comp, params.Messages, nil
		}
		params.Messages = append(params.Messages, msgs...)
	}
}

// ConverseResponses sends params to the Responses API, answers the tool
// calls and client tool searches of each response through the fleet and
// sends the results back (chained by previous_response_id), until a
// response asks for nothing or maxTurns responses came. It returns the
// last response.
func (a *Adapter) ConverseResponses(ctx context.Context, c *sdk.Client, params responses.ResponseNewParams, maxTurns int) (*responses.Response, error) {
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	for turn := 0; ; turn++ {
		r, err := c.Responses.New(ctx, params)
		if err != nil {
			return nil, err
		}
		items, ok := a.ResponsesRespond(ctx, r)
		if !ok || turn+1 == maxTurns {
			return r, nil
		}
		params.PreviousResponseID = param.NewOpt(r.ID)
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	}
}
