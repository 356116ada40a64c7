package client

import (
	"context"
	"errors"

	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// errNoOAuth is why the authorization methods fail for a server whose spec
// has no OAuth config.
var errNoOAuth = errors.New("the server's spec has no oauth config")

// authorizer returns the OAuth Authorizer of the server called name.
func (m *Manager) authorizer(op, name string) (*slot, *oauth.Authorizer, error) {
	s, err := m.slot(name)
	if err != nil {
		return nil, nil, withOp(op, name, err)
	}
	a := s.config().auth
	if a == nil {
		return nil, nil, withOp(op, name, serverError(ErrInvalidSpec, name, errNoOAuth))
	}
	return s, a, nil
}

// StartAuthorization returns the URL where the user authorizes the client
// with server name (authorization code with PKCE): the one of the
// authorization already waiting (the URL of the NeedsAuthorization event),
// or a new one. Open it in a browser, or show it to the user; after the
// user approved, the authorization server redirects to the redirect URI
// with a code: pass that redirect URL, or the code, to
// CompleteAuthorization. It works in any state but Closed, so a host may
// authorize before the first connect.
func (m *Manager) StartAuthorization(ctx context.Context, name string) (string, error) {
	_, a, err := m.authorizer("start authorization", name)
	if err != nil {
		return "", err
	}
	u, err := a.Start(ctx)
	if err != nil {
		return "", withOp("start authorization", name, &ServerError{Server: name, Err: err})
	}
	return u, nil
}

// CompleteAuthorization finishes the authorization of server name with
// what the authorization server sent back: the redirect URL (as the
// browser's address bar shows it, or as a loopback listener received it)
// or, for a host where the user pastes it, the code alone. The state of a
// redirect URL must match (oauth.ErrStateMismatch otherwise; the
// authorization stays open), and the code is exchanged with the PKCE
// verifier. The token is kept in the token store; a server waiting in
// NeedsAuthorization then connects at once (WaitFor Connected to wait for
// it).
func (m *Manager) CompleteAuthorization(ctx context.Context, name, redirect string) error {
	s, a, err := m.authorizer("complete authorization", name)
	if err != nil {
		return err
	}
	if err := a.Complete(ctx, redirect); err != nil {
		return withOp("complete authorization", name, &ServerError{Server: name, Err: err})
	}
	s.authorized()
	return nil
}

// AuthorizeLoopback authorizes server name on a desktop host: it listens on
// the loopback redirect URI of the server's OAuth config (127.0.0.1),
// calls open with the authorization URL (to open a browser, or print it),
// and completes the authorization with the redirect that comes back, as
// CompleteAuthorization does. A redirect with the wrong state is refused
// and the wait goes on. It returns once authorized, or when ctx ends.
func (m *Manager) AuthorizeLoopback(ctx context.Context, name string, open func(url string) error) error {
	s, a, err := m.authorizer("authorize", name)
	if err != nil {
		return err
	}
	fail := func(err error) error { return withOp("authorize", name, &ServerError{Server: name, Err: err}) }
	l, err := oauth.ListenLoopback(a.Config().Redirect())
	if err != nil {
		return fail(err)
	}
	u, err := a.Start(ctx)
	if err != nil {
		l.Close()
		return fail(err)
	}
	if err := open(u); err != nil {
		l.Close()
		return fail(err)
	}
	if err := l.Serve(ctx, a.Complete); err != nil {
		return fail(err)
	}
	s.authorized()
	return nil
}

// authURL returns the URL of the authorization waiting for the user, if
// any. It takes the Authorizer's lock, a leaf.
func (s *slot) authURL() string {
	if a := s.config().auth; a != nil {
		return a.Pending()
	}
	return ""
}

// authorizationErrorLocked is the error of a call made while the slot
// needs authorization.
func (s *slot) authorizationErrorLocked() error {
	return &ServerError{Server: s.name, Err: s.authorizationLocked()}
}

// authorizationLocked is the cause of a request refused while the slot
// needs authorization.
func (s *slot) authorizationLocked() *AuthorizationError {
	return &AuthorizationError{URL: s.authURL(), Cause: notCanceled(s.lastErr)}
}

// authorized is told that the user completed the server's authorization:
// a slot waiting for it dials at once, under a fresh budget; a dial that
// is running now, without the token, dials again at once if it finds
// none. In any other state the new token is used from the next request on.
func (s *slot) authorized() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorizations++ // a dial running now, without the token, dials again
	if s.state != lifecycle.NeedsAuthorization {
		return
	}
	s.budget.Reset()
	s.redialLocked()
}
