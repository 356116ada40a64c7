// Package redact takes secrets out of URLs and out of the text that quotes
// them: error messages and log records. A server URL may carry a token in
// its query (https://host/mcp?api_key=...) or its userinfo, and net/http,
// mcp-go and net/url all quote the URL they worked on in their errors
// (*url.Error), so redacting String and LogValue alone is not enough: every
// error that leaves a transport, and every log record it writes, goes
// through here.
//
// What is redacted: the userinfo (user and password), every query value
// (the names stay, so a reader still sees which parameters were sent) and
// the fragment. Scheme, host, port and path stay: they say which server.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Mask replaces what is redacted.
const Mask = "xxxxx"

// URL returns raw with its userinfo, query values and fragment replaced by
// Mask. A URL that does not parse is cut the same way by hand: whatever
// follows the first '?' or '#' and whatever precedes an '@' in the
// authority is masked, so nothing a parser might take for a secret
// survives.
func URL(raw string) string {
	if !strings.ContainsAny(raw, "?#@") {
		return raw // nothing to hide: the common case costs no parse
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return byHand(raw)
	}
	if u.User != nil {
		u.User = url.User(Mask)
	}
	if u.RawQuery != "" {
		u.RawQuery = query(u.RawQuery)
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Mask, ""
	}
	out := u.String()
	if !strings.ContainsAny(out, "?#@") {
		return out
	}
	// u.String may re-encode the path in ways that put one of "?#@" back;
	// a second, textual pass is exact for what String produced.
	return byHand(out)
}

// query masks every value of a raw query. Parameters are split on '&'
// only, and a value runs to the next '&': a ';' inside it (which some
// servers take as a separator) is masked with it. A parameter without '=',
// or whose name does not look like one, is masked whole.
func query(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		name, _, found := strings.Cut(p, "=")
		if !found || !isName(name) {
			parts[i] = Mask
			continue
		}
		parts[i] = name + "=" + Mask
	}
	return strings.Join(parts, "&")
}

// isName reports whether a query parameter's name is one to show: short,
// and made of the characters names are made of.
func isName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_-.~%[]+", c) >= 0) {
			return false
		}
	}
	return true
}

// byHand redacts a URL that does not parse, or whose parse could be read
// two ways.
func byHand(raw string) string {
	rest, suffix := raw, ""
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		if rest[i] == '?' {
			suffix = "?" + query(rest[i+1:])
			// The query ends at a '#': its fragment is masked whole.
			if j := strings.IndexByte(rest[i+1:], '#'); j >= 0 {
				suffix = "?" + query(rest[i+1:i+1+j]) + "#" + Mask
			}
		} else {
			suffix = "#" + Mask
		}
		rest = rest[:i]
	}
	prefix := ""
	if i := strings.Index(rest, "://"); i > 0 && isScheme(rest[:i]) {
		prefix, rest = rest[:i+3], rest[i+3:]
	} else if strings.HasPrefix(rest, "//") {
		prefix, rest = "//", rest[2:]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = Mask + authority[i:]
	}
	if prefix == "" && strings.IndexByte(path, '@') >= 0 {
		// No authority to speak of ("user:pass@host/..." with no "//"):
		// anything up to the last '@' may be userinfo.
		return Mask + path[strings.LastIndexByte(path, '@'):] + suffix
	}
	return prefix + authority + path + suffix
}

// isScheme reports whether s is a URL scheme (RFC 3986 section 3.1).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// urlInText finds what looks like an absolute URL in free text: a scheme,
// "://", and everything up to a space, a quote or an angle bracket.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]+`)

// Text returns s with every URL in it redacted: first each of urls, the
// URLs the caller knows s may quote (the server's, which may hold spaces or
// quotes that end a URL found by its shape), wherever it appears, raw or
// quoted as %q would; then whatever else looks like an absolute URL.
func Text(s string, urls ...string) string {
	for _, u := range urls {
		if u == "" {
			continue
		}
		red := URL(u)
		if red == u {
			continue
		}
		s = strings.ReplaceAll(s, u, red)
		if q := strconv.Quote(u); q[1:len(q)-1] != u {
			s = strings.ReplaceAll(s, q[1:len(q)-1], strings.Trim(strconv.Quote(red), `"`))
		}
	}
	if !strings.Contains(s, "://") || !strings.ContainsAny(s, "?#@") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(m string) string {
		if !strings.ContainsAny(m, "?#@") {
			return m
		}
		// Punctuation that closes a sentence or a parenthesis is the
		// text's, not the URL's ("dial http://h/p?k=v: refused").
		end := len(m)
		for end > 0 && strings.IndexByte(".,;:)]}", m[end-1]) >= 0 {
			end--
		}
		return URL(m[:end]) + m[end:]
	})
}

// Error returns err with every URL in its message redacted as Text does,
// urls included; or err itself when its message holds nothing to redact,
// so that an error without a secret keeps its identity. The returned error
// wraps err: errors.Is and errors.As see everything err holds, except that
// errors.As for a *url.Error gets a copy whose URL (and message) is
// redacted.
func Error(err error, urls ...string) error {
	if err == nil {
		return nil
	}
	if r, ok := err.(*redacted); ok && len(urls) == 0 {
		return r
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		urls = append(urls[:len(urls):len(urls)], ue.URL)
	}
	msg := err.Error()
	red := Text(msg, urls...)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err, urls: urls}
}

// redacted is an error with a redacted message.
type redacted struct {
	msg  string
	err  error
	urls []string
}

func (e *redacted) Error() string { return e.msg }

func (e *redacted) Unwrap() error { return e.err }

// As gives errors.As a redacted copy of the *url.Error below, rather than
// the original with the raw URL.
func (e *redacted) As(target any) bool {
	t, ok := target.(**url.Error)
	if !ok {
		return false
	}
	var ue *url.Error
	if !errors.As(e.err, &ue) {
		return false
	}
	*t = &url.Error{Op: ue.Op, URL: URL(ue.URL), Err: Error(ue.Err, e.urls...)}
	return true
}
