package jsonkind

import (
	"encoding/json"
	"testing"
)

func TestOf(t *testing.T) {
	for text, want := range map[string]string{
		`null`: "null", `{"a":1}`: "an object", `[1,2]`: "an array", `"x"`: "a string",
		`7`: "a number", `true`: "a boolean",
	} {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		if got := Of(v); got != want {
			t.Errorf("Of(%s) = %q, want %q", text, got, want)
		}
	}
	if got := Of(int64(3)); got != "int64" {
		t.Errorf("Of(int64) = %q", got)
	}
}
