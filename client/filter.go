package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/catalog"
	"github.com/mcpfleet/mcpfleet/lifecycle"
)

// ToolFilter decides which of a server's tools the host sees. A tool is
// published when its name matches an entry of Allow (or Allow is empty)
// and matches no entry of Deny: Deny wins over Allow. The zero ToolFilter
// publishes every tool.
//
// An entry is a tool name, matched exactly, or a glob in the syntax of
// path.Match: '*' matches any run of characters, '?' any one character,
// "[a-z]" one of a class ("[^a-z]" one outside it), and '\' quotes the
// next character. Unlike path.Match, a tool name is a plain string: no
// character in it is special, '/' included (path.Match, used before,
// stopped '*' and '?' at '/', so deny "delete*" let "delete/all"
// through). Entries are matched against
// the server's own tool names, not the qualified names of the View. An
// empty entry, or a malformed one ("[a", a trailing '\'), makes the spec
// invalid.
//
// A filter is the host's, not the server's: it is applied on every
// publish of the server's catalog (the first one, each list_changed
// refresh, a catalog from the cache), and changing it (SetToolFilter, or
// Apply with a changed filter) republishes the catalog the server last
// sent through the new filter, with no request to the server, no
// reconnect and no new generation. A filtered tool is absent from the
// View and from catalog events, and a call to it fails with a
// *ToolFilteredError, which matches ErrToolNotFound.
//
// Filters cover tools only: prompts, resources and resource templates are
// published as the server offers them.
type ToolFilter struct {
	// Allow, when not empty, publishes only the tools matching one of its
	// entries.
	Allow []string
	// Deny hides the tools matching one of its entries, allowed or not.
	Deny []string
}

// IsZero reports whether f publishes every tool.
func (f ToolFilter) IsZero() bool { return len(f.Allow) == 0 && len(f.Deny) == 0 }

// Validate reports the malformed entries of f, each named by its list and
// index.
func (f ToolFilter) Validate() error {
	var errs []error
	for _, l := range []struct {
		name    string
		entries []string
	}{{"allow", f.Allow}, {"deny", f.Deny}} {
		for i, p := range l.entries {
			if err := validPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("spec: toolFilter: %s[%d]: %w", l.name, i, err))
			}
		}
	}
	return errors.Join(errs...)
}

// validPattern checks one entry of a filter.
func validPattern(p string) error {
	if p == "" {
		return errors.New("empty entry")
	}
	if err := checkGlob(p); err != nil {
		return fmt.Errorf("invalid pattern %q: %w", p, err)
	}
	return nil
}

// Allows reports whether f publishes the tool named tool.
func (f ToolFilter) Allows(tool string) bool { return f.refusal(tool) == nil }

// refusal returns why f keeps tool out, or nil if it lets it in.
func (f ToolFilter) refusal(tool string) *ToolFilteredError {
	for _, p := range f.Deny {
		if matchPattern(p, tool) {
			return &ToolFilteredError{Tool: tool, List: "deny", Entry: p}
		}
	}
	if len(f.Allow) == 0 {
		return nil
	}
	for _, p := range f.Allow {
		if matchPattern(p, tool) {
			return nil
		}
	}
	return &ToolFilteredError{Tool: tool, List: "allow"}
}

// matchPattern matches one entry; a malformed one (refused by Validate)
// matches nothing.
func matchPattern(p, tool string) bool {
	if p == tool {
		return true
	}
	return checkGlob(p) == nil && matchGlob(p, tool)
}

// errBadGlob is the error of a malformed filter entry.
var errBadGlob = errors.New("syntax error in pattern")

// checkGlob reports whether p is a well-formed glob: every class well
// formed (classLen), no '\' at the end.
func checkGlob(p string) error {
	for i := 0; i < len(p); {
		switch p[i] {
		case '\\':
			if i+1 == len(p) {
				return errBadGlob
			}
			_, n := utf8.DecodeRuneInString(p[i+1:])
			i += 1 + n
		case '[':
			n, ok := classLen(p[i:])
			if !ok {
				return errBadGlob
			}
			i += n
		default:
			i++
		}
	}
	return nil
}

// matchGlob reports whether name matches the well-formed glob p, as a
// plain string. Each of p's items but '*' matches exactly one character,
// so backing up to the last '*' alone finds every match.
func matchGlob(p, name string) bool {
	pi, ni := 0, 0
	star, starNi := -1, 0 // the last '*' of p seen, and where in name it stops for now
	for ni < len(name) {
		r, n := utf8.DecodeRuneInString(name[ni:])
		if pi < len(p) {
			switch p[pi] {
			case '*':
				star, starNi = pi, ni
				pi++
				continue
			case '?':
				pi, ni = pi+1, ni+n
				continue
			case '[':
				m, _ := classLen(p[pi:])
				if inClass(p[pi:pi+m], r) {
					pi, ni = pi+m, ni+n
					continue
				}
			case '\\':
				if lit, m := utf8.DecodeRuneInString(p[pi+1:]); lit == r {
					pi, ni = pi+1+m, ni+n
					continue
				}
			default:
				if lit, m := utf8.DecodeRuneInString(p[pi:]); lit == r {
					pi, ni = pi+m, ni+n
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		// The last '*' takes one more character, and the rest of p tries
		// again after it.
		_, n = utf8.DecodeRuneInString(name[starNi:])
		starNi += n
		pi, ni = star+1, starNi
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// classLen returns the length of the class that starts p ("[...]"), and
// whether it is well formed as path.Match has it: closed, not empty, no
// unquoted '-' or ']' where a character is due.
func classLen(p string) (int, bool) {
	i := 1
	if i < len(p) && p[i] == '^' {
		i++
	}
	for items := 0; ; items++ {
		if i < len(p) && p[i] == ']' && items > 0 {
			return i + 1, true
		}
		_, n, ok := classChar(p[i:])
		if !ok {
			return 0, false
		}
		i += n
		if i < len(p) && p[i] == '-' {
			_, m, ok := classChar(p[i+1:])
			if !ok {
				return 0, false
			}
			i += 1 + m
		}
	}
}

// classChar reads one character of a class, '\' quoting the next.
func classChar(p string) (rune, int, bool) {
	if p == "" || p[0] == '-' || p[0] == ']' {
		return 0, 0, false
	}
	if p[0] == '\\' {
		if len(p) == 1 {
			return 0, 0, false
		}
		r, n := utf8.DecodeRuneInString(p[1:])
		return r, 1 + n, true
	}
	r, n := utf8.DecodeRuneInString(p)
	return r, n, true
}

// inClass reports whether r is in the well-formed class c ("[...]").
func inClass(c string, r rune) bool {
	c = c[1 : len(c)-1]
	negated := c[0] == '^'
	if negated {
		c = c[1:]
	}
	in := false
	for len(c) > 0 {
		lo, n, _ := classChar(c)
		c = c[n:]
		hi := lo
		if len(c) > 0 && c[0] == '-' {
			var m int
			hi, m, _ = classChar(c[1:])
			c = c[1+m:]
		}
		in = in || lo <= r && r <= hi
	}
	return in != negated
}

// String describes f as "allow [a b*]; deny [c]", leaving out an empty
// list; the zero filter is "all tools".
func (f ToolFilter) String() string {
	var parts []string
	if len(f.Allow) > 0 {
		parts = append(parts, "allow ["+strings.Join(f.Allow, " ")+"]")
	}
	if len(f.Deny) > 0 {
		parts = append(parts, "deny ["+strings.Join(f.Deny, " ")+"]")
	}
	if len(parts) == 0 {
		return "all tools"
	}
	return strings.Join(parts, "; ")
}

// equal reports whether f and g are the same lists (nil and empty alike).
func (f ToolFilter) equal(g ToolFilter) bool {
	return slices.Equal(f.Allow, g.Allow) && slices.Equal(f.Deny, g.Deny)
}

// clone returns f with lists of its own, so that the caller's slices can
// change without changing the slot's filter.
func (f ToolFilter) clone() ToolFilter {
	return ToolFilter{Allow: slices.Clip(slices.Clone(f.Allow)), Deny: slices.Clip(slices.Clone(f.Deny))}
}

// apply returns c with the tools f filters out left out: c itself when f
// keeps them all, or a sealed copy of the same generation.
func (f ToolFilter) apply(c *catalog.Catalog) *catalog.Catalog {
	if f.IsZero() || c == nil {
		return c
	}
	kept := make([]mcp.Tool, 0, len(c.Tools))
	for i := range c.Tools {
		if f.Allows(c.Tools[i].Name) {
			kept = append(kept, c.Tools[i])
		}
	}
	if len(kept) == len(c.Tools) {
		return c
	}
	return c.WithTools(kept)
}

// ToolFilteredError is the error (inside a *ServerError) of a call to a
// tool that the server's ToolFilter keeps out of the View. It matches
// ErrToolNotFound: to the host the tool is not there.
type ToolFilteredError struct {
	Tool string
	// List is the list that filtered the tool out: "deny" when it matches
	// a Deny entry (which is Entry), "allow" when it matches no Allow
	// entry.
	List  string
	Entry string
}

func (e *ToolFilteredError) Error() string {
	if e.List == "deny" {
		return fmt.Sprintf("%v: %q is filtered out by the server's tool filter: it matches deny entry %q",
			ErrToolNotFound, e.Tool, e.Entry)
	}
	return fmt.Sprintf("%v: %q is filtered out by the server's tool filter: it matches no allow entry",
		ErrToolNotFound, e.Tool)
}

// Is makes errors.Is(err, ErrToolNotFound) true.
func (e *ToolFilteredError) Is(target error) bool { return target == ErrToolNotFound }

// SetToolFilter replaces the tool filter of server name (see ToolFilter)
// and republishes its catalog through it at once: tools it lets in appear
// in the View, tools it keeps out leave it, and one catalog event says so.
// Nothing is sent to the server: no reconnect, no new generation. A
// server with no catalog published (disabled, not yet connected) takes the
// filter for its next publish.
//
// For a server that came from a config, the filter lasts until the next
// Apply whose entry has another filter than the one set here (the config
// unchanged included): that Apply puts the entry's filter back, as does
// one that restarts the server.
func (m *Manager) SetToolFilter(name string, f ToolFilter) error {
	if err := f.Validate(); err != nil {
		return &ServerError{Server: name, Op: "set tool filter", Err: fmt.Errorf("%w: %w", ErrInvalidSpec, err)}
	}
	s, err := m.slot(name)
	if err != nil {
		return withOp("set tool filter", name, err)
	}
	return withOp("set tool filter", name, s.setToolFilter(f))
}

// ToolFilter returns the tool filter of server name.
func (m *Manager) ToolFilter(name string) (ToolFilter, error) {
	s, err := m.slot(name)
	if err != nil {
		return ToolFilter{}, withOp("tool filter", name, err)
	}
	return s.config().spec.ToolFilter.clone(), nil
}

// setToolFilter gives the slot filter f in a configuration of its own (the
// rest shared with the current one: same limits, same tokens) and
// republishes its catalog through it.
func (s *slot) setToolFilter(f ToolFilter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == lifecycle.Closed {
		return serverError(ErrClosed, s.name, nil)
	}
	cur := s.config()
	if cur.spec.ToolFilter.equal(f) {
		return nil
	}
	next := *cur
	next.spec.ToolFilter = f.clone()
	s.cfg.Store(&next)
	s.republishLocked()
	return nil
}

// publishLocked publishes raw, a catalog as the server sent it, through
// the slot's tool filter, and keeps raw for the next filter change or
// refresh. It reports what Publisher.Publish does.
func (s *slot) publishLocked(raw *catalog.Catalog) (catalog.Diff, bool) {
	cfg := s.config()
	d, ok := s.m.pub.Publish(cfg.spec.ToolFilter.apply(raw), cfg.prefix)
	if ok {
		s.raw = raw
	}
	return d, ok
}

// republishLocked publishes the catalog the server last sent again, as
// the slot's configuration now filters and names it, and emits what
// changed. It does nothing while no catalog is published.
func (s *slot) republishLocked() {
	if s.raw == nil || !s.state.Publishes() {
		return
	}
	if _, ok := s.m.pub.View().Catalog(s.name); !ok {
		return
	}
	if d, ok := s.publishLocked(s.raw); ok && !d.Empty() {
		e := catalogEvent(d)
		e.Cached = s.cached
		s.emitLocked(e)
	}
}

// filteredTool returns the error of a call to tool on server when the
// server's tool filter keeps it out, and nil otherwise (an unknown server
// included: the call reports that itself).
func (m *Manager) filteredTool(server, tool string) error {
	s, err := m.slot(server)
	if err != nil {
		return nil
	}
	if r := s.config().spec.ToolFilter.refusal(tool); r != nil {
		return &ServerError{Server: server, Err: r}
	}
	return nil
}

// filteredQualified returns the error of a call by qualified name to a
// tool that is not in the View because its server's filter keeps it out,
// if that is why. It looks at the tools each server last sent, and, for a
// server that has sent none, takes the name apart by its prefix. It walks
// the servers: it runs only when the View has no such tool.
func (m *Manager) filteredQualified(qualified string) error {
	sep := m.opts.naming.SeparatorOrDefault()
	slots, _ := m.slotList()
	for _, s := range slots {
		cfg := s.config()
		f := cfg.spec.ToolFilter
		if f.IsZero() {
			continue
		}
		prefix := s.toolPrefix()
		s.mu.Lock()
		raw := s.raw
		s.mu.Unlock()
		if raw == nil {
			if tool, ok := strings.CutPrefix(qualified, prefix+sep); ok && tool != "" {
				if r := f.refusal(tool); r != nil {
					return &ServerError{Server: s.name, Err: r}
				}
			}
			continue
		}
		for i := range raw.Tools {
			name := raw.Tools[i].Name
			if m.opts.naming.Qualify(prefix, name) != qualified {
				continue
			}
			if r := f.refusal(name); r != nil {
				return &ServerError{Server: s.name, Err: r}
			}
		}
	}
	return nil
}

// filteredCountLocked counts the tools of the catalog the server last sent
// that the slot's filter keeps out.
func (s *slot) filteredCountLocked() int {
	f := s.config().spec.ToolFilter
	if s.raw == nil || f.IsZero() {
		return 0
	}
	n := 0
	for i := range s.raw.Tools {
		if !f.Allows(s.raw.Tools[i].Name) {
			n++
		}
	}
	return n
}
