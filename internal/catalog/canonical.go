package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// digest is a sha256 sum. Catalogs keep digests rather than canonical bytes:
// they are compared on every publish and 32 bytes is all a comparison needs.
type digest = [sha256.Size]byte

// canonicalJSON encodes v as JSON whose bytes depend only on its content: object
// keys sorted, no insignificant whitespace, numbers kept verbatim. Go maps
// already marshal sorted, but mcp-go's schemas marshal their properties in the
// order the server sent them (PropertyOrder), so the value is decoded to a
// generic tree and encoded again; property order is not part of a tool's
// meaning and must not change its hash.
//
// A value that cannot be marshalled (a tool with both InputSchema and
// RawInputSchema, a resource template with a nil template) still needs a
// stable, distinct encoding so that the catalog can be published and compared;
// it becomes {"$unencodable": "<type>: <error>"}, which the name alone would
// not distinguish, but a broken entry is broken on every fetch alike.
func canonicalJSON(v any) []byte {
	raw, err := safeMarshal(v)
	if err == nil {
		if out, _, ok := canonicalize(make([]byte, 0, len(raw)), raw, 0); ok {
			return out
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err = dec.Decode(&tree); err == nil {
			var out []byte
			if out, err = json.Marshal(tree); err == nil {
				return out
			}
		}
	}
	out, _ := json.Marshal(map[string]string{"$unencodable": fmt.Sprintf("%T: %v", v, err)})
	return out
}

// canonicalize appends to dst the canonical encoding of the JSON value that
// starts at src[i] (after any whitespace), the bytes decoding it to a
// generic tree and encoding that again would give, and returns the index
// after the value. It is the fast path of canonicalJSON: it sorts object
// keys and re-encodes only the strings whose encoding could change (those
// with escapes, non-ASCII bytes or characters encoding/json escapes), and
// copies everything else as it is, so that sealing a catalog costs one
// json.Marshal rather than three passes. It reports false for what it does
// not handle (an object with a key twice, malformed input); the caller then
// takes the slow path.
func canonicalize(dst, src []byte, i int) ([]byte, int, bool) {
	i = skipSpace(src, i)
	if i >= len(src) {
		return dst, i, false
	}
	switch c := src[i]; {
	case c == '{':
		return canonicalObject(dst, src, i)
	case c == '[':
		dst = append(dst, '[')
		i = skipSpace(src, i+1)
		if i < len(src) && src[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for {
			var ok bool
			if dst, i, ok = canonicalize(dst, src, i); !ok {
				return dst, i, false
			}
			i = skipSpace(src, i)
			if i >= len(src) {
				return dst, i, false
			}
			switch src[i] {
			case ',':
				dst = append(dst, ',')
				i++
			case ']':
				return append(dst, ']'), i + 1, true
			default:
				return dst, i, false
			}
		}
	case c == '"':
		end, simple, ok := scanString(src, i)
		if !ok {
			return dst, i, false
		}
		if simple {
			return append(dst, src[i:end]...), end, true
		}
		var str string
		if json.Unmarshal(src[i:end], &str) != nil {
			return dst, i, false
		}
		enc, err := json.Marshal(str)
		if err != nil {
			return dst, i, false
		}
		return append(dst, enc...), end, true
	default:
		// A number or a literal: encoding/json writes them back as they
		// came (numbers are decoded as json.Number). Compact input ends them
		// at a delimiter.
		j := i
		for j < len(src) && !delimiter(src[j]) {
			j++
		}
		if j == i || !validScalar(src[i:j]) {
			return dst, i, false
		}
		return append(dst, src[i:j]...), j, true
	}
}

// canonicalObject is canonicalize of the object at src[i]: its members
// sorted by key, each value canonical. The members are written to dst as
// they come, nested objects included, and moved only if they came out of
// order: encoding/json writes maps and most structs sorted already.
func canonicalObject(dst, src []byte, i int) ([]byte, int, bool) {
	type member struct {
		key      []byte // decoded, to sort by, as encoding/json sorts map keys
		from, to int    // the member's canonical bytes in dst
	}
	var (
		inline  [16]member
		members = inline[:0]
		start   = len(dst)
	)
	dst = append(dst, '{')
	i = skipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return append(dst, '}'), i + 1, true
	}
	for {
		i = skipSpace(src, i)
		if i >= len(src) || src[i] != '"' {
			return dst, i, false
		}
		end, simple, ok := scanString(src, i)
		if !ok {
			return dst, i, false
		}
		if len(members) > 0 {
			dst = append(dst, ',')
		}
		from := len(dst)
		var key []byte
		if simple {
			key = src[i+1 : end-1]
			dst = append(dst, src[i:end]...)
		} else {
			var k string
			if json.Unmarshal(src[i:end], &k) != nil {
				return dst, i, false
			}
			enc, err := json.Marshal(k)
			if err != nil {
				return dst, i, false
			}
			key = []byte(k)
			dst = append(dst, enc...)
		}
		i = skipSpace(src, end)
		if i >= len(src) || src[i] != ':' {
			return dst, i, false
		}
		dst = append(dst, ':')
		if dst, i, ok = canonicalize(dst, src, i+1); !ok {
			return dst, i, false
		}
		members = append(members, member{key: key, from: from, to: len(dst)})
		i = skipSpace(src, i)
		if i >= len(src) {
			return dst, i, false
		}
		if src[i] == '}' {
			i++
			break
		}
		if src[i] != ',' {
			return dst, i, false
		}
		i++
	}
	inOrder := true
	for k := 1; k < len(members); k++ {
		switch bytes.Compare(members[k-1].key, members[k].key) {
		case 0:
			return dst, i, false // decoding keeps the last: the slow path knows which
		case 1:
			inOrder = false
		}
	}
	if !inOrder {
		slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		for k := 1; k < len(members); k++ {
			if bytes.Equal(members[k-1].key, members[k].key) {
				return dst, i, false
			}
		}
		body := slices.Clone(dst[start+1:])
		dst = dst[:start+1]
		for k, m := range members {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, body[m.from-start-1:m.to-start-1]...)
		}
	}
	return append(dst, '}'), i, true
}

// scanString finds the end of the string that starts at src[i] (the index
// after its closing quote), and whether its bytes are all printable ASCII
// that encoding/json writes as they are: no escape, no '<', '>' or '&'.
func scanString(src []byte, i int) (end int, simple, ok bool) {
	simple = true
	for j := i + 1; j < len(src); j++ {
		switch c := src[j]; {
		case c == '"':
			return j + 1, simple, true
		case c == '\\':
			simple = false
			j++
		case !verbatim(c):
			simple = false
		}
	}
	return 0, false, false
}

// verbatim reports whether encoding/json writes byte c of a string as it is:
// printable ASCII other than the quote, the backslash and the three it
// escapes for HTML.
func verbatim(c byte) bool {
	return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// delimiter reports whether c ends a number or literal.
func delimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ':', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\r' || src[i] == '\n') {
		i++
	}
	return i
}

// validScalar reports whether b is a JSON number or literal.
func validScalar(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	return json.Valid(b) && (b[0] == '-' || b[0] >= '0' && b[0] <= '9')
}

// safeMarshal is json.Marshal that turns a panic into an error: mcp-go's
// URITemplate.MarshalJSON dereferences a nil template, and a malformed entry
// from one server must not crash the host.
func safeMarshal(v any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("marshal panicked: %v", r)
		}
	}()
	return json.Marshal(v)
}

// hashList hashes the canonical encoding of a list treated as a set: its
// elements' canonical encodings sorted bytewise, as a JSON array. Servers are
// free to list things in any order (many iterate a map), and a reordering is
// not a change. It returns the sha256 of that array and of each element, in
// list order, and writes the array to doc too. The elements are encoded one
// after another into one buffer, and the array is never built whole.
func hashList[T any](items []T, doc hash.Hash) (sum digest, perItem []digest) {
	perItem = make([]digest, len(items))
	ends := make([]int, len(items))
	buf := make([]byte, 0, 256*len(items))
	for i := range items {
		from := len(buf)
		buf = appendCanonical(buf, &items[i])
		ends[i] = len(buf)
		perItem[i] = sha256.Sum256(buf[from:])
	}
	enc := make([][]byte, len(items))
	start := 0
	for i, end := range ends {
		enc[i], start = buf[start:end], end
	}
	slices.SortFunc(enc, bytes.Compare)
	h := sha256.New()
	write := func(b []byte) {
		h.Write(b)
		doc.Write(b)
	}
	write(punct[0:1])
	for i, e := range enc {
		if i > 0 {
			write(punct[1:2])
		}
		write(e)
	}
	write(punct[2:3])
	h.Sum(sum[:0])
	return sum, perItem
}

// punct is the punctuation hashList writes, kept in one array so that
// writing it through an interface does not allocate.
var punct = []byte("[,]")

// appendCanonical appends canonicalJSON(v) to dst, a tool by
// appendCanonicalTool.
func appendCanonical(dst []byte, v any) []byte {
	if t, ok := v.(*mcp.Tool); ok {
		if out, ok := appendCanonicalTool(dst, t); ok {
			return out
		}
	}
	return append(dst, canonicalJSON(v)...)
}
