// Package texttable lays out text for a terminal beside an editor: tables
// whose columns are cut to fit a width, wrapped notes, counted nouns. The
// mcpfleet command line prints with it (examples/host keeps a copy of its
// own, so that it uses only public packages).
package texttable

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Width is how many columns tables and lines may take: a terminal beside
// an editor.
const Width = 100

// gap separates a table's columns.
const gap = "  "

// Table lays out rows of cells in columns as wide as their widest cell,
// fitted to Width: while it is too wide, the columns in Shrink (in that
// order) are cut down to their minimum, a cut cell ending in "…"; then
// every column, widest first. A row may have a note, printed under it and
// wrapped (see Wrap).
type Table struct {
	rows  [][]string
	notes []string
	// Shrink lists columns that may be cut, each with the width below
	// which it is not cut until every other one has been.
	Shrink []Shrink
}

// Shrink is a column that may be cut, and the width it keeps until every
// other column has been cut.
type Shrink struct{ Col, Min int }

// Row adds a row.
func (t *Table) Row(cells ...string) {
	t.rows = append(t.rows, cells)
	t.notes = append(t.notes, "")
}

// Note sets the note of the last row.
func (t *Table) Note(s string) { t.notes[len(t.notes)-1] = s }

// Write prints the table; no line is wider than Width.
func (t *Table) Write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for c, cell := range r {
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
		}
	}
	over := len(gap)*(len(widths)-1) - Width
	for _, w := range widths {
		over += w
	}
	for _, s := range t.Shrink {
		if over <= 0 {
			break
		}
		if s.Col < len(widths) && widths[s.Col] > s.Min {
			cut := min(over, widths[s.Col]-s.Min)
			widths[s.Col] -= cut
			over -= cut
		}
	}
	for over > 0 { // the preferred cuts were not enough: the widest goes
		widest := 0
		for c := range widths {
			if widths[c] > widths[widest] {
				widest = c
			}
		}
		if widths[widest] <= 1 {
			break
		}
		widths[widest]--
		over--
	}
	for i, r := range t.rows {
		var b strings.Builder
		for c, cell := range r {
			cell = Cut(cell, widths[c])
			b.WriteString(cell)
			if c < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell)) + gap)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		for _, l := range Wrap(t.notes[i], noteLines) {
			fmt.Fprintln(w, l)
		}
	}
}

// noteLines bounds the lines a table's note takes.
const noteLines = 3

// Wrap breaks s into at most n lines of at most Width columns, at spaces
// where it can; lines after the first are indented four columns more than
// the first, and the last is cut with "…" if s does not fit.
func Wrap(s string, n int) []string {
	if s == "" {
		return nil
	}
	indent := strings.Repeat(" ", len(s)-len(strings.TrimLeft(s, " "))+4)
	var out []string
	for len(out) < n {
		if utf8.RuneCountInString(s) <= Width || len(out) == n-1 {
			return append(out, Cut(s, Width))
		}
		rs := []rune(s)
		at := Width
		if sp := strings.LastIndexByte(string(rs[:Width+1]), ' '); sp > len(indent) {
			at = utf8.RuneCountInString(string(rs[:Width+1])[:sp])
		}
		out = append(out, strings.TrimRight(string(rs[:at]), " "))
		s = indent + strings.TrimLeft(string(rs[at:]), " ")
	}
	return out
}

// Cut shortens s to n runes, its last one "…" if anything was cut.
func Cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return string([]rune(s)[:n-1]) + "…"
}

// Plural counts n things: "1 server", "2 servers".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
