package catalog

import (
	"bytes"
	"encoding/json"
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
