package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
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

// listCanon is the canonical encoding of a list treated as a set: its
// elements' canonical encodings sorted bytewise, as a JSON array. Servers are
// free to list things in any order (many iterate a map), and a reordering is
// not a change.
func listCanon[T any](items []T) (canon []byte, perItem []digest) {
	enc := make([][]byte, len(items))
	perItem = make([]digest, len(items))
	for i := range items {
		enc[i] = canonicalJSON(items[i])
		perItem[i] = sha256.Sum256(enc[i])
	}
	sorted := slices.Clone(enc)
	slices.SortFunc(sorted, bytes.Compare)
	canon = append(canon, '[')
	for i, e := range sorted {
		if i > 0 {
			canon = append(canon, ',')
		}
		canon = append(canon, e...)
	}
	canon = append(canon, ']')
	return canon, perItem
}
