package frame

import "bytes"

// MessageID returns the JSON-RPC id of a message too large to keep, from
// what was kept of it: its start (head), or, where the id comes after the
// large value (TypeScript clients put it last), its end (tail). It is nil
// when neither holds it.
func MessageID(head, tail []byte) []byte {
	if _, id := scanHead(head); id != nil {
		return id
	}
	return tailID(bytes.TrimRight(tail, "\r\n"))
}
