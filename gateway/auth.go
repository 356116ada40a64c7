package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Identity is who a downstream request's credential names: the subject of
// a JWT access token the gateway validated (JWTValidator), or the identity
// an API key was given (APIKeys). A Team serves each identity its own
// fleet, under the policy its ID and groups select. An Identity is not
// changed once made.
type Identity struct {
	// ID names the person or program: the token's subject (or the claim
	// JWTConfig.IdentityClaim names), qualified by its issuer when the
	// validator trusts several (see JWTConfig); or an API key's identity.
	// It is the user id of the identity's fleet (${user:id}).
	ID string
	// Issuer is the token's issuer; empty for an API key.
	Issuer string
	// Groups are the groups the token's groups claim (JWTConfig.GroupsClaim)
	// or the API key names.
	Groups []string
	// Claims are the credential's claims whose values are strings (a JWT's
	// string claims; an API key's claims), which answer the template's
	// ${user:NAME} variables.
	Claims map[string]string
	// Expiry is when the credential expires; zero if it does not.
	Expiry time.Time
}

// InGroup reports whether id is in group.
func (id *Identity) InGroup(group string) bool { return slices.Contains(id.Groups, group) }

// Authenticator tells who a bearer token names.
type Authenticator interface {
	// Authenticate returns the identity of token, or an error wrapping
	// ErrInvalidToken that says why it is refused (expired, for another
	// audience, from an issuer not trusted, signed by an unknown key, an
	// unknown API key), without the token in it.
	Authenticate(ctx context.Context, token string) (*Identity, error)
}

// ErrInvalidToken is the error of a bearer token an Authenticator refuses;
// the request gets 401 with error="invalid_token".
var ErrInvalidToken = errors.New("mcpfleet: gateway: invalid token")

// tokenError is the error of a refused token: why, and the reason class
// the Observer gets (see AuthInfo).
type tokenError struct {
	reason string
	msg    string
	// notMine: the token is not of the Authenticator's kind (see errNotMine).
	notMine bool
}

func (e *tokenError) Error() string { return ErrInvalidToken.Error() + ": " + e.msg }
func (e *tokenError) Unwrap() error { return ErrInvalidToken }

// Is makes errors.Is find errNotMine in a token not of the kind.
func (e *tokenError) Is(target error) bool { return target == errNotMine && e.notMine }

// notMine returns the error of a token not of the Authenticator's kind.
func notMine(format string, args ...any) error {
	return &tokenError{reason: "invalid", msg: fmt.Sprintf(format, args...), notMine: true}
}

// refuse returns the error of a token refused for reason.
func refuse(reason, format string, args ...any) error {
	return &tokenError{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// reasonOf returns the reason class of an Authenticator's error.
func reasonOf(err error) string {
	var te *tokenError
	if errors.As(err, &te) {
		return te.reason
	}
	return "invalid"
}

// errNotMine wraps ErrInvalidToken for a token of a form the Authenticator
// does not take (an API key shown to a JWT validator): another may.
var errNotMine = errors.New("not a credential of this kind")

// identityKey carries the *Identity of an authenticated request.
type identityKey struct{}

// IdentityFrom returns the identity of the downstream request in ctx, nil
// if it was not authenticated by a Team (a request over stdio, or to a
// Gateway's own HTTPHandler).
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// withIdentity returns ctx carrying id.
func withIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// authenticators tries each Authenticator in turn: the first that takes the
// token decides; a token none takes is refused with the error of the most
// specific refusal (one that is not errNotMine).
type authenticators []Authenticator

func (as authenticators) Authenticate(ctx context.Context, token string) (*Identity, error) {
	var first error
	for _, a := range as {
		id, err := a.Authenticate(ctx, token)
		if err == nil {
			return id, nil
		}
		if first == nil || errors.Is(first, errNotMine) && !errors.Is(err, errNotMine) {
			first = err
		}
	}
	if first == nil {
		first = errors.New("no authenticator is configured")
	}
	return nil, first
}

// bearerToken returns the bearer token of r, if it has one.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
