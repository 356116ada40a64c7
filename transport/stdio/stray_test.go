package stdio

import (
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// TestStrayTap: lines that are not JSON-RPC are counted and the first kept,
// however the reads cut the stream, and every byte passes on untouched.
func TestStrayTap(t *testing.T) {
	long := strings.Repeat("x", 3*strayLineBytes)
	in := "Server running on stdio\n" +
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" +
		"  \t\n" + // white space only: nothing
		"   {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n" + // indented JSON
		`[{"jsonrpc":"2.0","id":2,"result":{}}]` + "\n" +
		"warning: deprecated\r\n" +
		long + "\n" +
		"l4\nl5\nl6\n" +
		"no newline at the end"
	want := []string{"Server running on stdio", "warning: deprecated", long[:strayLineBytes], "l4", "l5"}
	for _, tt := range []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"byte by byte", iotest.OneByteReader},
		{"halves", iotest.HalfReader},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tap := newStrayTap(tt.r(strings.NewReader(in)), nil)
			out, err := io.ReadAll(tap)
			if err != nil || string(out) != in {
				t.Fatalf("passed on %q, %v; want the input unchanged", out, err)
			}
			first, total := tap.lines()
			if total != 7 || !slices.Equal(first, want) {
				t.Errorf("stray lines %q, %d in all; want %q, 7", first, total, want)
			}
		})
	}
}
