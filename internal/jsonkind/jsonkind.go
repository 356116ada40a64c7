// Package jsonkind names the kind of a value decoded from JSON, for an
// error that says what a value is instead of what it should be.
package jsonkind

import "fmt"

// Of names the kind of v, a value json.Unmarshal decoded into an any:
// "an object", "an array", "a string", "a number", "a boolean" or "null";
// a value of another Go type is named by its type.
func Of(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}
