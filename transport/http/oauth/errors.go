package oauth

import (
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mcpfleet/mcpfleet/internal/redact"
)

var (
	// ErrNeedsAuthorization is wrapped by the error of a request that cannot
	// be authorized without the user: there is no token, the refresh token
	// was refused (revoked, expired), or the server asks for more scope
	// than the token has (step-up). The request was not run. Errors wrapping
	// it are *NeedsAuthorizationError, which carries the URL to open.
	ErrNeedsAuthorization = errors.New("needs authorization")

	// ErrResourceMismatch: the server's protected resource metadata names
	// another resource than the server's URL (RFC 9728 section 3.3). The
	// client refuses to authorize: a token for that resource could be used
	// against the server, or ours against it.
	ErrResourceMismatch = errors.New("protected resource metadata is for another resource")

	// ErrNoPendingAuthorization: Complete was called with no authorization
	// started (Start makes one).
	ErrNoPendingAuthorization = errors.New("no authorization in progress")

	// ErrStateMismatch: the redirect's state is not the one the
	// authorization was started with (a forged or stale redirect). The
	// authorization in progress stays; complete it with the right redirect.
	ErrStateMismatch = errors.New("state mismatch")

	// ErrAuthorizationDenied: the authorization server redirected back with
	// an error (the user declined, or the request was refused).
	ErrAuthorizationDenied = errors.New("authorization denied")

	// ErrStepUpLimit: the server kept answering 403 insufficient_scope for
	// scopes the authorization server had already granted; the client
	// stopped asking (after MaxStepUps authorizations) rather than loop.
	ErrStepUpLimit = errors.New("step-up retry limit reached")

	// ErrNotInteractive: Start or Complete on a grant that needs no user
	// (client credentials, token exchange).
	ErrNotInteractive = errors.New("the grant needs no user")

	// ErrIssuerChanged: the server names another authorization server than
	// the one pinned in the config (Config.Issuer) or, without a pin, the
	// one remembered from before with the server's credentials. Nothing
	// was sent to it. Errors wrapping it are *IssuerChangedError, which
	// names both. To accept the new one, pin it in the config, or call
	// Authorizer.TrustIssuer (or Forget).
	ErrIssuerChanged error = &mistake{"the authorization server changed"}

	// ErrPKCEUnsupported: the authorization server's metadata does not list
	// S256 in code_challenge_methods_supported (or it publishes no metadata
	// at all while the server publishes protected resource metadata), so
	// it cannot be shown to enforce PKCE; the MCP authorization spec
	// (2025-11-25) says a client must then not start an authorization. The
	// 2025-03-26 fallback, a server that publishes no metadata of any
	// kind, is that revision's and is still served, with PKCE.
	ErrPKCEUnsupported error = &mistake{"the authorization server does not support PKCE with S256"}

	// ErrEndpointRefused: discovery led to a URL the client does not go
	// to: not https (plain http only on localhost, for a server on
	// localhost), on a loopback or private address while the MCP server is
	// not on one (a server steering the client at the host's own machine
	// or network), or reached by a redirect to another origin.
	ErrEndpointRefused error = &mistake{"endpoint refused"}

	// ErrUntrustedStore: the token store's file belongs to another user or
	// is writable by others, so whoever can write it chooses the tokens
	// and the endpoints the client uses. It is neither read nor replaced.
	ErrUntrustedStore = errors.New("token store not trusted")
)

// mistake is a sentinel that no retry gets past without a person: it
// matches transport.ErrMisconfigured too, so that a server whose first
// connect fails with it is reported at once, not retried for minutes.
type mistake struct{ msg string }

func (e *mistake) Error() string { return e.msg }

// Is makes errors.Is(err, transport.ErrMisconfigured) true.
func (e *mistake) Is(target error) bool { return target == transport.ErrMisconfigured }

// IssuerChangedError says that the server names another authorization
// server than the one the client holds credentials for. It matches
// ErrIssuerChanged.
type IssuerChangedError struct {
	// Known is the issuer pinned in the config or remembered.
	Known string
	// Seen is the issuer the server names now.
	Seen string
	// Pinned is true when Known is the config's pin.
	Pinned bool
}

func (e *IssuerChangedError) Error() string {
	if e.Pinned {
		return fmt.Sprintf("%s: the server names authorization server %q, not the pinned issuer %q; nothing was sent to it",
			ErrIssuerChanged, redact.URL(e.Seen), redact.URL(e.Known))
	}
	return fmt.Sprintf("%s: the server now names authorization server %q, not %q as before; nothing was sent to it: "+
		"to accept it, pin it in the config (oauth.issuer) or trust it (Authorizer.TrustIssuer)",
		ErrIssuerChanged, redact.URL(e.Seen), redact.URL(e.Known))
}

// Is makes errors.Is(err, ErrIssuerChanged) and errors.Is(err,
// transport.ErrMisconfigured) true.
func (e *IssuerChangedError) Is(target error) bool {
	return target == ErrIssuerChanged || target == transport.ErrMisconfigured
}

// NeedsAuthorizationError says that the user must authorize the client
// before the server can be used, and where. It matches
// ErrNeedsAuthorization. Its message says what to do and why, never the
// URL (which a log need not carry); the URL is in the field.
type NeedsAuthorizationError struct {
	// URL is the authorization URL to open in a browser. After the user
	// approved, the authorization server redirects to the redirect URI with
	// a code: hand that redirect URL (or the code) to Complete.
	URL string
	// Reason says why: "no token", "the refresh token was refused", "the
	// server asks for scope ...".
	Reason string
}

func (e *NeedsAuthorizationError) Error() string {
	msg := ErrNeedsAuthorization.Error()
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg + ": open the authorization URL and complete with the redirect URL or code"
}

func (e *NeedsAuthorizationError) Unwrap() error { return ErrNeedsAuthorization }

// tokenError is the failure of a token request: the OAuth error code and
// the HTTP status only. x/oauth2's RetrieveError carries the response body,
// which this package never lets into a message.
type tokenError struct {
	what   string // "refresh", "authorization code exchange", ...
	code   string // OAuth error code, if any
	status int
	err    error // the underlying non-HTTP failure, if any
}

func (e *tokenError) Error() string {
	switch {
	case e.code != "":
		return fmt.Sprintf("mcpfleet: oauth: %s: %s (HTTP %d)", e.what, e.code, e.status)
	case e.status != 0:
		return fmt.Sprintf("mcpfleet: oauth: %s: HTTP %d", e.what, e.status)
	default:
		return fmt.Sprintf("mcpfleet: oauth: %s: %v", e.what, e.err)
	}
}

func (e *tokenError) Unwrap() error { return e.err }

// refused reports whether the authorization server refused the grant itself
// (invalid_grant: a revoked, expired or reused refresh token or code), or
// the client (invalid_client: a registration it forgot), as opposed to
// failing to answer.
func (e *tokenError) refused() bool {
	switch e.code {
	case "invalid_grant", "invalid_token", "unauthorized_client", "invalid_client":
		return true
	}
	return false
}

// registrationError says once what the registration endpoint answered:
// the OAuth error code and description of a refusal, or the HTTP status of
// another answer, never its body (an error page). oauthex's own texts say
// "registration failed" under our "dynamic client registration" and carry
// the whole body.
func registrationError(err error) error {
	var re *oauthex.ClientRegistrationError
	if errors.As(err, &re) {
		msg := "oauth: the authorization server refused the client registration: " + re.ErrorCode
		if re.ErrorDescription != "" {
			msg += " (" + re.ErrorDescription + ")"
		}
		return errors.New(msg)
	}
	if rest, ok := strings.CutPrefix(err.Error(), "registration failed with status "); ok {
		status, _, _ := strings.Cut(rest, ":")
		return fmt.Errorf("oauth: dynamic client registration: the authorization server answered %s", status)
	}
	return fmt.Errorf("oauth: dynamic client registration: %w", redact.Error(err))
}
