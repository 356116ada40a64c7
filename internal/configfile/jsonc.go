package configfile

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A config file is edited by byte ranges (see Edit): the parse below keeps
// where each value and each member lies in the file, so that a change
// replaces, inserts or deletes those bytes alone, and the file's comments
// (VS Code's mcp.json is JSON with comments), its indentation, its key
// order and everything mcpfleet does not know stay as they were.

// node is a JSON value of a file, with its place in it.
type node struct {
	kind       byte // '{', '[', '"', or 'v' for a number, true, false or null
	start, end int  // the value's bytes: data[start:end]
	members    []member
	elems      []*node
	str        string // a string's value
}

// member is one key and value of an object.
type member struct {
	key      string
	keyStart int // where the key's opening quote is
	value    *node
	// comma is the position of the comma after the value, or -1 when the
	// member is the last one without a trailing comma.
	comma int
}

// lookup returns the member of an object named key, and its index.
func (n *node) lookup(key string) (*member, int) {
	for i := range n.members {
		if n.members[i].key == key {
			return &n.members[i], i
		}
	}
	return nil, -1
}

// jsoncParser parses JSON with comments (// and /* */) and trailing commas,
// as VS Code reads its settings files.
type jsoncParser struct {
	data []byte
	pos  int
}

// parseJSONC parses data into its tree of nodes.
func parseJSONC(data []byte) (*node, error) {
	p := &jsoncParser{data: data}
	p.skip()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.pos != len(p.data) {
		return nil, p.errorf("text after the end of the JSON value")
	}
	return n, nil
}

func (p *jsoncParser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(string(p.data[:min(p.pos, len(p.data))]), "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

// skip passes whitespace and comments.
func (p *jsoncParser) skip() {
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			end := strings.Index(string(p.data[p.pos+2:]), "*/")
			if end < 0 {
				p.pos = len(p.data)
				return
			}
			p.pos += 2 + end + 2
		default:
			return
		}
	}
}

func (p *jsoncParser) value() (*node, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of the file")
	}
	switch c := p.data[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		start := p.pos
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &node{kind: '"', start: start, end: p.pos, str: s}, nil
	default:
		start := p.pos
		for p.pos < len(p.data) && strings.IndexByte(",]} \t\r\n/", p.data[p.pos]) < 0 {
			p.pos++
		}
		if !json.Valid(p.data[start:p.pos]) {
			p.pos = start
			return nil, p.errorf("not a JSON value")
		}
		return &node{kind: 'v', start: start, end: p.pos}, nil
	}
}

func (p *jsoncParser) string() (string, error) {
	start := p.pos
	p.pos++
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '"':
			p.pos++
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				p.pos = start
				return "", p.errorf("a string that is not JSON: %v", err)
			}
			return s, nil
		case '\n':
			p.pos = start
			return "", p.errorf("a string that does not end on its line")
		}
		p.pos++
	}
	p.pos = start
	return "", p.errorf("a string that does not end")
}

func (p *jsoncParser) object() (*node, error) {
	n := &node{kind: '{', start: p.pos}
	p.pos++
	for {
		p.skip()
		if p.pos >= len(p.data) {
			return nil, p.errorf("an object that does not end")
		}
		if p.data[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if len(n.members) > 0 && n.members[len(n.members)-1].comma < 0 {
			return nil, p.errorf("a comma is missing between two members")
		}
		if p.data[p.pos] != '"' {
			return nil, p.errorf("a key must be a string")
		}
		m := member{keyStart: p.pos, comma: -1}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		m.key = key
		p.skip()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("a colon is missing after the key %q", key)
		}
		p.pos++
		p.skip()
		if m.value, err = p.value(); err != nil {
			return nil, err
		}
		p.skip()
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			m.comma = p.pos
			p.pos++
		}
		n.members = append(n.members, m)
	}
}

func (p *jsoncParser) array() (*node, error) {
	n := &node{kind: '[', start: p.pos}
	p.pos++
	comma := true
	for {
		p.skip()
		if p.pos >= len(p.data) {
			return nil, p.errorf("an array that does not end")
		}
		if p.data[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if !comma {
			return nil, p.errorf("a comma is missing between two elements")
		}
		e, err := p.value()
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, e)
		p.skip()
		comma = p.pos < len(p.data) && p.data[p.pos] == ','
		if comma {
			p.pos++
		}
	}
}

// walkStrings calls fn with every string value under n (keys excepted).
func walkStrings(n *node, fn func(string)) {
	switch n.kind {
	case '"':
		fn(n.str)
	case '{':
		for _, m := range n.members {
			walkStrings(m.value, fn)
		}
	case '[':
		for _, e := range n.elems {
			walkStrings(e, fn)
		}
	}
}
