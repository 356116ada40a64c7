package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/oauth2"
)

// maxTokenResponse bounds a token endpoint's answer.
const maxTokenResponse = 1 << 20

// refreshRequest trades t's refresh token for a new token at e's token
// endpoint, with the resource indicator (RFC 8707) the token was asked for:
// without it the authorization server may issue a token that is not bound
// to this server. x/oauth2's TokenSource cannot send it (it sends the grant
// type, the refresh token and the client's credentials only), so the
// request is built here; the client authenticates as it does for the
// other grants (client_secret_basic, client_secret_post, private_key_jwt,
// or its id alone).
//
// A refused refresh is a *tokenError with the OAuth error code and the
// status; the response body is never put in an error.
func (a *Authorizer) refreshRequest(ctx context.Context, e *Entry, t *Token) (*oauth2.Token, error) {
	if err := a.guard.checkURL(ctx, "token endpoint", e.TokenEndpoint); err != nil {
		return nil, err
	}
	c := e.Client
	resource := e.Indicator
	if resource == "" {
		resource = e.Resource // stored before the indicator was
	}
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {t.RefreshToken},
		"resource":      {resource},
	}
	secret := c.Secret
	if !c.Registered {
		secret = a.cfg.ClientSecret
	}
	basic := false
	switch c.AuthMethod {
	case "client_secret_basic":
		basic = secret != ""
		if !basic {
			form.Set("client_id", c.ID)
		}
	case "client_secret_post":
		form.Set("client_id", c.ID)
		form.Set("client_secret", secret)
	case "private_key_jwt":
		form.Set("client_id", c.ID)
		if a.signer == nil {
			return nil, errors.New("oauth: refresh: private_key_jwt without a private key")
		}
		as, err := a.signer.assertion(c.ID, e.Issuer, a.now())
		if err != nil {
			return nil, fmt.Errorf("oauth: client assertion: %w", err)
		}
		form.Set("client_assertion_type", clientAssertionType)
		form.Set("client_assertion", as)
	default: // none: a public client names itself
		form.Set("client_id", c.ID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 section 2.3.1: the id and secret are form-encoded first.
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(secret))
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return nil, err
	}
	tr, perr := parseTokenResponse(resp.Header.Get("Content-Type"), body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &tokenError{what: "refresh", code: tr.Error, status: resp.StatusCode}
	}
	switch {
	case perr != nil:
		return nil, &tokenError{what: "refresh", status: resp.StatusCode, err: perr}
	case tr.Error != "":
		return nil, &tokenError{what: "refresh", code: tr.Error, status: resp.StatusCode}
	case tr.AccessToken == "":
		return nil, &tokenError{what: "refresh", status: resp.StatusCode, err: errors.New("the response carries no access_token")}
	}
	tok := &oauth2.Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType, RefreshToken: tr.RefreshToken, ExpiresIn: tr.ExpiresIn}
	if tr.Scope != "" {
		tok = tok.WithExtra(map[string]any{"scope": tr.Scope})
	}
	return tok, nil
}

// tokenResponse is a token endpoint's answer (RFC 6749 sections 5.1, 5.2).
type tokenResponse struct {
	AccessToken  string
	TokenType    string
	RefreshToken string
	ExpiresIn    int64
	Scope        string
	Error        string
}

// parseTokenResponse reads a token response in JSON or, as some servers
// still answer, form encoding. Its errors quote nothing of the body.
func parseTokenResponse(contentType string, body []byte) (tokenResponse, error) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if mediaType == "application/x-www-form-urlencoded" || mediaType == "text/plain" {
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return tokenResponse{}, errors.New("the response does not parse")
		}
		n, _ := strconv.ParseInt(q.Get("expires_in"), 10, 64)
		return tokenResponse{AccessToken: q.Get("access_token"), TokenType: q.Get("token_type"),
			RefreshToken: q.Get("refresh_token"), ExpiresIn: n, Scope: q.Get("scope"), Error: q.Get("error")}, nil
	}
	var raw struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		Scope        string          `json:"scope"`
		Error        string          `json:"error"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		// A syntax error's message quotes no content, but a type error's
		// may name a field: say no more than that it does not parse.
		return tokenResponse{}, errors.New("the response is not a JSON token response")
	}
	tr := tokenResponse{AccessToken: raw.AccessToken, TokenType: raw.TokenType, RefreshToken: raw.RefreshToken,
		Scope: raw.Scope, Error: raw.Error}
	// expires_in is a number, or, from some servers, a string of one.
	if s := strings.Trim(string(raw.ExpiresIn), `"`); s != "" && s != "null" {
		if n, err := strconv.ParseFloat(s, 64); err == nil && n > 0 && n < 1<<53 {
			tr.ExpiresIn = int64(n)
		}
	}
	return tr, nil
}
