package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/redact"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://host/mcp", "https://host/mcp"},
		{"https://host/mcp?api_key=s3cret", "https://host/mcp?api_key=xxxxx"},
		{"https://host/mcp?a=1&b=2&c", "https://host/mcp?a=xxxxx&b=xxxxx&xxxxx"},
		{"https://user:pw@host:8443/mcp", "https://xxxxx@host:8443/mcp"},
		{"https://tok@host/mcp", "https://xxxxx@host/mcp"},
		{"https://host/mcp#access_token=s3cret", "https://host/mcp#xxxxx"},
		{"https://host/mcp?k=a;token=s3cret", "https://host/mcp?k=xxxxx"},
		{"https://host/%zz?k=s3cret", "https://host/%zz?k=xxxxx"},          // does not parse
		{"user:pw@host/x?k=s3cret", "xxxxx@host/x?k=xxxxx"},                // no "//"
		{"http://[::1/mcp?k=s3cret#frag", "http://[::1/mcp?k=xxxxx#xxxxx"}, // does not parse
	} {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Text redacts a URL wherever a message quotes it: by shape, and the
// known URL even where its shape would end early.
func TestText(t *testing.T) {
	known := "http://127.0.0.1:1/mcp?api_key=ab cd"
	for _, tc := range []struct{ in, want string }{
		{`Post "http://127.0.0.1:1/mcp?api_key=s3cret": EOF`, `Post "http://127.0.0.1:1/mcp?api_key=xxxxx": EOF`},
		{`dial http://h/p?k=s3cret: refused`, `dial http://h/p?k=xxxxx: refused`},
		{`see (https://u:pw@h/x).`, `see (https://xxxxx@h/x).`},
		{`Post "` + known + `": EOF`, `Post "http://127.0.0.1:1/mcp?api_key=xxxxx": EOF`},
		{`no URL here: a=b?c`, `no URL here: a=b?c`},
	} {
		if got := redact.Text(tc.in, known); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Error redacts the message, keeps what errors.Is finds, and hands
// errors.As a redacted *url.Error; an error without a secret comes back as
// it is.
func TestError(t *testing.T) {
	sentinel := errors.New("boom")
	ue := &url.Error{Op: "Post", URL: "http://h/mcp?api_key=s3cret", Err: sentinel}
	err := redact.Error(fmt.Errorf("failed to send request: %w", ue))
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "api_key=xxxxx") {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, sentinel) {
		t.Error("errors.Is lost the cause")
	}
	var got *url.Error
	if !errors.As(err, &got) || strings.Contains(got.URL, "s3cret") || strings.Contains(got.Error(), "s3cret") {
		t.Errorf("errors.As *url.Error = %v", got)
	}
	if ue.URL != "http://h/mcp?api_key=s3cret" {
		t.Error("the original *url.Error was changed")
	}
	plain := fmt.Errorf("x: %w", sentinel)
	if redact.Error(plain) != plain {
		t.Error("an error with nothing to redact was wrapped")
	}
	if redact.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := redact.Logger(slog.New(slog.NewJSONHandler(&buf, nil)), "http://h/x?k=known secret")
	u, _ := url.Parse("http://h/mcp?token=s3cret1")
	log.With("url", "http://h/mcp?token=s3cret2").WithGroup("g").Info("failed http://h/mcp?token=s3cret3",
		"err", &url.Error{Op: "Get", URL: "http://h/mcp?token=s3cret4", Err: errors.New("EOF")},
		"u", u, slog.Group("sub", "v", "http://u:s3cret5@h/"), "k", "http://h/x?k=known secret")
	out := buf.String()
	for _, s := range []string{"s3cret", "known secret"} {
		if strings.Contains(out, s) {
			t.Errorf("%q logged: %s", s, out)
		}
	}
	if !strings.Contains(out, "token=xxxxx") {
		t.Errorf("no redacted URL in %s", out)
	}
}

// FuzzURL: whatever the URL, no query value, userinfo or fragment of it
// survives redaction, while scheme, host and path do.
func FuzzURL(f *testing.F) {
	for _, s := range []string{
		"https://host/mcp?api_key=s3cret", "http://u:p@h:1/p?a=1&b=2#f", "//u@h/?x", "h/p?k=v",
		"mailto:someone@example.com", "http://[::1]:80/?a=b;c=d", "https://h/%zz?k=vvvv", "http://h/p#a?b=c",
		"http://a@b@c/?d=e", "user:pass@host/x?k=secret",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out := redact.URL(raw)
		u, err := url.Parse(raw)
		if err != nil {
			checkByHand(t, raw, out)
			return
		}
		// What may legitimately remain: the scheme, host, path and the
		// names of the query parameters.
		kept := u.Scheme + " " + u.Host + " " + (&url.URL{Host: u.Host}).String() + " " + u.Path + " " + u.EscapedPath() + " " + u.Opaque
		if i := strings.IndexAny(raw, "?#"); i >= 0 && u.User == nil {
			kept += " " + raw[:i] // as written, scheme case and all
		}
		for _, p := range strings.Split(u.RawQuery, "&") {
			if name, _, ok := strings.Cut(p, "="); ok && strings.Contains(out, name+"=") {
				kept += " " + name
				if n, err := url.QueryUnescape(name); err == nil {
					kept += " " + n
				}
			}
		}
		var secrets []string
		if u.User != nil {
			pw, _ := u.User.Password()
			secrets = append(secrets, u.User.Username(), pw, u.User.String())
		}
		for _, p := range strings.Split(u.RawQuery, "&") {
			_, v, ok := strings.Cut(p, "=")
			if !ok {
				v = p
			}
			secrets = append(secrets, v)
			if dv, err := url.QueryUnescape(v); err == nil {
				secrets = append(secrets, dv)
			}
		}
		secrets = append(secrets, u.Fragment, u.RawFragment)
		for _, s := range secrets {
			// A secret that is short, or holds a separator, can appear in
			// the output by coincidence (path "!!!" and fragment "!!!#"
			// make "!!!#"); the structural check below covers those.
			if len(s) < 6 || strings.ContainsAny(s, "#?&=@/") || strings.Contains(kept, s) {
				continue
			}
			if strings.Contains(out, s) {
				t.Fatalf("URL(%q) = %q still holds %q", raw, out, s)
			}
		}
		if o, err := url.Parse(out); err == nil {
			if u.Opaque == "" && u.Host != "" && (o.Host != u.Host || o.Path != u.Path) {
				t.Fatalf("URL(%q) = %q changed the host or path", raw, out)
			}
			if o.User != nil && o.User.String() != redact.Mask {
				t.Fatalf("URL(%q) = %q keeps userinfo %q", raw, out, o.User)
			}
			if o.Fragment != "" && o.Fragment != redact.Mask {
				t.Fatalf("URL(%q) = %q keeps fragment %q", raw, out, o.Fragment)
			}
			for _, p := range strings.Split(o.RawQuery, "&") {
				if _, v, ok := strings.Cut(p, "="); p != "" && (ok && v != redact.Mask || !ok && p != redact.Mask) {
					t.Fatalf("URL(%q) = %q keeps query part %q", raw, out, p)
				}
			}
		}
	})
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// checkByHand: for a URL that does not parse, nothing after the first '?'
// or '#' survives but parameter names, and nothing before an '@'.
func checkByHand(t *testing.T, raw, out string) {
	var names string // the parameter names the output shows
	if j := strings.IndexByte(out, '?'); j >= 0 {
		q, _, _ := strings.Cut(out[j+1:], "#")
		for _, p := range strings.Split(q, "&") {
			if name, _, ok := strings.Cut(p, "="); ok {
				names += " " + name
			}
		}
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		for _, p := range strings.FieldsFunc(raw[i+1:], func(r rune) bool { return r == '&' || r == '#' || r == '?' }) {
			_, v, ok := strings.Cut(p, "=")
			if !ok {
				v = p
			}
			if len(v) >= 6 && !strings.ContainsAny(v, "#?&=@/") && !strings.Contains(raw[:i], v) && !strings.Contains(names, v) && strings.Contains(out, v) {
				t.Fatalf("URL(%q) = %q still holds %q", raw, out, v)
			}
		}
	}
	head := raw
	if i := strings.IndexAny(head, "?#"); i >= 0 {
		head = head[:i]
	}
	// The userinfo is what precedes the last '@' of the authority: after
	// "://" or a leading "//", up to the first '/'; without either, of the
	// whole head.
	authority := head
	if i := strings.Index(authority, "://"); i > 0 && scheme.MatchString(authority[:i]) {
		authority = authority[i+3:]
	} else if strings.HasPrefix(authority, "//") {
		authority = authority[2:]
	} else {
		authority = ""
		if i := strings.LastIndexByte(head, '@'); i >= 0 {
			authority = head[:i+1]
		}
	}
	if i := strings.IndexByte(authority, '/'); i >= 0 && strings.Contains(head, "//") {
		authority = authority[:i]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		rest := strings.Replace(head, authority[:i+1], "", 1) // the head but the userinfo
		for _, user := range strings.FieldsFunc(authority[:i], func(r rune) bool { return r == '@' || r == ':' }) {
			if len(user) >= 6 && !strings.ContainsAny(user, "#?&=@/") && !strings.Contains(names, user) && !strings.Contains(rest, user) && strings.Contains(out, user) {
				t.Fatalf("URL(%q) = %q still holds the userinfo %q", raw, out, user)
			}
		}
	}
}

// A URL with a token in its query, as an error and a log would show it.
func ExampleURL() {
	fmt.Println(redact.URL("https://mcp.example.com/mcp?api_key=sk-123&team=core"))
	fmt.Println(redact.URL("https://bob:hunter2@mcp.example.com/mcp"))
	// Output:
	// https://mcp.example.com/mcp?api_key=xxxxx&team=xxxxx
	// https://xxxxx@mcp.example.com/mcp
}
