package http

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	nethttp "net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/redact"
	"github.com/mcpfleet/mcpfleet/transport"
)

// Error is the error of an HTTP exchange with a server that did not
// answer as MCP asks, in the manner of os.PathError: what was done, to
// which URL (its secrets masked), what came back, and what a person may
// do about it.
//
//	http: POST http://127.0.0.1:8080/api: 404 Not Found (text/plain: "404 page not found"), and GET (legacy SSE) too: 404 Not Found; is the path right? MCP endpoints are usually /mcp
//
// It wraps the error mcp-go or net/http returned (Err), and matches
// transport.ErrMisconfigured when the answer shows a mistake that no
// retry can fix without a person: an endpoint that answers 404, 405, 410
// or 501 to both protocol generations (or one of them, and a web page to
// the other), 401 or 403 with no credentials
// configured and no OAuth to go through, a redirect to another origin, a
// certificate the system does not trust, a handshake answered with 2xx
// and a web page or anything else that is not JSON or an event stream
// (which matches transport.ErrNotMCP too).
type Error struct {
	// Op is what the Conn was doing when no request was involved ("dial",
	// "stream"); empty for a request.
	Op string
	// Method is the request's HTTP method; empty when Op says.
	Method string
	// URL is the server's URL, with userinfo and query values masked.
	URL string
	// Status is the HTTP status of the answer; 0 if none came.
	Status int
	// ContentType and Body are the answer's media type and a short text
	// of its body: an HTML page reduced to its title or first heading, a
	// JSON-RPC error to its message, anything else to its first line.
	ContentType, Body string
	// Also is what the other way of speaking MCP got from the same URL,
	// when it was tried ("GET (legacy SSE): 404 Not Found").
	Also string
	// Hint says what to check, for the common cases.
	Hint string
	// Err is the error under it.
	Err error

	misconfigured bool
	notMCP        bool // and the answer was not MCP's: transport.ErrNotMCP
	// detail, when set, is said in place of Err's text, which mcp-go and
	// net/http wrap in layers that repeat it.
	detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("http: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
	}
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteByte(' ')
	}
	b.WriteString(e.URL)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": %d %s", e.Status, nethttp.StatusText(e.Status))
		if e.ContentType != "" || e.Body != "" {
			b.WriteString(" (")
			b.WriteString(e.ContentType)
			if e.ContentType != "" && e.Body != "" {
				b.WriteString(": ")
			}
			if e.Body != "" {
				b.WriteString(strconv.Quote(e.Body))
			}
			b.WriteByte(')')
		}
	} else if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Also != "" {
		b.WriteString(", and ")
		b.WriteString(e.Also)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes a mistake match transport.ErrMisconfigured, and an answer that
// is not MCP's (a web page) transport.ErrNotMCP too.
func (e *Error) Is(target error) bool {
	return e.misconfigured && target == transport.ErrMisconfigured || e.notMCP && target == transport.ErrNotMCP
}

// exchange is what the round tripper saw of a request that got an answer
// other than 2xx: the Conn puts one in the context of each request it
// sends for mcp-go, and turns mcp-go's bare error ("request failed with
// status 404") into an *Error from it.
type exchange struct {
	mu sync.Mutex
	a  answer
}

// answer is what describes a failed answer.
type answer struct {
	method      string
	status      int
	contentType string
	body        string
	// authenticate is the answer's WWW-Authenticate header, for a 401.
	authenticate string
}

type exchangeKey struct{}

// exchangeCtx is a context that carries an exchange: one allocation for
// both, as every request of a Conn makes one.
type exchangeCtx struct {
	context.Context
	ex exchange
}

func (c *exchangeCtx) Value(key any) any {
	if key == (exchangeKey{}) {
		return &c.ex
	}
	return c.Context.Value(key)
}

// withExchange returns ctx with a new exchange to record into.
func withExchange(ctx context.Context) (context.Context, *exchange) {
	c := &exchangeCtx{Context: ctx}
	return c, &c.ex
}

// bodyPeek bounds what is read of a failed answer's body to describe it.
const bodyPeek = 4 << 10

// record keeps what describes resp, a failed answer to req, if req's
// context has an exchange: one with a status other than 2xx, or, when
// its body must be MCP's (carrying says so: a streamable HTTP POST, the
// legacy SSE stream), a 2xx that is not (a web page where JSON or an
// event stream was due). The body read is put back for mcp-go.
func record(req *nethttp.Request, resp *nethttp.Response, carrying bool) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode < 300 && (!carrying || !notMCPAnswer(resp.StatusCode, media)) {
		return
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, bodyPeek))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.a = answer{method: req.Method, status: resp.StatusCode, contentType: media,
		body: bodyText(media, head), authenticate: resp.Header.Get("WWW-Authenticate")}
}

// notMCPAnswer reports whether a 2xx answer of the media type cannot be
// MCP's: MCP answers a request with JSON or an event stream, and a
// notification or a response with 202 Accepted (or, from some servers,
// 204), whose body nobody reads.
func notMCPAnswer(status int, media string) bool {
	if status == nethttp.StatusAccepted || status == nethttp.StatusNoContent {
		return false
	}
	return media != "application/json" && media != "text/event-stream"
}

// seen returns what was recorded, and whether anything was.
func (ex *exchange) seen() (answer, bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.a, ex.a.status != 0
}

var (
	htmlTitle   = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlHeading = regexp.MustCompile(`(?is)<h1[^>]*>(.*?)</h1>`)
	htmlTag     = regexp.MustCompile(`(?s)<[^>]*>`)
)

// bodyText reduces a failed answer's body to a short text: an HTML page to
// its title or first heading, a JSON-RPC error to its message, anything
// else to its first line; at most 200 bytes.
func bodyText(media string, body []byte) string {
	var s string
	switch {
	case strings.Contains(media, "html"):
		for _, re := range []*regexp.Regexp{htmlTitle, htmlHeading} {
			if m := re.FindSubmatch(body); m != nil {
				s = html.UnescapeString(htmlTag.ReplaceAllString(string(m[1]), ""))
				break
			}
		}
	case strings.Contains(media, "json"):
		var msg struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Error.Message != "" {
			s = msg.Error.Message
		}
	}
	if s == "" && !strings.Contains(media, "html") {
		s, _, _ = strings.Cut(string(body), "\n")
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// describe turns err, the error of a request whose context held ex, into
// an *Error when the exchange or the error says more than mcp-go's text:
// a failed answer, a refused redirect, an untrusted certificate. During
// the handshake (handshake true) it also finds out whether the failure is
// a mistake, which may take a request or two (the other protocol
// generation, the OAuth metadata), bounded by ctx and a few seconds. Any
// other error is returned as it is.
func (c *Conn) describe(ctx context.Context, ex *exchange, handshake bool, err error) error {
	if err == nil || isStaleSession(err) || isContextErr(err) {
		return err
	}
	e := &Error{URL: redact.URL(c.spec.URL), Err: err}
	if seen, ok := ex.seen(); ok {
		e.Method, e.Status, e.ContentType = seen.method, seen.status, seen.contentType
		e.Body = redact.Text(seen.body, c.spec.URL)
		if handshake {
			c.diagnose(ctx, e, seen)
		}
		return e
	}
	switch cert := certificateError(err); {
	case errors.Is(err, ErrCrossOriginRedirect):
		e.Method = nethttp.MethodPost
		e.Hint = "the server redirects to another origin, which is refused: use the URL it redirects to"
		e.misconfigured = true
	case cert != nil:
		e.Method = nethttp.MethodPost
		e.detail = "tls: " + cert.Error()
		e.Hint = "this system does not trust the server's certificate: fix the certificate, or add its CA to the system's trust store"
		e.misconfigured = true
	default:
		return err
	}
	return e
}

// certificateError returns the certificate verification error in err's
// chain, if any.
func certificateError(err error) error {
	var unknownCA x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	switch {
	case errors.As(err, &unknownCA):
		return unknownCA
	case errors.As(err, &invalid):
		return invalid
	case errors.As(err, &hostname):
		return hostname
	}
	return nil
}

// probeTimeout bounds the requests diagnose makes.
const probeTimeout = 5 * time.Second

// diagnose fills in e's hint, and whether the handshake's failed answer is
// a mistake, from the status and, where it takes one, a look at the other
// protocol generation or at the OAuth metadata.
func (c *Conn) diagnose(ctx context.Context, e *Error, seen answer) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	switch seen.status {
	case nethttp.StatusNotFound, nethttp.StatusMethodNotAllowed, nethttp.StatusGone, nethttp.StatusNotImplemented:
		// 501: the server implements no POST at all (a static file
		// server, such as python -m http.server), as good as a 405.
		other, status, media := c.probeOther(ctx)
		switch {
		case status == 0:
			// Nothing came back from the other way: an outage, perhaps.
			e.Hint = "is the path right? MCP endpoints are usually /mcp"
		case wrongPath(status):
			e.Also = fmt.Sprintf("%s too: %d %s", other, status, nethttp.StatusText(status))
			e.Hint = "is the path right? MCP endpoints are usually /mcp (and /sse for the legacy SSE transport)"
			e.misconfigured = true
		case status < 300 && strings.Contains(media, "html"):
			e.Also = other + " answers with a web page"
			e.Hint = "the server answered with a web page, not MCP: is this the MCP endpoint? MCP endpoints are usually /mcp (and /sse for the legacy SSE transport)"
			e.misconfigured, e.notMCP = true, true
		case c.spec.Kind == StreamableHTTP && status == nethttp.StatusOK && media == "text/event-stream":
			e.Also = other + " answers with an event stream"
			e.Hint = `this is a legacy SSE endpoint: set "type": "sse" (or Kind SSE)`
			e.misconfigured = true
		case c.spec.Kind == SSE && status < 500:
			e.Also = fmt.Sprintf("%s: %d %s", other, status, nethttp.StatusText(status))
			e.Hint = `this looks like a streamable HTTP endpoint: set "type": "http" (or Kind StreamableHTTP)`
			e.misconfigured = true
		}
	case nethttp.StatusUnauthorized, nethttp.StatusForbidden:
		if c.opts.auth != nil {
			return // the Authorizer's: NeedsAuthorization, not a mistake
		}
		if len(c.spec.Headers) > 0 {
			e.Hint = "the server refused the credentials in the headers"
			return
		}
		if c.hasOAuthMetadata(ctx, seen.authenticate) {
			e.Hint = `the server uses OAuth: add an "oauth": {} block (ServerSpec.OAuth) and authorize the client`
		} else {
			e.Hint = `the server wants credentials: add them, such as "headers": {"Authorization": "Bearer ${TOKEN}"}`
		}
		e.misconfigured = true
	default:
		switch {
		case seen.status < 300 && strings.Contains(seen.contentType, "html"):
			e.Hint = "the server answered with a web page, not MCP: is this the MCP endpoint? MCP endpoints are usually /mcp (and /sse for the legacy SSE transport)"
			e.misconfigured, e.notMCP = true, true
		case seen.status < 300:
			e.Hint = "the server answered with something that is not MCP (JSON-RPC as JSON or an event stream): is this the MCP endpoint?"
			e.misconfigured, e.notMCP = true, true
		case seen.status >= 500:
			e.Hint = "the server failed; it is retried"
		}
	}
}

// wrongPath reports whether a status says nothing is there for MCP.
func wrongPath(status int) bool {
	return status == nethttp.StatusNotFound || status == nethttp.StatusMethodNotAllowed || status == nethttp.StatusGone ||
		status == nethttp.StatusNotImplemented
}

// probeOther asks the server's URL the other way of speaking MCP: the
// legacy SSE stream (GET) for a streamable HTTP spec, an initialize POST
// for an SSE spec. It returns what it asked, and the status and media
// type of the answer (0 if none came).
func (c *Conn) probeOther(ctx context.Context) (what string, status int, media string) {
	var req *nethttp.Request
	var err error
	if c.spec.Kind == SSE {
		what = "POST (streamable HTTP)"
		body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` +
			mcp.LATEST_LEGACY_PROTOCOL_VERSION + `","capabilities":{},"clientInfo":{"name":"mcpfleet","version":"probe"}}}`
		req, err = nethttp.NewRequestWithContext(ctx, nethttp.MethodPost, c.spec.URL, strings.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
	} else {
		what = "GET (legacy SSE)"
		req, err = nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, c.spec.URL, nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
		}
	}
	if err != nil {
		return what, 0, ""
	}
	for k, v := range c.spec.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.probeClient().Do(req)
	if err != nil {
		return what, 0, ""
	}
	defer resp.Body.Close()
	media, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return what, resp.StatusCode, media
}

// hasOAuthMetadata reports whether the server publishes OAuth protected
// resource metadata: at the URL its WWW-Authenticate header names, or at
// the well-known places for its URL.
func (c *Conn) hasOAuthMetadata(ctx context.Context, authenticate string) bool {
	var urls []string
	if _, v, ok := strings.Cut(authenticate, `resource_metadata="`); ok {
		if u, _, ok := strings.Cut(v, `"`); ok {
			urls = append(urls, u)
		}
	}
	if u, err := url.Parse(c.spec.URL); err == nil {
		base := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
		if p := strings.TrimSuffix(u.Path, "/"); p != "" {
			urls = append(urls, base+p)
		}
		urls = append(urls, base)
	}
	for _, raw := range urls {
		if u, err := url.Parse(raw); err != nil || origin(u) != c.origin {
			continue // metadata elsewhere is the Authorizer's to vet
		}
		req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, raw, nil)
		if err != nil {
			continue
		}
		resp, err := c.probeClient().Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == nethttp.StatusOK {
			return true
		}
	}
	return false
}

// probeClient sends diagnose's requests over the Conn's own pool, and
// follows no redirect.
func (c *Conn) probeClient() *nethttp.Client {
	return &nethttp.Client{Transport: c.pool, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error {
		return nethttp.ErrUseLastResponse
	}}
}

// handshake reports whether a JSON-RPC method is the MCP handshake's.
func handshake(method string) bool {
	return method == string(mcp.MethodInitialize) || method == string(mcp.MethodServerDiscover)
}
