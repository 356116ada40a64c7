package main

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe returns s with every character a terminal would act on written
// as an escape (\x1b, \r, \u202e): what a server wrote (a tool's result,
// a description, a log message, an error) is shown, never obeyed, so it
// cannot set the window title, move the cursor, clear or rewrite what the
// screen shows, or reorder a line. Escaped are the C0 controls (but
// newline and tab where keepLines says so), DEL, the C1 controls, the
// bidirectional embeddings, overrides and isolates, and bytes that are not
// UTF-8. A backslash stays as it is: the escapes are for reading, not for
// reversing.
func termSafe(s string, keepLines bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size, keepLines) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s // the common case: nothing to escape, nothing copied
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, size, keepLines):
			b.WriteString(s[i : i+size])
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// unsafeRune reports whether a terminal would act on r (of size bytes in
// its string).
func unsafeRune(r rune, size int, keepLines bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return !keepLines
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// jsonSafe escapes in JSON text what encoding/json leaves raw and a
// terminal would act on (DEL, the C1 controls, the bidirectional
// controls), as \u escapes: the same JSON to a program, inert on a
// terminal. encoding/json escapes the C0 controls itself.
func jsonSafe(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && unsafeRune(r, size, true) {
			break
		}
		i += size
	}
	if i == len(b) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 8)
	out.Write(b[:i])
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && unsafeRune(r, size, true) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}
