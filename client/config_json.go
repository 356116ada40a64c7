package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpfleet/mcpfleet/internal/editdist"
)

// stripJSONC blanks out what JSON with comments allows and JSON does not:
// // and /* */ comments, and a comma before a closing } or ]. VS Code's
// mcp.json and Gemini CLI's settings.json are read that way, and their
// documentation's own examples carry comments. Every byte removed becomes a
// space (a newline stays a newline), so offsets, lines and columns in an
// error still point into the file as written.
func stripJSONC(data []byte) []byte {
	if !bytes.Contains(data, []byte("/")) && !bytes.Contains(data, []byte(",")) {
		return data
	}
	out := bytes.Clone(data)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	comma := -1 // a comma not yet followed by anything but space and comments
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			comma = -1
			i = skipString(out, i)
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out // unterminated: leave it for the JSON error to name
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		case c == ',':
			comma = i
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			comma = -1
		}
	}
	return out
}

// skipString returns the index of the quote that closes the JSON string
// opened at data[open], or the last index if it is not closed.
func skipString(data []byte, open int) int {
	for i := open + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		case '\n':
			return i // JSON strings do not span lines; let the parser say so
		}
	}
	return len(data) - 1
}

// syntaxError describes a JSON syntax error in data as a person looks for
// it: line and column, the line itself with its string values hidden (they
// may be tokens), and a caret under the column.
func syntaxError(source string, data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("mcpfleet: %s: not a JSON object: %w", source, err)
	}
	// Offset counts the bytes read, the bad one included; at the end of
	// the input it points past the last byte.
	off := min(max(int(se.Offset)-1, 0), len(data))
	if strings.Contains(se.Error(), "unexpected end") {
		// Point just past the last thing written.
		off = len(bytes.TrimRight(data, " \t\r\n"))
	}
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	end := bytes.IndexByte(data[start:], '\n')
	if end < 0 {
		end = len(data) - start
	}
	line := bytes.Count(data[:start], []byte("\n")) + 1
	text := strings.TrimRight(string(data[start:start+end]), "\r")
	col := utf8.RuneCount(data[start:off]) + 1
	shown, caret := excerpt(text, col)
	gutter := fmt.Sprintf("%d", line)
	return fmt.Errorf("mcpfleet: %s: line %d, column %d: invalid JSON: %s\n  %s | %s\n  %s | %s^",
		source, line, col, se.Error(), gutter, shown, strings.Repeat(" ", len(gutter)), caret)
}

// excerptWidth bounds the part of a long line an error shows.
const excerptWidth = 80

// excerpt returns the line as an error shows it, string values replaced by
// "…" and at most excerptWidth runes around column col, and the run of
// blanks (tabs kept, so that it lines up) that puts a caret under col.
func excerpt(line string, col int) (shown, pad string) {
	rs := []rune(line)
	var out []rune
	at := -1 // index in out of the rune at col
	for i := 0; i < len(rs); i++ {
		if i == col-1 {
			at = len(out)
		}
		if rs[i] != '"' {
			out = append(out, rs[i])
			continue
		}
		// A string: find its end, and whether a colon follows (a key).
		j := i + 1
		for j < len(rs) && rs[j] != '"' {
			if rs[j] == '\\' {
				j++
			}
			j++
		}
		k := j + 1
		for k < len(rs) && (rs[k] == ' ' || rs[k] == '\t') {
			k++
		}
		isKey := j < len(rs) && k < len(rs) && rs[k] == ':'
		if isKey || j == i+1 {
			if j >= len(rs) {
				j = len(rs) - 1
			}
			for m := i; m <= j; m++ {
				if m == col-1 {
					at = len(out)
				}
				out = append(out, rs[m])
			}
			i = j
			continue
		}
		if col-1 > i && col-1 <= j {
			at = len(out) + 1 // on the hidden text
		}
		out = append(out, '"', '…')
		if j < len(rs) {
			out = append(out, '"')
		}
		i = j
	}
	if at < 0 {
		at = len(out)
	}
	from := 0
	if len(out) > excerptWidth {
		from = max(0, min(at-excerptWidth/2, len(out)-excerptWidth))
	}
	to := min(len(out), from+excerptWidth)
	var b, p strings.Builder
	if from > 0 {
		b.WriteRune('…')
		p.WriteRune(' ')
	}
	b.WriteString(string(out[from:to]))
	if to < len(out) {
		b.WriteRune('…')
	}
	for _, r := range out[from:at] {
		if r == '\t' {
			p.WriteRune('\t')
		} else {
			p.WriteRune(' ')
		}
	}
	return b.String(), p.String()
}

// unknownKey reports key as unknown in an object whose keys are known,
// suggesting the nearest of them when one is close enough to be a typo.
func (p *configParser) unknownKey(server, field, key string, known []string) {
	if s := suggest(key, known); s != "" {
		p.errorf(server, field, "unknown key (did you mean %q?)", s)
		return
	}
	p.errorf(server, field, "unknown key (want one of %s)", strings.Join(known, ", "))
}

// foreignKey reports key, unknown at the top (server "") or in server's
// entry, to WithUnknownKeys' report when there is one and the key is no
// typo of a known one; else it is an unknown key.
func (p *configParser) foreignKey(server, key string, known []string) {
	if p.onUnknown != nil && suggest(key, known) == "" {
		p.onUnknown(server, key)
		return
	}
	p.unknownKey(server, key, key, known)
}

// suggest returns the known key nearest to key, if it is within a typo's
// distance: a different case, or at most a third of its length edited
// (one edit for a short key).
func suggest(key string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		if d := editdist.Distance(strings.ToLower(key), strings.ToLower(k), 64); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD >= 0 && bestD <= max(1, utf8.RuneCountInString(best)/3) {
		return best
	}
	return ""
}
