// The host's text layout: tables whose columns are cut to fit a terminal
// beside an editor, wrapped notes, counted nouns. (The same as mcpfleet's
// command line prints with; copied here so that the example uses only the
// module's public packages and can be copied out as the start of a host.)

package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// width is how many columns tables and lines may take: a terminal beside
// an editor.
const width = 100

// gap separates a table's columns.
const gap = "  "

// table lays out rows of cells in columns as wide as their widest cell,
// fitted to width: while it is too wide, the columns in Shrink (in that
// order) are cut down to their minimum, a cut cell ending in "…"; then
// every column, widest first. A row may have a note, printed under it and
// wrapped (see wrap).
type table struct {
	rows  [][]string
	notes []string
	// shrink lists columns that may be cut, each with the width below
	// which it is not cut until every other one has been.
	shrink []shrink
}

// shrink is a column that may be cut, and the width it keeps until every
// other column has been cut.
type shrink struct{ col, min int }

// row adds a row.
func (t *table) row(cells ...string) {
	t.rows = append(t.rows, cells)
	t.notes = append(t.notes, "")
}

// note sets the note of the last row.
func (t *table) note(s string) { t.notes[len(t.notes)-1] = s }

// write prints the table; no line is wider than width.
func (t *table) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for c, cell := range r {
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
		}
	}
	over := len(gap)*(len(widths)-1) - width
	for _, w := range widths {
		over += w
	}
	for _, s := range t.shrink {
		if over <= 0 {
			break
		}
		if s.col < len(widths) && widths[s.col] > s.min {
			cut := min(over, widths[s.col]-s.min)
			widths[s.col] -= cut
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
			cell = cut(cell, widths[c])
			b.WriteString(cell)
			if c < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell)) + gap)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		for _, l := range wrap(t.notes[i], noteLines) {
			fmt.Fprintln(w, l)
		}
	}
}

// noteLines bounds the lines a table's note takes.
const noteLines = 3

// wrap breaks s into at most n lines of at most width columns, at spaces
// where it can; lines after the first are indented four columns more than
// the first, and the last is cut with "…" if s does not fit.
func wrap(s string, n int) []string {
	if s == "" {
		return nil
	}
	indent := strings.Repeat(" ", len(s)-len(strings.TrimLeft(s, " "))+4)
	var out []string
	for len(out) < n {
		if utf8.RuneCountInString(s) <= width || len(out) == n-1 {
			return append(out, cut(s, width))
		}
		rs := []rune(s)
		at := width
		if sp := strings.LastIndexByte(string(rs[:width+1]), ' '); sp > len(indent) {
			at = utf8.RuneCountInString(string(rs[:width+1])[:sp])
		}
		out = append(out, strings.TrimRight(string(rs[:at]), " "))
		s = indent + strings.TrimLeft(string(rs[at:]), " ")
	}
	return out
}

// cut shortens s to n runes, its last one "…" if anything was cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	return string([]rune(s)[:n-1]) + "…"
}

// plural counts n things: "1 server", "2 servers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
