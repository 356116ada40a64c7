package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// DefaultSeparator joins a prefix and a tool name when Naming.Separator is
// empty. Two underscores, because one is common inside tool names
// ("create_issue") and would make "a_b_c" ambiguous to a reader.
const DefaultSeparator = "__"

// MaxNameLen is the longest qualified name, the length limit of the tool name
// rule ^[a-zA-Z0-9_-]{1,64}$ that LLM provider APIs apply to tools.
const MaxNameLen = 64

// shortHashLen is the number of hex digits of the suffix that makes a short
// form unique: 48 bits, so that among a million distinct long names the chance
// of two sharing a suffix is below 2e-3, and far lower for realistic fleets; a
// collision that does happen is quarantined like any other, never merged.
const shortHashLen = 12

// Naming says how a server's tool names become qualified names in the View.
// The zero value is ready to use.
type Naming struct {
	// Separator goes between the prefix and the tool name. Defaults to
	// DefaultSeparator ("__"). A separator with characters outside
	// [a-zA-Z0-9_-] makes every name take the short form, so keep to those.
	Separator string
}

// SeparatorOrDefault is the separator in use: Separator, or
// DefaultSeparator when it is empty.
func (n Naming) SeparatorOrDefault() string {
	if n.Separator == "" {
		return DefaultSeparator
	}
	return n.Separator
}

// Qualify returns the qualified name of tool under prefix: prefix, separator,
// tool, when that is a valid tool name for LLM provider APIs (see
// ValidToolName). Otherwise it returns a short form: the same text with every
// character outside [a-zA-Z0-9_-] replaced by '_', cut to leave room, then '-'
// and 12 hex digits of a sha256 of the original prefix and tool. The short form
// is deterministic (the same input gives the same name in every process, so
// a host can cache it) and collision-free in practice: two different
// (prefix, tool) pairs share one only if 48 bits of sha256 collide.
//
// The qualified name is only for the host and the model; calls go to the
// server under the tool's own name.
func (n Naming) Qualify(prefix, tool string) string {
	sep := n.SeparatorOrDefault()
	if l := len(prefix) + len(sep) + len(tool); l >= 1 && l <= MaxNameLen {
		name := prefix + sep + tool
		if ValidToolName(name) {
			return name
		}
	}
	return shortName(prefix, sep, tool)
}

// shortName builds the short form described at Qualify.
func shortName(prefix, sep, tool string) string {
	// Length-prefixed, so ("a_", "b") and ("a", "_b") hash differently even
	// though they read the same once joined. The separator is not hashed:
	// it is the same for every name of a Publisher.
	h := sha256.New()
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], uint64(len(prefix)))
	h.Write(l[:])
	h.Write([]byte(prefix))
	binary.BigEndian.PutUint64(l[:], uint64(len(tool)))
	h.Write(l[:])
	h.Write([]byte(tool))
	var sum [sha256.Size]byte
	suffix := hex.EncodeToString(h.Sum(sum[:0])[:shortHashLen/2])

	room := MaxNameLen - 1 - shortHashLen
	var b strings.Builder
	b.Grow(MaxNameLen)
	for _, s := range [...]string{prefix, sep, tool} {
		for _, r := range s {
			if b.Len() == room {
				break
			}
			if r < utf8.RuneSelf && validByte(byte(r)) {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
	}
	b.WriteByte('-')
	b.WriteString(suffix)
	return b.String()
}

// ValidToolName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$, the tool
// name rule that the LLM provider APIs share. Every name Qualify returns does.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !validByte(name[i]) {
			return false
		}
	}
	return true
}

func validByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
