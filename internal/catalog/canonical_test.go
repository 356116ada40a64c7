package catalog

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// slowCanonical is canonicalJSON without its fast path: decode to a generic
// tree, encode again. The fast path must give the same bytes, so that no
// hash changes with it.
func slowCanonical(raw []byte) ([]byte, bool) {
	var tree any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&tree) != nil {
		return nil, false
	}
	out, err := json.Marshal(tree)
	return out, err == nil
}

var canonicalSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-1.50e+10`, `true`, `null`, `[1,"a",{"b":null}]`,
	`{"b":1,"a":{"d":[3,2,1],"c":"x"}}`,
	`{"z":"<b>&amp;</b>","y":"caf\u00e9","x":"line\nbreak","w":"\u2028","v":"\"q\""}`,
	`{"é":1,"e":2,"\u0041":3,"B":4}`,
	`{"a":1,"a":2}`,
	`{"a" : [ 1 , 2 ] , "b" : { } }`,
	`{"type":"object","properties":{"text":{"type":"string","description":"café <x>"}},"required":["text"]}`,
	`{"a":"\ud83d\ude00","b":"\udc00"}`,
	"{\"a\":\"\xff\"}",
	`{"a":1e400}`, `[1,]`, `{"a"}`, `{"a":tru}`,
}

func TestCanonicalizeMatchesSlowPath(t *testing.T) {
	for _, seed := range canonicalSeeds {
		checkCanonical(t, []byte(seed))
	}
	// Tools as mcp-go marshals them: schemas keep their properties'
	// order, which canonical JSON must not.
	tools := []mcp.Tool{
		mcp.NewTool("echo", mcp.WithDescription("Echoes <text> & more: \"quoted\"\n"),
			mcp.WithString("text", mcp.Required(), mcp.Description("the text")),
			mcp.WithNumber("n", mcp.DefaultNumber(1.5)), mcp.WithBoolean("loud"),
			mcp.WithReadOnlyHintAnnotation(true)),
		mcp.NewToolWithRawSchema("raw", "raw schema", json.RawMessage(`{"type":"object","properties":{"b":{},"a":{"enum":[2,1]}},"b":1,"b":2}`)),
	}
	for _, tool := range tools {
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		checkCanonical(t, raw)
		if got, want := canonicalJSON(tool), mustSlow(t, raw); !bytes.Equal(got, want) {
			t.Errorf("canonicalJSON(%s):\n got %s\nwant %s", tool.Name, got, want)
		}
	}
}

func mustSlow(t *testing.T, raw []byte) []byte {
	t.Helper()
	out, ok := slowCanonical(raw)
	if !ok {
		t.Fatalf("slow path failed on %s", raw)
	}
	return out
}

// checkCanonical: where the fast path answers, it answers as the slow path
// would; it may decline anything.
func checkCanonical(t *testing.T, raw []byte) {
	t.Helper()
	fast, end, ok := canonicalize(nil, raw, 0)
	if !ok || skipSpace(raw, end) != len(raw) {
		return
	}
	slow, sok := slowCanonical(raw)
	if !sok {
		t.Errorf("fast path accepted %q, which does not decode", raw)
		return
	}
	if !bytes.Equal(fast, slow) {
		t.Errorf("canonicalize(%q):\n got %s\nwant %s", raw, fast, slow)
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, seed := range canonicalSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// Only what json.Marshal could have written reaches canonicalize:
		// valid JSON.
		if !json.Valid(raw) {
			return
		}
		checkCanonical(t, raw)
	})
}

// canonicalTools are tools the direct encoder must write as marshalling
// them does; fast says whether it is expected to (rather than to decline
// and leave them to canonicalJSON).
func canonicalTools() []struct {
	name string
	tool mcp.Tool
	fast bool
} {
	yes, no := true, false
	cyclic := map[string]any{"type": "object"}
	cyclic["self"] = cyclic
	deep := map[string]any{"type": "string"}
	for range 100 {
		deep = map[string]any{"nested": deep}
	}
	ordered := mcp.NewTool("ordered", mcp.WithString("z"), mcp.WithString("a"), mcp.WithNumber("m"))
	ordered.InputSchema.PropertyOrder = []string{"z", "missing", "z", "a"}
	withOutput := mcp.NewTool("out", mcp.WithOutputSchema[struct {
		N int    `json:"n"`
		S string `json:"s,omitempty"`
	}]())
	rawOut := mcp.NewTool("rawout")
	rawOut.RawOutputSchema = json.RawMessage(` { "type" : "object", "b": [1, 2.50, -0], "a": "<&>" } `)
	both := mcp.NewToolWithRawSchema("both", "", json.RawMessage(`{"type":"object"}`))
	both.InputSchema.Type = "object"
	badRaw := mcp.NewToolWithRawSchema("badraw", "", json.RawMessage(`{"type":}`))
	trailing := mcp.NewToolWithRawSchema("trailing", "", json.RawMessage(`{} {}`))
	schema := func(props map[string]any) mcp.Tool {
		t := mcp.NewTool("props")
		t.InputSchema.Properties = props
		return t
	}
	return []struct {
		name string
		tool mcp.Tool
		fast bool
	}{
		{"plain", mcp.NewTool("plain"), true},
		{"builders", mcp.NewTool("echo", mcp.WithDescription("Echoes <text> & more: \"quoted\"\n\u2028 caf\u00e9 \xff"),
			mcp.WithTitleAnnotation("Echo"), mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false),
			mcp.WithString("text", mcp.Required(), mcp.Description("the text"), mcp.Enum("a", "b"), mcp.MinLength(1), mcp.MaxLength(9)),
			mcp.WithNumber("n", mcp.DefaultNumber(1.5), mcp.Min(1e-7), mcp.Max(1e21)),
			mcp.WithBoolean("loud", mcp.DefaultBool(true)),
			mcp.WithArray("list", mcp.WithStringItems()),
			mcp.WithObject("obj", mcp.Properties(map[string]any{"x": map[string]any{"type": "integer"}})),
		), true},
		{"title and defer", func() mcp.Tool {
			t := mcp.NewTool("t")
			t.Title, t.DeferLoading = "A <title>", true
			return t
		}(), true},
		{"meta icons execution", func() mcp.Tool {
			t := mcp.NewTool("m")
			t.Meta = &mcp.Meta{AdditionalFields: map[string]any{"z": 1, "a": []any{"x", 2.5}}}
			t.Icons = []mcp.Icon{{Src: "https://example.com/i.png", MIMEType: "image/png"}}
			t.Execution = &mcp.ToolExecution{TaskSupport: "optional"}
			return t
		}(), true},
		{"property order", ordered, true},
		{"output schema", withOutput, true},
		{"raw input", mcp.NewToolWithRawSchema("raw", "raw schema", json.RawMessage(`{"type":"object","properties":{"b":{},"a":{"enum":[2,1]}}}`)), true},
		{"raw output", rawOut, true},
		{"raw input with a key twice", mcp.NewToolWithRawSchema("dup", "", json.RawMessage(`{"b":1,"b":2}`)), false},
		{"both schemas", both, false},
		{"malformed raw", badRaw, false},
		{"raw with trailing data", trailing, false},
		{"typed values", schema(map[string]any{
			"ss": map[string]string{"b": "<", "a": "x"}, "ints": []int{3, 1}, "f32": float32(0.1), "u8": uint8(7),
			"num": json.Number("1.0e3"), "rawmsg": json.RawMessage(`{"b" : 1,"a":2}`), "ptr": &yes, "nilmap": map[string]any(nil),
			"nilslice": []any(nil), "nilstrings": []string(nil), "struct": struct{ B, A int }{1, 2},
			"i": 42, "i64": int64(-1 << 62), "neg0": math.Copysign(0, -1), "tiny": 1.5e-9, "huge": 1e300, "plain": 123456.789,
			"bools": []any{true, false, nil}, "ptrfalse": &no,
		}), true},
		{"escaped keys", schema(map[string]any{"<b>": 1, "caf\u00e9": 2, "tab\t": 3, "\u2028": 4}), true},
		{"invalid UTF-8 keys", schema(map[string]any{"a\xff": 1, "a\xfe": 2}), false},
		{"NaN", schema(map[string]any{"n": math.NaN()}), false},
		{"infinity", schema(map[string]any{"n": map[string]any{"max": math.Inf(1)}}), false},
		{"cycle", schema(map[string]any{"c": cyclic}), false},
		{"deep", schema(map[string]any{"d": deep}), false},
		{"defs and additional", func() mcp.Tool {
			t := mcp.NewTool("defs", mcp.WithString("x"))
			t.InputSchema.Defs = map[string]any{}
			t.InputSchema.AdditionalProperties = false
			t.InputSchema.Required = []string{"x", "<y>"}
			return t
		}(), true},
		{"typed nil additional", func() mcp.Tool {
			t := mcp.NewTool("tn")
			t.InputSchema.AdditionalProperties = map[string]any(nil)
			t.InputSchema.Defs = map[string]any{"d": map[string]any{"type": "string"}}
			return t
		}(), true},
	}
}

// TestCanonicalToolMatchesMarshal: a tool written straight from its struct
// has the bytes marshalling it and canonicalizing gave, so no catalog hash
// changed with the direct encoder.
func TestCanonicalToolMatchesMarshal(t *testing.T) {
	for _, c := range canonicalTools() {
		want := canonicalJSON(&c.tool)
		if got := appendCanonical(nil, &c.tool); !bytes.Equal(got, want) {
			t.Errorf("%s: appendCanonical:\n got %s\nwant %s", c.name, got, want)
		}
		got, ok := appendCanonicalTool([]byte("prefix"), &c.tool)
		if ok != c.fast {
			t.Errorf("%s: direct encoder ok = %v, want %v (%s)", c.name, ok, c.fast, want)
			continue
		}
		if ok && !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("%s: direct encoder:\n got %s\nwant %s", c.name, got, want)
		}
	}
}

// FuzzCanonicalTool decodes the input as a server's tool, as mcp-go's
// client does, and checks the direct encoder against marshalling.
func FuzzCanonicalTool(f *testing.F) {
	for _, c := range canonicalTools() {
		if raw, err := json.Marshal(c.tool); err == nil {
			f.Add(raw)
		}
	}
	f.Add([]byte(`{"name":"x","inputSchema":{"type":"object","properties":{"a":{"type":"number","minimum":1e-7,"maximum":12345678901234567890123}},"required":[]},"annotations":{"title":"<t>","readOnlyHint":true}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var tool mcp.Tool
		if json.Unmarshal(raw, &tool) != nil {
			return
		}
		want := canonicalJSON(&tool)
		if got, ok := appendCanonicalTool(nil, &tool); ok && !bytes.Equal(got, want) {
			t.Errorf("direct encoder of %s:\n got %s\nwant %s", raw, got, want)
		}
	})
}

// TestCanonicalToolKnowsEveryField: the direct encoder writes the fields of
// mcp-go's Tool, schema and annotations it knows. An mcp-go that adds one
// must fail here, not leave the field out of every hash (where a change to
// it would not show as a changed tool).
func TestCanonicalToolKnowsEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[mcp.Tool](): {"Meta", "Name", "Title", "Description", "InputSchema", "RawInputSchema",
			"OutputSchema", "RawOutputSchema", "Annotations", "DeferLoading", "Icons", "Execution"},
		reflect.TypeFor[mcp.ToolArgumentsSchema](): {"Defs", "Type", "Properties", "Required", "AdditionalProperties", "PropertyOrder"},
		reflect.TypeFor[mcp.ToolAnnotation]():      {"Title", "ReadOnlyHint", "DestructiveHint", "IdempotentHint", "OpenWorldHint"},
	} {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v has the fields %v; appendCanonicalTool writes %v: teach it the new ones", typ, got, want)
		}
	}
}

// FuzzCanonicalToolRawSchema sets the input bytes as a tool's raw input or
// output schema, which FuzzCanonicalTool never reaches: those fields are
// not decoded, a host or server library sets them.
func FuzzCanonicalToolRawSchema(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Add([]byte(" {\"a\" :\t[ 1 ,\r\n -0.0E+1 , \"<\xe2\x80\xa8\xff>\" ] , \"\\u00e9\" : {} } "), false)
	f.Add([]byte(""), true)
	f.Add([]byte("null"), false)
	f.Add([]byte("{} {}"), false)
	f.Fuzz(func(t *testing.T, raw []byte, output bool) {
		tool := mcp.Tool{Name: "r"}
		if output {
			tool.RawOutputSchema = json.RawMessage(raw)
		} else {
			tool.RawInputSchema = json.RawMessage(raw)
		}
		want := canonicalJSON(&tool)
		if got, ok := appendCanonicalTool(nil, &tool); ok && !bytes.Equal(got, want) {
			t.Errorf("raw schema %q:\n got %s\nwant %s", raw, got, want)
		}
	})
}
