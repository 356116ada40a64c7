package oauth

import (
	"errors"
	"fmt"
)

var (
	// ErrNeedsAuthorization is wrapped by the error of a request that cannot
	// be authorized without the user: there is no token, the refresh token
	// was refused (revoked, expired), or the server asks for more scope
	// than the token has (step-up). The request was not run. Errors wrapping
	// it are *NeedsAuthorizationError, which carries the URL to open.
	ErrNeedsAuthorization = errors.New("mcpfleet: oauth: authorization needed")

	// ErrResourceMismatch: the server's protected resource metadata names
	// another resource than the server's URL (RFC 9728 section 3.3). The
	// client refuses to authorize: a token for that resource could be used
	// against the server, or ours against it.
	ErrResourceMismatch = errors.New("mcpfleet: oauth: protected resource metadata is for another resource")

	// ErrNoPendingAuthorization: Complete was called with no authorization
	// started (Start makes one).
	ErrNoPendingAuthorization = errors.New("mcpfleet: oauth: no authorization in progress")

	// ErrStateMismatch: the redirect's state is not the one the
	// authorization was started with (a forged or stale redirect). The
	// authorization in progress stays; complete it with the right redirect.
	ErrStateMismatch = errors.New("mcpfleet: oauth: state mismatch")

	// ErrAuthorizationDenied: the authorization server redirected back with
	// an error (the user declined, or the request was refused).
	ErrAuthorizationDenied = errors.New("mcpfleet: oauth: authorization denied")

	// ErrStepUpLimit: the server kept answering 403 insufficient_scope for
	// scopes the authorization server had already granted; the client
	// stopped asking (after MaxStepUps authorizations) rather than loop.
	ErrStepUpLimit = errors.New("mcpfleet: oauth: step-up retry limit reached")

	// ErrNotInteractive: Start or Complete on a grant that needs no user
	// (client credentials, token exchange).
	ErrNotInteractive = errors.New("mcpfleet: oauth: the grant needs no user")
)

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
// (invalid_grant: a revoked, expired or reused refresh token or code), as
// opposed to failing to answer.
func (e *tokenError) refused() bool {
	switch e.code {
	case "invalid_grant", "invalid_token", "unauthorized_client":
		return true
	}
	return false
}
