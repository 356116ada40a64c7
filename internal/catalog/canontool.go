package catalog

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// appendCanonicalTool appends the canonical JSON of t to dst: the bytes
// canonicalJSON(t) gives, written straight from the struct. Sealing is most
// of what a connect costs the Manager beyond the connect itself, and most of
// sealing was mcp-go's Tool.MarshalJSON, which builds a map of the tool and
// another of its schema, and encoding/json validating and compacting what
// each returns, only for canonicalize to take the result apart again.
//
// It writes what mcp-go would marshal, keys in sorted order: the members
// Tool.MarshalJSON and ToolArgumentsSchema.MarshalJSON write, and the
// schema's values (the generic trees that decoding a schema gives, and the
// maps, slices and scalars mcp.NewTool's options build) as encoding/json
// writes them. A value of any other type is marshalled and canonicalized on
// its own, which gives the bytes it has inside the whole. It reports false,
// with dst possibly extended, for whatever would make marshalling the tool
// fail or whose bytes it cannot vouch for (a schema set twice, a NaN, a
// cycle, deep nesting); the caller then takes canonicalJSON's path, which
// writes the error the same way as before.
func appendCanonicalTool(dst []byte, t *mcp.Tool) ([]byte, bool) {
	ok := true
	dst = append(dst, '{')
	comma := false
	key := func(k string) {
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	// The members in sorted order of their keys.
	if t.Meta != nil {
		key("_meta")
		dst, ok = appendMarshalled(dst, t.Meta)
	}
	key("annotations")
	dst = appendAnnotations(dst, &t.Annotations)
	if t.DeferLoading {
		key("defer_loading")
		dst = append(dst, "true"...)
	}
	if t.Description != "" {
		key("description")
		dst = appendString(dst, t.Description)
	}
	if ok && t.Execution != nil {
		key("execution")
		dst, ok = appendMarshalled(dst, t.Execution)
	}
	if ok && t.Icons != nil {
		key("icons")
		dst, ok = appendMarshalled(dst, t.Icons)
	}
	if ok {
		key("inputSchema")
		dst, ok = appendSchema(dst, (*mcp.ToolArgumentsSchema)(&t.InputSchema), t.RawInputSchema)
	}
	key("name")
	dst = appendString(dst, t.Name)
	if ok && (t.RawOutputSchema != nil || t.OutputSchema.Type != "") {
		key("outputSchema")
		dst, ok = appendSchema(dst, (*mcp.ToolArgumentsSchema)(&t.OutputSchema), t.RawOutputSchema)
	}
	if t.Title != "" {
		key("title")
		dst = appendString(dst, t.Title)
	}
	return append(dst, '}'), ok
}

// appendAnnotations is the canonical encoding of a ToolAnnotation: its
// omitempty fields, keys sorted.
func appendAnnotations(dst []byte, a *mcp.ToolAnnotation) []byte {
	dst = append(dst, '{')
	comma := false
	for _, h := range [...]struct {
		key string
		val *bool
	}{
		{"destructiveHint", a.DestructiveHint},
		{"idempotentHint", a.IdempotentHint},
		{"openWorldHint", a.OpenWorldHint},
		{"readOnlyHint", a.ReadOnlyHint},
	} {
		if h.val == nil {
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(dst, '"')
		dst = append(dst, h.key...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendBool(dst, *h.val)
	}
	if a.Title != "" {
		if comma {
			dst = append(dst, ',')
		}
		dst = append(dst, `"title":`...)
		dst = appendString(dst, a.Title)
	}
	return append(dst, '}')
}

// appendSchema is the canonical encoding of an input or output schema as
// Tool.MarshalJSON writes it: raw when set (an error when the structured
// schema is set too), else the members ToolArgumentsSchema.MarshalJSON
// writes. Its PropertyOrder orders nothing canonical JSON keeps.
func appendSchema(dst []byte, s *mcp.ToolArgumentsSchema, raw json.RawMessage) ([]byte, bool) {
	if raw != nil {
		if s.Type != "" || !json.Valid(raw) {
			return dst, false
		}
		out, end, ok := canonicalize(dst, raw, 0)
		return out, ok && skipSpace(raw, end) == len(raw)
	}
	ok := true
	dst = append(dst, '{')
	if s.Defs != nil {
		dst = append(dst, `"$defs":`...)
		dst, ok = appendObject(dst, s.Defs, 1)
		dst = append(dst, ',')
	}
	if ok && s.AdditionalProperties != nil {
		dst = append(dst, `"additionalProperties":`...)
		dst, ok = appendValue(dst, s.AdditionalProperties, 1)
		dst = append(dst, ',')
	}
	dst = append(dst, `"properties":`...)
	if ok {
		dst, ok = appendObject(dst, s.Properties, 1) // nil writes {}, as mcp-go does
	}
	dst = append(dst, `,"required":`...)
	dst = appendStrings(dst, s.Required)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, s.Type)
	return append(dst, '}'), ok
}

// maxDepth bounds appendValue's recursion. encoding/json starts looking for
// cycles only past 1,000 levels; a value nested this deep is left to it.
const maxDepth = 64

// appendValue appends the canonical JSON of v, a value inside a schema.
func appendValue(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDepth {
		return dst, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case float64:
		return appendFloat(dst, v)
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		return appendObject(dst, v, depth+1)
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendValue(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case []string:
		if v == nil {
			return append(dst, "null"...), true
		}
		return appendStrings(dst, v), true
	}
	return appendMarshalled(dst, v)
}

// appendObject appends the canonical JSON of m, keys sorted; nil writes {}.
func appendObject(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	var inline [16]string
	keys := inline[:0]
	for k := range m {
		if !utf8.ValidString(k) {
			return dst, false // decoding would merge it with other keys, or reorder it
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendValue(dst, m[k], depth); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendStrings appends ss as a JSON array; nil or empty writes [].
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// appendString appends s as encoding/json writes it. Printable ASCII that
// needs no escape is copied; anything else is left to encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !verbatim(s[i]) {
			b, _ := json.Marshal(s) // a string always marshals
			if !utf8.ValidString(s) {
				// Marshalling writes each invalid byte as \ufffd, and
				// canonicalize re-encodes that escape as the character.
				var valid string
				_ = json.Unmarshal(b, &valid)
				b, _ = json.Marshal(valid)
			}
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendFloat appends f as encoding/json writes a float64 (as ES6 would);
// NaN and the infinities do not marshal.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// appendMarshalled appends the canonical JSON of v by marshalling it, for
// the values appendValue does not write itself.
func appendMarshalled(dst []byte, v any) ([]byte, bool) {
	raw, err := safeMarshal(v)
	if err != nil {
		return dst, false
	}
	out, _, ok := canonicalize(dst, raw, 0)
	return out, ok
}
