package texttable

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"
)

// fits fails for every line of out wider than Width.
func fits(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > Width {
			t.Errorf("line of %d columns, over %d:\n%s", n, Width, l)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 servers", 1: "1 server", 2: "2 servers"} {
		if got := Plural(n, "server", "servers"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	word := strings.Repeat("w", 150)
	for _, tc := range []struct {
		name, s string
		n       int
		want    []string
	}{
		{"empty", "", 3, nil},
		{"fits", "  a b", 3, []string{"  a b"}},
		{"at a space", "  " + strings.Repeat("x", 90) + " tail of it", 3,
			[]string{"  " + strings.Repeat("x", 90) + " tail of", "      it"}},
		{"no space", word, 2, []string{word[:Width], "    " + word[Width:]}},
		{"bounded", strings.Repeat("ab ", 200), 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.s, tc.n)
			if len(got) > tc.n {
				t.Fatalf("%d lines, over %d", len(got), tc.n)
			}
			fits(t, strings.Join(got, "\n"))
			if tc.want != nil && strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
			if tc.name == "bounded" && !strings.HasSuffix(got[1], "…") {
				t.Errorf("the last line is not cut: %q", got[1])
			}
		})
	}
}

// A table of servers cut to fit the width, the error of one under its row.
func Example() {
	var t Table
	t.Shrink = []Shrink{{Col: 0, Min: 8}}
	t.Row("SERVER", "STATE", "TOOLS")
	t.Row("files", "Connected", "14")
	t.Row("notes", "Reconnecting", "3")
	t.Note("  last error: connection refused")
	t.Write(os.Stdout)
	fmt.Println(Plural(2, "server", "servers"))
	// Output:
	// SERVER  STATE         TOOLS
	// files   Connected     14
	// notes   Reconnecting  3
	//   last error: connection refused
	// 2 servers
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
