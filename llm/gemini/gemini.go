// Package gemini connects a fleet of MCP servers to Gemini through the
// official Go SDK (google.golang.org/genai): the fleet's tools become
// function declarations, the model's function calls run through the
// fleet (concurrently), and the results go back as function responses,
// images as inline data.
//
// The API of this package may still change before v1, and its module is
// not in the record of the core's API (api/*.txt): New and the loop of
// Tools (or MetaTools), Respond and Converse, and Embedder are meant to
// stay; the signatures follow the SDK's types, which change between its
// versions.
//
// Function declarations take an OpenAPI 3.0 subset (genai.Schema), so each
// input schema is converted (llm.OpenAPISchema): $refs inlined, type lists
// as nullable or anyOf, const as an enum, keywords the subset lacks
// dropped; the report lists them per tool. WithJSONSchema sends the schema
// as written instead (parametersJsonSchema), for the models that take it.
//
// Gemini has no deferred loading or tool search of its own; for a large
// fleet, give the model the meta-tools (llm.MetaTools) or a budgeted
// selection (toolsearch.Index.Select).
package gemini

import (
	"context"
	"encoding/json"
	"strings"

	"google.golang.org/genai"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/snapshot"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

// Adapter runs a model's function calls through a fleet.
type Adapter struct {
	fleet llm.Fleet
	run   llm.RunOptions
}

// New returns an Adapter over f. With llm.WithMetaTools, the Adapter
// answers the meta-tools' function calls.
func New(f llm.Fleet, opts ...llm.AdapterOption) *Adapter {
	a := &Adapter{fleet: f}
	for _, o := range opts {
		o(&a.run)
	}
	return a
}

// DeclOption configures how Tools declares functions.
type DeclOption func(*declOptions)

type declOptions struct{ jsonSchema bool }

// WithJSONSchema declares each function's parameters as the server's JSON
// Schema (parametersJsonSchema), unconverted.
func WithJSONSchema() DeclOption { return func(o *declOptions) { o.jsonSchema = true } }

// ViewTools returns every tool of v, in qualified-name order.
func ViewTools(v *snapshot.View) []snapshot.Tool {
	tools := make([]snapshot.Tool, 0, v.NumTools())
	for i := range v.NumTools() {
		tools = append(tools, v.ToolAt(i))
	}
	return tools
}

// Tools returns one genai.Tool declaring tools as functions, in their
// order, and the report of each tool whose schema lost or changed
// something.
func Tools(tools []snapshot.Tool, opts ...DeclOption) (*genai.Tool, []llm.Report) {
	var o declOptions
	for _, f := range opts {
		f(&o)
	}
	out := &genai.Tool{}
	var reports []llm.Report
	for _, t := range tools {
		d, r := declare(t.Qualified(), t.Definition(), o)
		out.FunctionDeclarations = append(out.FunctionDeclarations, d)
		if !r.OK() {
			reports = append(reports, r)
		}
	}
	return out, reports
}

// MetaTools declares the meta-tools.
func MetaTools(m *llm.MetaTools) *genai.Tool {
	out := &genai.Tool{}
	for _, t := range m.Tools() {
		d, _ := declare(t.Name, t, declOptions{})
		out.FunctionDeclarations = append(out.FunctionDeclarations, d)
	}
	return out
}

func declare(name string, def mcp.Tool, o declOptions) (*genai.FunctionDeclaration, llm.Report) {
	d := &genai.FunctionDeclaration{Name: name, Description: def.Description}
	r := llm.Report{Tool: name}
	if name == "" || !(name[0] == '_' || 'a' <= name[0]|32 && name[0]|32 <= 'z') {
		r.Reasons = append(r.Reasons, "a Gemini function name must start with a letter or '_'")
	}
	schema := toolsearch.InputSchema(def)
	if o.jsonSchema {
		d.ParametersJsonSchema = llm.ObjectSchema(schema)
		return d, r
	}
	conv, c := llm.OpenAPISchema(schema)
	r.Conversion = c
	if props, _ := conv["properties"].(map[string]any); len(props) > 0 {
		// Gemini refuses an object parameter schema with no properties: a
		// function without parameters declares none.
		d.Parameters = toSchema(conv)
	}
	return d, r
}

var types = map[string]genai.Type{
	"string": genai.TypeString, "number": genai.TypeNumber, "integer": genai.TypeInteger,
	"boolean": genai.TypeBoolean, "array": genai.TypeArray, "object": genai.TypeObject, "null": genai.TypeNULL,
}

// toSchema builds a genai.Schema from the OpenAPI subset OpenAPISchema
// returns: its keys are genai.Schema's JSON names, and the types go upper
// case.
func toSchema(m map[string]any) *genai.Schema {
	b, err := json.Marshal(m)
	if err != nil {
		return &genai.Schema{Type: genai.TypeObject}
	}
	var s genai.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		// A bound of the wrong kind (a fractional minLength): keep the
		// structure and let the server check the rest.
		return &genai.Schema{Type: genai.TypeObject, Description: s.Description}
	}
	fixTypes(&s)
	return &s
}

func fixTypes(s *genai.Schema) {
	if s == nil {
		return
	}
	if t, ok := types[strings.ToLower(string(s.Type))]; ok {
		s.Type = t
	}
	for _, p := range s.Properties {
		fixTypes(p)
	}
	fixTypes(s.Items)
	for _, a := range s.AnyOf {
		fixTypes(a)
	}
}

// FunctionCalls returns the function calls of r's first candidate.
func FunctionCalls(r *genai.GenerateContentResponse) []llm.ToolCall {
	var calls []llm.ToolCall
	for _, fc := range r.FunctionCalls() {
		args, _ := json.Marshal(fc.Args)
		calls = append(calls, llm.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: args})
	}
	return calls
}

// Respond runs r's function calls through the fleet, concurrently, and
// returns the user content of their function responses, in order; ok is
// false when r asked for no function.
//
// A response is {"output": text} (text parts joined, binary ones
// described), with "structuredContent" when the tool gave some, or
// {"error": text} when the tool failed or the call did (explained); its
// images go along as inline data.
func (a *Adapter) Respond(ctx context.Context, r *genai.GenerateContentResponse) (*genai.Content, bool) {
	calls := FunctionCalls(r)
	if len(calls) == 0 {
		return nil, false
	}
	var parts []*genai.Part
	for _, o := range llm.Run(ctx, a.fleet, calls, a.run) {
		all := llm.Parts(o.Result)
		var text []llm.Part
		var media []*genai.FunctionResponsePart
		for _, p := range all {
			switch {
			case p.Structured:
			case p.Kind == llm.PartImage:
				media = append(media, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: p.MIMEType, Data: p.Data}})
				text = append(text, p)
			default:
				text = append(text, p)
			}
		}
		resp := map[string]any{}
		key := "output"
		if o.Result.IsError {
			key = "error"
		}
		resp[key] = llm.Text(text)
		if o.Result.StructuredContent != nil && !o.Result.IsError {
			resp["structuredContent"] = o.Result.StructuredContent
		}
		part := genai.NewPartFromFunctionResponseWithParts(o.Call.Name, resp, media)
		part.FunctionResponse.ID = o.Call.ID
		parts = append(parts, part)
	}
	return genai.NewContentFromParts(parts, genai.RoleUser), true
}

// DefaultMaxTurns bounds Converse when it is given no limit.
const DefaultMaxTurns = 10

// Converse sends contents to model, runs the function calls of each
// response through the fleet and sends the results back, until a response
// asks for no function or maxTurns responses came. It returns the last
// response and the whole conversation.
func (a *Adapter) Converse(ctx context.Context, c *genai.Client, model string, contents []*genai.Content, config *genai.GenerateContentConfig, maxTurns int) (*genai.GenerateContentResponse, []*genai.Content, error) {
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	for turn := 0; ; turn++ {
		r, err := c.Models.GenerateContent(ctx, model, contents, config)
		if err != nil {
			return nil, contents, err
		}
		if len(r.Candidates) > 0 && r.Candidates[0].Content != nil {
			contents = append(contents, r.Candidates[0].Content)
		}
		reply, ok := a.Respond(ctx, r)
		if !ok || turn+1 == maxTurns {
			return r, contents, nil
		}
		contents = append(contents, reply)
	}
}
