package oauth

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpfleet/mcpfleet/store"
)

// registrationCheckCode is the code of the token request that asks an
// authorization server whether it still knows a registered client: no
// such code exists, so the answer is invalid_grant from a server that
// knows the client (RFC 6749 section 5.2 authenticates the client first)
// and invalid_client from one that forgot it.
const registrationCheckCode = "mcpfleet-registration-check"

// knowsClient asks the token endpoint whether it still knows c, a client
// registered dynamically, before the user is sent to authorize with it:
// an authorization server that restarted without its registrations refuses
// an authorization request for an unknown client without redirecting back
// (RFC 6749 section 4.1.2.1), so the host would wait for a redirect that
// never comes. Only an explicit invalid_client is "no"; anything else
// (another error, no answer) keeps the registration.
func (a *Authorizer) knowsClient(ctx context.Context, tokenEndpoint string, c *Client) bool {
	if err := a.guard.checkURL(ctx, "token endpoint", tokenEndpoint); err != nil {
		return true
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {registrationCheckCode},
		"redirect_uri":  {a.cfg.Redirect()},
		"code_verifier": {oauth2.GenerateVerifier()},
		"client_id":     {c.ID},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return true
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.Secret != "" && c.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return true
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	tr, _ := parseTokenResponse(resp.Header.Get("Content-Type"), body)
	return tr.Error != "invalid_client"
}

// forgetRegistration drops c, the entry's dynamic registration, if it is
// still the entry's: the authorization server no longer knows it, and the
// next authorization registers again.
func (a *Authorizer) forgetRegistration(ctx context.Context, c *Client) {
	if c == nil || !c.Registered {
		return
	}
	a.mu.Lock()
	cur := a.entry.Client
	if cur == nil || cur.ID != c.ID {
		a.mu.Unlock()
		return
	}
	a.entry.Client = nil
	e := a.entry.clone()
	a.mu.Unlock()
	a.log.Info("mcpfleet: oauth: the authorization server no longer knows the client; it registers again", "server", a.key)
	a.persist(ctx, e, store.Lease{})
}
