package frame

import (
	"bytes"
	"regexp"
)

// scanHead reads the top-level keys of the start of a JSON object: whether
// it is a response (it has "result" or "error"), and its "id", if that
// came before the text ran out.
func scanHead(b []byte) (response bool, id []byte) {
	var (
		depth            int
		inString, escape bool
		keyStart         = -1
		key              string
		inValue          bool // after a top-level key's colon
	)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch {
			case escape:
				escape = false
			case c == '\\':
				escape = true
			case c == '"':
				inString = false
				if keyStart >= 0 {
					key = string(b[keyStart:i])
					keyStart = -1
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 1 {
				inValue = false
			}
		case ':':
			if depth == 1 {
				inValue = true
				if key == "result" || key == "error" {
					response = true
				}
			}
		case '"':
			inString = true
			switch {
			case depth == 1 && !inValue:
				keyStart = i + 1
			case depth == 1 && key == "id" && id == nil:
				if id = stringValue(b[i:]); id == nil {
					return response, nil // cut inside the id
				}
				i += len(id) - 1
				inString = false
			}
		default:
			if depth == 1 && inValue && key == "id" && id == nil {
				j := i
				for j < len(b) && bytes.IndexByte([]byte(",} \t\r\n"), b[j]) < 0 {
					j++
				}
				if j == len(b) {
					return response, nil // cut inside the id
				}
				id = b[i:j]
				i = j - 1
			}
		}
		if response && id != nil {
			return response, id
		}
	}
	return response, id
}

// stringValue returns the JSON string at the start of b, quotes included,
// or nil if it does not end within b.
func stringValue(b []byte) []byte {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[:i+1]
		}
	}
	return nil
}

// tailPattern matches the end of a JSON object whose id comes after the
// large value, followed only by scalar members: `,"id":3}`,
// `,"id":"a","jsonrpc":"2.0"}`. A message's last '}' closes the top-level
// object and the members after the id are scalars, so the id is a member
// of the top-level object.
var tailPattern = regexp.MustCompile(`[,{]\s*"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")` +
	`(?:\s*,\s*"(?:[^"\\]|\\.)*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|-?[0-9.eE+-]+|true|false|null))*\s*}\s*$`)

// tailID finds the id at the end of a discarded message, if it is there.
func tailID(b []byte) []byte {
	m := tailPattern.FindSubmatchIndex(b)
	if m == nil {
		return nil
	}
	return b[m[2]:m[3]]
}
