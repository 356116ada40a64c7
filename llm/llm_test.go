package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/testkit/llmtest"
	"github.com/mcpfleet/mcpfleet/internal/testkit/toolcorpus"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/toolsearch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExplain(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	srv := func(err error) error {
		return &client.ServerError{Server: "github", Op: "call tool create_issue", Err: err}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{srv(&client.UnavailableError{Server: "github", State: lifecycle.Reconnecting, NextRetry: now.Add(2500 * time.Millisecond)}),
			"server github is reconnecting and did not come back in time; it reconnects in about 3 s; retry then."},
		{srv(&client.UnavailableError{Server: "github", State: lifecycle.Connecting}), "server github is connecting and did not come back in time; retry in a few seconds."},
		{srv(fmt.Errorf("%w: stream lost", client.ErrOutcomeUnknown)), "may or may not have taken effect. Check its effect"},
		{fmt.Errorf("mcpfleet: %w: %q", client.ErrToolNotFound, "github__nope"), "there is no tool github__create_issue"},
		{srv(client.ErrNeedsAuthorization), "server github needs the user to authorize access"},
		{srv(client.ErrPermanentlyFailed), "server github has failed and is not reconnecting. Do not retry"},
		{srv(client.ErrDisabled), "server github is turned off"},
		{srv(client.ErrMessageTooLarge), "too large"},
		{context.DeadlineExceeded, "timed out"},
		{errors.New("boom"), "the call to github__create_issue failed. (boom)"},
	} {
		got := llm.Explain("github__create_issue", tc.err, now)
		if !strings.Contains(got, tc.want) || !strings.Contains(got, tc.err.Error()) {
			t.Errorf("Explain(%v) = %q, want it to contain %q and the error", tc.err, got, tc.want)
		}
	}
	if llm.Explain("x", nil, now) != "" {
		t.Error("Explain(nil) is not empty")
	}
}

// One turn's calls run at once (get_forecast and get_photo answer only
// when both are in flight), come back in the calls' order, and every
// failure becomes an isError result the model can read.
func TestRunAgainstAFleet(t *testing.T) {
	m := llmtest.Fleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := []llm.ToolCall{
		{ID: "1", Name: "weather__get_forecast", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
		{ID: "2", Name: "photos__get_photo", Arguments: json.RawMessage(`{"id":"p1"}`)},
		{ID: "3", Name: "photos__flaky"},
		{ID: "4", Name: "off__ping", Arguments: json.RawMessage(`{}`)},
		{ID: "5", Name: "nowhere__nothing", Arguments: json.RawMessage(`{}`)},
		{ID: "6", Name: "weather__get_forecast", Arguments: json.RawMessage(`[1,2]`)},
	}
	out := llm.Run(ctx, m, calls, llm.RunOptions{})
	for i, o := range out {
		if o.Call.ID != calls[i].ID || o.Result == nil {
			t.Fatalf("outcome %d: %+v", i, o)
		}
	}
	parts := llm.Parts(out[0].Result)
	if out[0].Err != nil || out[0].Result.IsError || len(parts) != 2 || parts[0].Text != "Sunny in Oslo, 21 °C" || !parts[1].Structured {
		t.Fatalf("forecast: %+v %v", parts, out[0].Err)
	}
	parts = llm.Parts(out[1].Result)
	if out[1].Result.IsError || len(parts) != 2 || parts[1].Kind != llm.PartImage || string(parts[1].Data) != string(llmtest.PNG) {
		t.Fatalf("photo: %+v", out[1].Result)
	}
	if !out[2].Result.IsError || out[2].Err != nil || llm.Text(llm.Parts(out[2].Result)) != "quota exceeded" {
		t.Fatalf("flaky: %+v", out[2])
	}
	// A disabled server's tools leave the View, but a call by the name the
	// model knew says the server is off, not that the tool is unknown.
	if !errors.Is(out[3].Err, client.ErrDisabled) || !out[3].Result.IsError || !strings.Contains(llm.Text(llm.Parts(out[3].Result)), "server off is turned off") {
		t.Fatalf("disabled: %v %+v", out[3].Err, out[3].Result)
	}
	if !errors.Is(out[4].Err, client.ErrToolNotFound) || !strings.Contains(llm.Text(llm.Parts(out[4].Result)), "there is no tool nowhere__nothing") {
		t.Fatalf("unknown tool: %v", out[4].Err)
	}
	if !out[5].Result.IsError || !strings.Contains(llm.Text(llm.Parts(out[5].Result)), "not a JSON object") {
		t.Fatalf("bad arguments: %+v", out[5].Result)
	}
}

func TestMetaTools(t *testing.T) {
	m := llmtest.Fleet(t)
	ts := m.NewToolSearch()
	defer ts.Close()
	meta := llm.NewMetaTools(m, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if tools := meta.Tools(); len(tools) != 2 || tools[0].Name != "search_tools" || tools[1].Name != "call_tool" {
		t.Fatalf("tools %v", tools)
	}
	res, err := meta.Handle(ctx, "search_tools", map[string]any{"query": "what will the weather be tomorrow", "limit": float64(1)})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	found := res.StructuredContent.(map[string]any)["tools"].([]llm.FoundTool)
	if len(found) != 1 || found[0].Name != "weather__get_forecast" || found[0].Server != "weather" ||
		found[0].InputSchema["required"].([]any)[0] != "city" {
		t.Fatalf("found %+v", found)
	}
	if res, _ := meta.Handle(ctx, "search_tools", map[string]any{}); !res.IsError {
		t.Fatal("a search without a query is no error")
	}
	res, _ = meta.Handle(ctx, "call_tool", map[string]any{"name": "off__ping"})
	if !res.IsError || !strings.Contains(llm.Text(llm.Parts(res)), "server off is turned off") {
		t.Fatalf("call of a disabled tool: %+v", res)
	}
	res, _ = meta.Handle(ctx, "call_tool", map[string]any{"name": "photos__flaky", "arguments": map[string]any{}})
	if !res.IsError || llm.Text(llm.Parts(res)) != "quota exceeded" {
		t.Fatalf("flaky through call_tool: %+v", res)
	}
	for _, args := range []map[string]any{{"name": "call_tool"}, {}, {"name": "photos__flaky", "arguments": "x"}} {
		if res, _ := meta.Handle(ctx, "call_tool", args); !res.IsError {
			t.Fatalf("call_tool %v is no error", args)
		}
	}
	if _, err := meta.Handle(ctx, "other", nil); err == nil {
		t.Fatal("an unknown meta-tool is no error")
	}
	// Run routes the meta-tools' names to them.
	out := llm.Run(ctx, m, []llm.ToolCall{{Name: "search_tools", Arguments: json.RawMessage(`{"query":"photo"}`)}}, llm.RunOptions{Meta: meta})
	if out[0].Err != nil || out[0].Result.IsError {
		t.Fatalf("meta through Run: %+v", out[0])
	}
	// Search defaults keep the model to read-only tools.
	ro := llm.NewMetaTools(m, ts, llm.WithSearchDefaults(toolsearch.Query{Require: toolsearch.HintReadOnly}), llm.WithMetaNames("find", "use"))
	hits, _ := ro.Find(map[string]any{"query": "photo weather", "limit": float64(10)})
	if len(hits) != 1 || hits[0].Qualified != "weather__get_forecast" {
		t.Fatalf("read-only search: %v", hits)
	}
	if s, c := ro.Names(); s != "find" || c != "use" || !ro.Has("use") {
		t.Fatal("names not applied")
	}
}

func TestStrictSchema(t *testing.T) {
	in := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":  map[string]any{"type": "string", "minLength": float64(1), "format": "uri"},
			"mode":  map[string]any{"type": "string", "enum": []any{"a", "b"}},
			"when":  map[string]any{"type": "string", "format": "date-time"},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "default": []any{}},
			"owner": map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
		},
		"required":             []any{"path"},
		"additionalProperties": false,
		"$schema":              "http://json-schema.org/draft-07/schema#",
	}
	before := fmt.Sprint(in)
	out, conv := llm.StrictSchema(in)
	if fmt.Sprint(in) != before {
		t.Fatal("StrictSchema edited its input")
	}
	want := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":  map[string]any{"type": "string"},
			"mode":  map[string]any{"type": []any{"string", "null"}, "enum": []any{"a", "b", nil}},
			"when":  map[string]any{"type": []any{"string", "null"}, "format": "date-time"},
			"tags":  map[string]any{"type": []any{"array", "null"}, "items": map[string]any{"type": "string"}},
			"owner": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}, map[string]any{"type": "null"}}},
		},
		"required":             []any{"mode", "owner", "path", "tags", "when"},
		"additionalProperties": false,
	}
	if !conv.Strict || !reflect.DeepEqual(out, want) {
		t.Fatalf("got %v\n%v\nwant %v", out, conv, want)
	}
	if got := strings.Join(conv.Dropped, ","); got != "$schema,properties.path.format=uri,properties.path.minLength,properties.tags.default" {
		t.Errorf("dropped %s", got)
	}
	// What strict mode cannot say goes out non-strict, as written.
	for name, s := range map[string]map[string]any{
		"map":     {"type": "object", "properties": map[string]any{"env": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}}},
		"allOf":   {"type": "object", "properties": map[string]any{"x": map[string]any{"allOf": []any{}}}},
		"any":     {"type": "object", "properties": map[string]any{"x": map[string]any{"description": "anything"}}},
		"open":    {"type": "object", "additionalProperties": true},
		"noitems": {"type": "object", "properties": map[string]any{"x": map[string]any{"type": "array"}}},
	} {
		out, conv := llm.StrictSchema(s)
		if conv.Strict || len(conv.Reasons) == 0 || !reflect.DeepEqual(out, llm.ObjectSchema(s)) {
			t.Errorf("%s: strict %v, reasons %v, schema %v", name, conv.Strict, conv.Reasons, out)
		}
	}
}

func TestOpenAPISchema(t *testing.T) {
	in := map[string]any{
		"type": "object",
		"$defs": map[string]any{
			"node": map[string]any{"type": "object", "properties": map[string]any{"child": map[string]any{"$ref": "#/$defs/node"}}},
		},
		"properties": map[string]any{
			"name":  map[string]any{"type": []any{"string", "null"}},
			"kind":  map[string]any{"const": "page"},
			"level": map[string]any{"type": "integer", "enum": []any{float64(1), float64(2)}, "exclusiveMinimum": float64(0)},
			"id":    map[string]any{"type": []any{"string", "integer"}},
			"tree":  map[string]any{"$ref": "#/$defs/node"},
			"meta":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		},
	}
	out, conv := llm.OpenAPISchema(in)
	props := out["properties"].(map[string]any)
	check := func(name string, want map[string]any) {
		t.Helper()
		if !reflect.DeepEqual(props[name], want) {
			t.Errorf("%s = %v, want %v", name, props[name], want)
		}
	}
	check("name", map[string]any{"type": "string", "nullable": true})
	check("kind", map[string]any{"enum": []any{"page"}, "type": "string"})
	check("level", map[string]any{"type": "integer", "description": "(one of [1 2])"})
	check("id", map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}})
	check("meta", map[string]any{"type": "object"})
	if _, ok := out["$defs"]; ok {
		t.Error("$defs kept")
	}
	depth := 0
	for n := props["tree"].(map[string]any); n != nil; depth++ {
		p, _ := n["properties"].(map[string]any)
		n, _ = p["child"].(map[string]any)
	}
	if depth < 8 || len(conv.Reasons) != 1 || !strings.Contains(conv.Reasons[0], "recursive") {
		t.Errorf("recursive $ref: depth %d, reasons %v", depth, conv.Reasons)
	}
	if !strings.Contains(strings.Join(conv.Dropped, ","), "properties.level.exclusiveMinimum") {
		t.Errorf("dropped %v", conv.Dropped)
	}
}

// Every tool of the corpus converts for both targets, and the counts of
// what strict mode could not take are known (they go out non-strict).
func TestCorpusConverts(t *testing.T) {
	servers, err := toolcorpus.Servers()
	if err != nil {
		t.Fatal(err)
	}
	var tools, strict, dropped, openapiLossy int
	for _, s := range servers {
		for _, tl := range s.Tools {
			tools++
			schema := toolsearch.InputSchema(tl)
			out, conv := llm.StrictSchema(schema)
			if out["type"] != "object" {
				t.Errorf("%s__%s: strict gave %v", s.Name, tl.Name, out)
			}
			if conv.Strict {
				strict++
			}
			if len(conv.Dropped) > 0 {
				dropped++
			}
			o, oc := llm.OpenAPISchema(schema)
			if o["type"] != "object" {
				t.Errorf("%s__%s: openapi gave %v", s.Name, tl.Name, o)
			}
			if len(oc.Reasons) > 0 {
				openapiLossy++
			}
		}
	}
	t.Logf("%d tools: %d strict (%d of them with dropped keywords), %d non-strict; %d lossy for Gemini", tools, strict, dropped, tools-strict, openapiLossy)
	if strict < tools/2 {
		t.Errorf("only %d of %d tools convert to strict mode", strict, tools)
	}
}

// A host gives its model the two meta-tools and runs the calls the model
// makes in one turn.
func Example() {
	m := client.New()
	defer m.Close()
	ts := m.NewToolSearch()
	defer ts.Close()
	meta := llm.NewMetaTools(m, ts)
	for _, t := range meta.Tools() {
		fmt.Println(t.Name)
	}
	// The model asked for a search and for a tool no server has.
	out := llm.Run(context.Background(), m, []llm.ToolCall{
		{ID: "a", Name: "search_tools", Arguments: json.RawMessage(`{"query":"read a file"}`)},
		{ID: "b", Name: "fs__read_file", Arguments: json.RawMessage(`{"path":"/etc/hosts"}`)},
	}, llm.RunOptions{Meta: meta})
	for _, o := range out {
		fmt.Printf("%s error=%v: %.60s\n", o.Call.ID, o.Result.IsError, llm.Text(llm.Parts(o.Result)))
	}
	// Output:
	// search_tools
	// call_tool
	// a error=false: {"hint":"no tool matches; try other words","tools":[]}
	// b error=true: there is no tool fs__read_file (it may have been removed or
}

var _ = mcp.Tool{}

func TestDropOptionalNulls(t *testing.T) {
	schema := map[string]any{"required": []any{"a"}, "properties": map[string]any{
		"o": map[string]any{"properties": map[string]any{"x": map[string]any{}}},
		"l": map[string]any{"items": map[string]any{"required": []any{"y"}}},
	}}
	args := map[string]any{"a": nil, "b": nil, "o": map[string]any{"x": nil, "z": 1.0}, "l": []any{map[string]any{"y": nil, "w": nil}}}
	llm.DropOptionalNulls(schema, args)
	want := map[string]any{"a": nil, "o": map[string]any{"z": 1.0}, "l": []any{map[string]any{"y": nil}}}
	if !reflect.DeepEqual(args, want) {
		t.Fatalf("got %v", args)
	}
}

// A server that cannot connect: the call waits its ready timeout, fails
// with the client's UnavailableError, and the model is told to retry.
func TestRunExplainsAnUnavailableServer(t *testing.T) {
	m := client.New(client.WithTimeouts(client.Timeouts{Ready: 50 * time.Millisecond}))
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(context.Context) (transport.Conn, error) { return nil, errors.New("connection refused") }
	if err := m.Add(ctx, "broken", client.ServerSpec{Dialer: dial}); err != nil {
		t.Fatal(err)
	}
	out := llm.Run(ctx, m, []llm.ToolCall{{ID: "1", Name: "broken__anything"}}, llm.RunOptions{})
	text := llm.Text(llm.Parts(out[0].Result))
	if !errors.Is(out[0].Err, client.ErrUnavailable) || !out[0].Result.IsError || !strings.Contains(text, "server broken is") ||
		!strings.Contains(text, "retry") {
		t.Fatalf("err %v, result %q", out[0].Err, text)
	}
	t.Log(text)
}
