package fleet

import (
	"fmt"
	"strings"

	"github.com/mcpfleet/mcpfleet/client"
)

// The rules a ${user:NAME} value must keep, by where it stands. A user's
// values come from the host's directory, and the user id often from the
// user: neither may reach beyond the user's own place in a URL, a file
// system or a command line.
//
//   - In a URL ("url", "httpUrl" and the oauth block's URLs): in the path,
//     the query, the fragment or the userinfo, the value is
//     percent-encoded (every byte but the unreserved letters, digits,
//     "-", ".", "_" and "~"), so it stays one path segment or one query
//     value ("mallory/../alice" is "mallory%2F..%2Falice"); "." and ".."
//     are refused in a path. In the authority (host, port, userinfo) it
//     must be letters, digits and "-" (one DNS label); in the scheme it is
//     refused.
//   - In a header value and in an oauth block's client id, secret and
//     scopes: any text but control characters (a value cannot add a
//     header).
//   - In an env value: any text but NUL.
//   - In the description: any text but control characters.
//   - Everywhere else (command, args, cwd, envFile, the oauth block's
//     file names, tool patterns, ...): a name, not a path: non-empty, not
//     ".", and holding no "/", "\", "..", NUL or control character; an
//     argument that starts with the value may not start with "-" (an
//     option).
//
// Errors name the variable and say which rule, never the value.
func fit(kind, name, v string, at client.VariableUse) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("the value of ${%s:%s} %s", kind, name, fmt.Sprintf(format, args...))
	}
	switch {
	case urlField(at.Field):
		switch urlPart(at.Before) {
		case "scheme":
			return "", fmt.Errorf("${%s:%s} may not stand in a URL's scheme", kind, name)
		case "host":
			if v == "" || strings.IndexFunc(v, func(r rune) bool { return !label(r) }) >= 0 {
				return bad("stands in a URL's host and may hold only letters, digits and \"-\"")
			}
			return v, nil
		case "path":
			if v == "." || v == ".." {
				return bad("stands in a URL's path and may not be %q", v)
			}
		}
		return escape(v), nil
	case strings.HasPrefix(at.Field, "env."):
		if strings.ContainsRune(v, 0) {
			return bad("goes to an environment variable and may not hold NUL")
		}
		return v, nil
	case textField(at.Field):
		if strings.IndexFunc(v, control) >= 0 {
			return bad("may not hold control characters (a line break, NUL, ...)")
		}
		return v, nil
	}
	switch {
	case v == "" || v == ".":
		return bad("is %q, and stands in a command, an argument or a file name", v)
	case strings.ContainsAny(v, `/\`) || strings.Contains(v, ".."):
		return bad(`stands in a command, an argument or a file name and may not hold "/", "\", or ".."`)
	case strings.IndexFunc(v, control) >= 0:
		return bad("stands in a command, an argument or a file name and may not hold control characters (NUL, a line break, ...)")
	case strings.HasPrefix(at.Field, "args[") && at.Before == "" && v[0] == '-':
		return bad(`starts an argument and may not start with "-" (it would be an option)`)
	}
	return v, nil
}

// urlField reports whether field is a URL the config parses.
func urlField(field string) bool {
	switch field {
	case "url", "httpUrl", "oauth.redirectUri", "oauth.clientMetadataUrl", "oauth.issuer", "oauth.idpTokenEndpoint":
		return true
	}
	return false
}

// textField reports whether field is free text, sent as it is: a header
// value, a client id, a secret, a scope.
func textField(field string) bool {
	switch {
	case strings.HasPrefix(field, "headers."), strings.HasPrefix(field, "oauth.scopes"):
		return true
	}
	switch field {
	case "description", "oauth.clientId", "oauth.clientSecret", "oauth.idpClientId", "oauth.idpClientSecret", "oauth.clientName":
		return true
	}
	return false
}

// urlPart names the part of a URL whose text starts with before:
// "scheme", "host" (the authority: a userinfo or a port as well),
// "path", "query" or "fragment".
func urlPart(before string) string {
	_, rest, ok := strings.Cut(before, "://")
	if !ok {
		return "scheme"
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		switch {
		case strings.Contains(rest[i:], "#"):
			return "fragment"
		case strings.Contains(rest[i:], "?"):
			return "query"
		}
		return "path"
	}
	return "host"
}

// escape percent-encodes every byte of s but the unreserved ones (RFC
// 3986): what stays is a literal in every part of a URL.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if c < 0x80 && (label(rune(c)) || c == '.' || c == '_' || c == '~') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// label reports whether r may stand in a DNS label: an ASCII letter, a
// digit or "-".
func label(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-'
}

// control reports whether r is a control character (C0, DEL, C1).
func control(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }
