package llm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Conversion reports what converting a tool's input schema for a provider
// changed or could not do. A host logs it; nothing is dropped silently.
type Conversion struct {
	// Strict is, for StrictSchema, whether the result is valid in OpenAI's
	// strict mode. When false the tool goes out non-strict, with its schema
	// as the server wrote it, and Reasons say why.
	Strict bool
	// Reasons are what kept the schema from the target form.
	Reasons []string
	// Dropped are the keywords removed, each with its path in the schema
	// ("properties.path.minLength"): constraints the provider does not
	// take. The model no longer sees them; the server still checks them.
	Dropped []string
	// Changed are rewrites that keep the meaning or loosen it a little
	// (optional made nullable, oneOf read as anyOf, a $ref inlined).
	Changed []string
}

// Report is the conversion of one tool's schema for one provider.
type Report struct {
	// Tool is the tool's qualified name.
	Tool string
	Conversion
}

// OK reports a conversion that dropped and changed nothing.
func (c Conversion) OK() bool { return len(c.Reasons)+len(c.Dropped)+len(c.Changed) == 0 }

// String summarizes the conversion on one line.
func (c Conversion) String() string {
	var parts []string
	if len(c.Reasons) > 0 {
		parts = append(parts, "not converted: "+strings.Join(c.Reasons, "; "))
	}
	if len(c.Dropped) > 0 {
		parts = append(parts, "dropped "+strings.Join(c.Dropped, ", "))
	}
	if len(c.Changed) > 0 {
		parts = append(parts, "changed "+strings.Join(c.Changed, "; "))
	}
	if len(parts) == 0 {
		return "converted as is"
	}
	return strings.Join(parts, "; ")
}

// strictKeywords are the keywords OpenAI's strict mode accepts, besides
// the ones the conversion writes itself.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "anyOf": true, "$ref": true, "$defs": true, "definitions": true,
	"description": true, "title": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// strictFormats are the string formats strict mode accepts.
var strictFormats = map[string]bool{"date-time": true, "time": true, "date": true, "duration": true,
	"email": true, "hostname": true, "ipv4": true, "ipv6": true, "uuid": true}

// structural keywords change what a schema accepts in ways a provider
// subset cannot express; dropping them would let the model send what the
// server refuses, or refuse what it takes.
var structural = []string{"allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas",
	"dependentRequired", "unevaluatedProperties", "prefixItems", "propertyNames"}

// maxStrictDepth is how deep strict mode lets objects nest.
const maxStrictDepth = 10

// StrictSchema converts a tool's input schema (as toolsearch.InputSchema
// reads it) for OpenAI's strict mode: every object lists all its
// properties as required and sets additionalProperties to false, an
// optional property becomes nullable instead, oneOf becomes anyOf, and the
// keywords strict mode does not take are dropped and reported. A schema
// strict mode cannot express (an open object, allOf, not, if/then,
// patternProperties, nesting past 10 levels, a property of no type) is
// returned as the server wrote it, with Strict false and the reasons: the
// tool then goes out non-strict rather than not at all.
func StrictSchema(schema map[string]any) (map[string]any, Conversion) {
	c := &strictConv{}
	out := c.node(clone(schema), "", 0, false)
	if out["type"] != "object" {
		c.fail("", "the input schema is not an object")
	}
	if len(c.conv.Reasons) > 0 {
		return ObjectSchema(schema), Conversion{Reasons: c.conv.Reasons}
	}
	c.conv.Strict = true
	slices.Sort(c.conv.Dropped)
	return out, c.conv
}

type strictConv struct{ conv Conversion }

func (c *strictConv) fail(path, why string) {
	if path != "" {
		why = path + ": " + why
	}
	c.conv.Reasons = append(c.conv.Reasons, why)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (c *strictConv) node(s map[string]any, path string, depth int, nullable bool) map[string]any {
	if depth > maxStrictDepth {
		c.fail(path, fmt.Sprintf("nested deeper than %d levels", maxStrictDepth))
		return s
	}
	for _, k := range structural {
		if _, ok := s[k]; ok {
			c.fail(path, k+" has no strict-mode form")
		}
	}
	if one, ok := s["oneOf"]; ok {
		delete(s, "oneOf")
		s["anyOf"] = one
		c.conv.Changed = append(c.conv.Changed, join(path, "oneOf")+" read as anyOf")
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if !strictKeywords[k] && !slices.Contains(structural, k) {
			delete(s, k)
			c.conv.Dropped = append(c.conv.Dropped, join(path, k))
		}
	}
	if f, ok := s["format"].(string); ok && !strictFormats[f] {
		delete(s, "format")
		c.conv.Dropped = append(c.conv.Dropped, join(path, "format")+"="+f)
	}
	for _, defs := range []string{"$defs", "definitions"} {
		if d, ok := s[defs].(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(d)) {
				if sub, ok := d[k].(map[string]any); ok {
					d[k] = c.node(sub, join(path, defs+"."+k), depth+1, false)
				}
			}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, a := range alts {
			if sub, ok := a.(map[string]any); ok {
				alts[i] = c.node(sub, fmt.Sprintf("%s[%d]", join(path, "anyOf"), i), depth+1, false)
			}
		}
	}
	types := typeList(s["type"])
	_, hasProps := s["properties"]
	if len(types) == 0 && hasProps {
		types = []string{"object"}
		s["type"] = "object"
	}
	if len(types) == 0 && s["anyOf"] == nil && s["$ref"] == nil && s["enum"] == nil && s["const"] == nil {
		c.fail(path, "a value of any type has no strict-mode form")
		return s
	}
	if slices.Contains(types, "object") {
		c.object(s, path, depth)
	}
	if slices.Contains(types, "array") {
		items, ok := s["items"].(map[string]any)
		if !ok {
			c.fail(path, "an array without an items schema has no strict-mode form")
		} else {
			s["items"] = c.node(items, join(path, "items"), depth+1, false)
		}
	}
	if nullable {
		s = makeNullable(s, types)
	}
	return s
}

func (c *strictConv) object(s map[string]any, path string, depth int) {
	switch ap := s["additionalProperties"].(type) {
	case nil:
	case bool:
		if ap {
			c.fail(path, "an object open to any property (additionalProperties) has no strict-mode form")
		}
	default:
		c.fail(path, "a map (additionalProperties with a schema) has no strict-mode form")
	}
	s["additionalProperties"] = false
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		if path != "" {
			c.fail(path, "an object with no properties is open to any property, which strict mode cannot express")
		}
	}
	s["properties"] = props
	required := map[string]bool{}
	for _, r := range stringList(s["required"]) {
		required[r] = true
	}
	keys := slices.Sorted(maps.Keys(props))
	for _, k := range keys {
		sub, ok := props[k].(map[string]any)
		if !ok {
			c.fail(join(path, "properties."+k), "a property with no schema has no strict-mode form")
			continue
		}
		if !required[k] {
			c.conv.Changed = append(c.conv.Changed, join(path, "properties."+k)+" optional, made nullable")
		}
		props[k] = c.node(sub, join(path, "properties."+k), depth+1, !required[k])
	}
	req := make([]any, len(keys))
	for i, k := range keys {
		req[i] = k
	}
	s["required"] = req
}

// makeNullable lets s take null as well: the way strict mode says a
// property is optional.
func makeNullable(s map[string]any, types []string) map[string]any {
	switch {
	case len(types) > 0:
		if !slices.Contains(types, "null") {
			list := make([]any, 0, len(types)+1)
			for _, t := range types {
				list = append(list, t)
			}
			s["type"] = append(list, "null")
		}
		if e, ok := s["enum"].([]any); ok && !slices.Contains(e, any(nil)) {
			s["enum"] = append(e, nil)
		}
		return s
	case s["anyOf"] != nil:
		s["anyOf"] = append(s["anyOf"].([]any), map[string]any{"type": "null"})
		return s
	}
	desc, hasDesc := s["description"]
	delete(s, "description")
	out := map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	if hasDesc {
		out["description"] = desc
	}
	return out
}

// ObjectSchema returns schema with the minimum every provider needs of a
// tool's input schema: type object and a properties map. The rest is left
// as the server wrote it.
func ObjectSchema(schema map[string]any) map[string]any {
	out := clone(schema)
	if out["type"] == nil {
		out["type"] = "object"
	}
	if _, ok := out["properties"].(map[string]any); !ok && out["type"] == "object" {
		out["properties"] = map[string]any{}
	}
	return out
}

// openAPIKeywords are the keywords Gemini's OpenAPI subset (genai.Schema)
// has.
var openAPIKeywords = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"items": true, "properties": true, "required": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true, "maximum": true,
	"anyOf": true, "propertyOrdering": true, "default": true, "example": true,
	"minProperties": true, "maxProperties": true,
}

// maxRefDepth bounds how deep OpenAPISchema inlines $refs: a recursive
// schema is cut there.
const maxRefDepth = 8

// OpenAPISchema converts a tool's input schema into the OpenAPI 3.0 subset
// Gemini's function declarations take (genai.Schema's fields): $refs are
// inlined (a recursive one cut after 8 levels), a type list with null
// becomes nullable, other type lists and oneOf become anyOf, const
// becomes a one-value enum, and keywords the subset lacks
// (additionalProperties, exclusiveMinimum, ...) are dropped and reported.
// Types stay lower-case JSON Schema names; enum values become strings,
// the only kind the subset takes. The result always converts: the
// report says what it lost.
func OpenAPISchema(schema map[string]any) (map[string]any, Conversion) {
	c := &openAPIConv{defs: map[string]any{}}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := schema[k].(map[string]any); ok {
			for name, v := range d {
				c.defs["#/"+k+"/"+name] = v
			}
		}
	}
	out := c.node(clone(schema), "", 0)
	if out["type"] == nil {
		out["type"] = "object"
	}
	slices.Sort(c.conv.Dropped)
	return out, c.conv
}

type openAPIConv struct {
	defs map[string]any
	conv Conversion
}

func (c *openAPIConv) node(s map[string]any, path string, refDepth int) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		target, found := c.defs[ref].(map[string]any)
		switch {
		case !found:
			c.conv.Reasons = append(c.conv.Reasons, join(path, "$ref")+" "+ref+" not found; any value accepted")
			return map[string]any{"description": s["description"]}
		case refDepth >= maxRefDepth:
			c.conv.Reasons = append(c.conv.Reasons, join(path, "$ref")+" "+ref+" recursive; cut")
			return map[string]any{"type": "object", "description": "(nested further; see the parent's description)"}
		}
		inlined := clone(target)
		if d, ok := s["description"]; ok {
			inlined["description"] = d
		}
		c.conv.Changed = append(c.conv.Changed, join(path, "$ref")+" "+ref+" inlined")
		return c.node(inlined, path, refDepth+1)
	}
	if one, ok := s["oneOf"]; ok {
		delete(s, "oneOf")
		s["anyOf"] = one
		c.conv.Changed = append(c.conv.Changed, join(path, "oneOf")+" read as anyOf")
	}
	if cv, ok := s["const"]; ok {
		delete(s, "const")
		s["enum"] = []any{cv}
		c.conv.Changed = append(c.conv.Changed, join(path, "const")+" as a one-value enum")
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		if _, has := s["example"]; !has {
			s["example"] = ex[0]
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if openAPIKeywords[k] {
			continue
		}
		delete(s, k)
		if k == "additionalProperties" || k == "$defs" || k == "definitions" || k == "$schema" || k == "examples" {
			continue // the subset's objects are closed anyway; definitions were inlined
		}
		c.conv.Dropped = append(c.conv.Dropped, join(path, k))
	}
	types := typeList(s["type"])
	if slices.Contains(types, "null") {
		s["nullable"] = true
		types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
	}
	switch len(types) {
	case 0:
		delete(s, "type")
		if _, ok := s["properties"]; ok {
			s["type"] = "object"
			types = []string{"object"}
		}
	case 1:
		s["type"] = types[0]
	default:
		delete(s, "type")
		var alts []any
		for _, t := range types {
			alts = append(alts, map[string]any{"type": t})
		}
		s["anyOf"] = alts
		c.conv.Changed = append(c.conv.Changed, join(path, "type")+" list as anyOf")
	}
	if e, ok := s["enum"].([]any); ok {
		var strs []any
		for _, v := range e {
			switch v := v.(type) {
			case nil:
				s["nullable"] = true
			case string:
				strs = append(strs, v)
			default:
				strs = append(strs, fmt.Sprint(v))
			}
		}
		s["enum"] = strs
		if len(types) == 1 && types[0] != "string" {
			// The subset's enum is for strings: a numeric enum goes
			// into the description instead.
			delete(s, "enum")
			d, _ := s["description"].(string)
			s["description"] = strings.TrimSpace(fmt.Sprintf("%s (one of %v)", d, e))
			c.conv.Changed = append(c.conv.Changed, join(path, "enum")+" of "+types[0]+" moved to the description")
		} else if len(types) == 0 {
			s["type"] = "string"
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if sub, ok := props[k].(map[string]any); ok {
				props[k] = c.node(sub, join(path, "properties."+k), refDepth)
			} else {
				props[k] = map[string]any{}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		s["items"] = c.node(items, join(path, "items"), refDepth)
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, a := range alts {
			if sub, ok := a.(map[string]any); ok {
				alts[i] = c.node(sub, fmt.Sprintf("%s[%d]", join(path, "anyOf"), i), refDepth)
			}
		}
	}
	return s
}

// typeList reads a schema's "type": one name or a list.
func typeList(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		return stringList(t)
	case []string:
		return slices.Clone(t)
	}
	return nil
}

func stringList(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = slices.Clone(v)
	}
	return out
}

// clone deep-copies generic JSON, so that a conversion never edits the
// View's shared schema maps.
func clone(m map[string]any) map[string]any {
	out, _ := cloneValue(m).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = cloneValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneValue(x)
		}
		return out
	}
	return v
}

// DropOptionalNulls removes from args, in place, every null member that
// schema does not require, in nested objects too. A strict-mode model
// sends null for an optional property it leaves out (StrictSchema made
// them nullable); the server expects it absent.
func DropOptionalNulls(schema, args map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	required := stringList(schema["required"])
	for k, v := range args {
		if v == nil {
			if !slices.Contains(required, k) {
				delete(args, k)
			}
			continue
		}
		sub, _ := props[k].(map[string]any)
		switch v := v.(type) {
		case map[string]any:
			DropOptionalNulls(sub, v)
		case []any:
			items, _ := sub["items"].(map[string]any)
			for _, x := range v {
				if o, ok := x.(map[string]any); ok {
					DropOptionalNulls(items, o)
				}
			}
		}
	}
}
