package oauth

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// sameIssuer reports whether two issuer identifiers name the same
// authorization server: equal but for a trailing slash.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// knownIssuer returns the issuer the client holds credentials for: the
// pinned one, else the one remembered in the store, else "".
func (a *Authorizer) knownIssuer(ctx context.Context) string {
	if a.cfg.Issuer != "" {
		return a.cfg.Issuer
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked(ctx)
	return a.entry.Issuer
}

// chooseIssuer picks the authorization server among those the protected
// resource metadata lists: the known one if it is listed, else the first
// (which bindIssuer then refuses if another is known).
func (a *Authorizer) chooseIssuer(ctx context.Context, listed []string) string {
	if known := a.knownIssuer(ctx); known != "" {
		for _, s := range listed {
			if sameIssuer(s, known) {
				return s
			}
		}
	}
	return listed[0]
}

// admitIssuer refuses issuer, before anything is asked of it, when the
// client knows another one (pinned or remembered).
func (a *Authorizer) admitIssuer(ctx context.Context, issuer string) error {
	if known := a.knownIssuer(ctx); known != "" && !sameIssuer(known, issuer) {
		return &IssuerChangedError{Known: known, Seen: issuer, Pinned: a.cfg.Issuer != ""}
	}
	return nil
}

// bindIssuer is the gate before anything of the client's goes to the
// authorization server issuer (a registration, a client secret or
// assertion, an ID token, the user): issuer must be the pinned one, or,
// without a pin, the one remembered for the server; the first one seen is
// remembered, in the store, before anything is sent. A pin that replaces
// a remembered issuer drops what was held for that one (its token and
// client registration are not for the pinned one).
func (a *Authorizer) bindIssuer(ctx context.Context, issuer string) error {
	pin := a.cfg.Issuer
	if pin != "" && !sameIssuer(pin, issuer) {
		return &IssuerChangedError{Known: pin, Seen: issuer, Pinned: true}
	}
	a.mu.Lock()
	a.loadLocked(ctx)
	known := a.entry.Issuer
	switch {
	case known != "" && sameIssuer(known, issuer):
		a.mu.Unlock()
		return nil
	case known != "" && pin == "":
		a.mu.Unlock()
		return &IssuerChangedError{Known: known, Seen: issuer}
	case known != "":
		a.log.Info("mcpfleet: oauth: the pinned issuer replaces the remembered one; its token is dropped",
			"server", a.key, "pinned", pin, "remembered", known)
		a.forgetIssuerLocked()
	}
	a.entry.Issuer = issuer
	e := a.entry.clone()
	a.mu.Unlock()
	if err := a.store.Save(ctx, a.key, e); err != nil {
		a.log.Warn("mcpfleet: oauth: token store: save failed", "server", a.key, "err", err)
	}
	return nil
}

// forgetIssuerLocked drops what the entry holds for its authorization
// server. a.mu is held.
func (a *Authorizer) forgetIssuerLocked() {
	a.entry.Issuer, a.entry.TokenEndpoint = "", ""
	a.entry.Token, a.entry.Client = nil, nil
	a.pending = nil
	clear(a.stepUps)
}

// TrustIssuer makes issuer the server's authorization server: the host's
// consent to a change that failed with ErrIssuerChanged, given after
// asking whoever may give it (the new issuer is in the error). What was
// held for another issuer (its token, the client registered with it) is
// dropped and kept in the store no more; the next request discovers and
// authorizes anew. With a pinned issuer (Config.Issuer) it accepts only
// that one: change the pin in the config instead.
func (a *Authorizer) TrustIssuer(ctx context.Context, issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("oauth: trust issuer: %q is not an http(s) URL", redact.URL(issuer))
	}
	if pin := a.cfg.Issuer; pin != "" && !sameIssuer(pin, issuer) {
		return &IssuerChangedError{Known: pin, Seen: issuer, Pinned: true}
	}
	a.mu.Lock()
	a.loadLocked(ctx)
	if sameIssuer(a.entry.Issuer, issuer) {
		a.mu.Unlock()
		return nil
	}
	a.forgetIssuerLocked()
	a.entry.Issuer = issuer
	e := a.entry.clone()
	a.mu.Unlock()
	return a.store.Save(ctx, a.key, e)
}
