package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// discovery is what the client learned about a server's authorization.
type discovery struct {
	// resource is the resource indicator (RFC 8707) to ask tokens for: the
	// protected resource metadata's resource, which binds the server URL,
	// or the server URL itself when the server publishes none.
	resource string
	prm      *oauthex.ProtectedResourceMetadata // nil on the 2025-03-26 fallback
	asm      *oauthex.AuthServerMeta            // never nil: the fallback endpoints if none was published
	// published is true when asm is the authorization server's own
	// metadata, false for the default endpoints of one that published
	// none.
	published bool
	// legacy is the 2025-03-26 fallback: no protected resource metadata,
	// and no authorization server metadata either.
	legacy bool
}

// requirePKCE refuses an authorization code flow with an authorization
// server that does not list S256 among its code challenge methods, as the
// MCP authorization spec (2025-11-25) asks: its metadata must say so, and
// one that publishes none cannot. The 2025-03-26 fallback, where nothing
// at all is published, is that revision's, which asked no such proof; the
// client uses PKCE S256 there all the same.
func requirePKCE(d *discovery) error {
	switch {
	case d.legacy:
		return nil
	case !d.published:
		return fmt.Errorf("%w: the authorization server %q publishes no metadata, so its PKCE support cannot be verified",
			ErrPKCEUnsupported, redact.URL(d.asm.Issuer))
	case !slices.Contains(d.asm.CodeChallengeMethodsSupported, "S256"):
		return fmt.Errorf("%w: the authorization server %q lists code_challenge_methods_supported %q",
			ErrPKCEUnsupported, redact.URL(d.asm.Issuer), d.asm.CodeChallengeMethodsSupported)
	}
	return nil
}

// challenge is what a 401 or 403 answer's WWW-Authenticate said.
type challenge struct {
	resourceMetadata string
	scopes           []string
	err              string // "insufficient_scope", "invalid_token", ...
}

// parseChallenge reads the Bearer challenge of resp, with the official Go
// SDK's parser.
func parseChallenge(h http.Header) challenge {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	var c challenge
	if err != nil {
		return c
	}
	for _, ch := range cs {
		if u := ch.Params["resource_metadata"]; u != "" && c.resourceMetadata == "" {
			c.resourceMetadata = u
		}
		if ch.Scheme != "bearer" {
			continue
		}
		if s := ch.Params["scope"]; s != "" && c.scopes == nil {
			c.scopes = strings.Fields(s)
		}
		if e := ch.Params["error"]; e != "" && c.err == "" {
			c.err = e
		}
	}
	return c
}

// discover finds the server's authorization server, as the MCP
// authorization spec orders it: the protected resource metadata (RFC 9728)
// named by the challenge's resource_metadata, else at the path-based
// well-known location, else at the root one; then the authorization
// server's metadata (RFC 8414 and OpenID Connect discovery, with path
// insertion and appending, by the official Go SDK's
// auth.GetAuthServerMetadata). With no protected resource metadata at all,
// the 2025-03-26 fallbacks apply: the server's origin is the authorization
// server, with its metadata at the root or, failing that, the endpoints
// /authorize, /token and /register.
//
// Metadata whose resource does not bind the server URL is refused
// (ErrResourceMismatch), never skipped: a server that publishes it is not
// one to authorize with.
func (a *Authorizer) discover(ctx context.Context, ch challenge) (*discovery, error) {
	server, err := url.Parse(a.resource)
	if err != nil {
		return nil, fmt.Errorf("oauth: server URL: %w", redact.Error(err, a.resource))
	}
	origin := &url.URL{Scheme: server.Scheme, Host: server.Host}
	var candidates []string
	if ch.resourceMetadata != "" {
		// RFC 9728 section 3.2: a resource serves its own metadata. A
		// challenge pointing elsewhere is ignored, as mcp-go does.
		if u, err := url.Parse(ch.resourceMetadata); err == nil && strings.EqualFold(u.Scheme, origin.Scheme) && strings.EqualFold(u.Host, origin.Host) {
			candidates = append(candidates, ch.resourceMetadata)
		}
	}
	if p := strings.TrimRight(server.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, origin.String()+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, origin.String()+"/.well-known/oauth-protected-resource")

	for _, u := range candidates {
		var prm oauthex.ProtectedResourceMetadata
		found, err := a.getJSON(ctx, "protected resource metadata", u, &prm)
		if err != nil {
			return nil, fmt.Errorf("oauth: protected resource metadata %s: %w", redact.URL(u), err)
		}
		if !found {
			continue
		}
		if !resourceBinds(prm.Resource, a.resource) {
			return nil, fmt.Errorf("%w: %s names resource %q, the server is %q", ErrResourceMismatch,
				redact.URL(u), redact.URL(prm.Resource), redact.URL(a.resource))
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("oauth: protected resource metadata %s names no authorization server", redact.URL(u))
		}
		issuer := a.chooseIssuer(ctx, prm.AuthorizationServers)
		// Not even its metadata is asked of an authorization server the
		// client holds no credentials for.
		if err := a.admitIssuer(ctx, issuer); err != nil {
			return nil, err
		}
		if err := a.guard.checkURL(ctx, "authorization server", issuer); err != nil {
			return nil, err
		}
		asm, err := auth.GetAuthServerMetadata(ctx, issuer, a.hc)
		if err != nil {
			return nil, fmt.Errorf("oauth: authorization server metadata: %w", redact.Error(err))
		}
		d := &discovery{resource: prm.Resource, prm: &prm, asm: asm, published: asm != nil}
		if asm == nil {
			d.asm = fallbackEndpoints(strings.TrimRight(issuer, "/"))
		}
		if err := a.checkEndpoints(ctx, d.asm); err != nil {
			return nil, err
		}
		return d, nil
	}

	// 2025-03-26: the server's origin is its authorization server. Its
	// metadata is taken as published: that revision did not ask the issuer
	// to match, and servers of that time do not always.
	var asm oauthex.AuthServerMeta
	found, err := a.getJSON(ctx, "authorization server metadata", origin.String()+"/.well-known/oauth-authorization-server", &asm)
	if err != nil {
		return nil, fmt.Errorf("oauth: authorization server metadata: %w", err)
	}
	d := &discovery{resource: a.resource, asm: fallbackEndpoints(origin.String()), legacy: !found, published: found}
	if found {
		if asm.Issuer == "" {
			asm.Issuer = origin.String()
		}
		d.asm = &asm
	}
	if err := a.checkEndpoints(ctx, d.asm); err != nil {
		return nil, err
	}
	return d, nil
}

// checkEndpoints refuses metadata whose endpoints the client would use (or
// send the user to) lead somewhere discovery must not go (guard.checkURL).
func (a *Authorizer) checkEndpoints(ctx context.Context, asm *oauthex.AuthServerMeta) error {
	for _, e := range []struct{ what, url string }{
		{"authorization endpoint", asm.AuthorizationEndpoint},
		{"token endpoint", asm.TokenEndpoint},
		{"registration endpoint", asm.RegistrationEndpoint},
	} {
		if err := a.guard.checkURL(ctx, "the authorization server metadata's "+e.what, e.url); err != nil {
			return err
		}
	}
	return nil
}

// fallbackEndpoints are the 2025-03-26 default endpoints of an
// authorization server that publishes no metadata.
func fallbackEndpoints(base string) *oauthex.AuthServerMeta {
	return &oauthex.AuthServerMeta{
		Issuer:                base,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
	}
}

// getJSON fetches a metadata document (what says which) into v. It reports
// false, and no error, when the server has none there (any 4xx).
func (a *Authorizer) getJSON(ctx context.Context, what, u string, v any) (bool, error) {
	if err := a.guard.checkURL(ctx, what, u); err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return false, redact.Error(err, u)
	}
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return false, fmt.Errorf("decode: %w", err)
	}
	return true, nil
}

// resourceBinds reports whether resource, from protected resource metadata,
// binds the server URL addressed: the same scheme and host (either case),
// query and fragment, and a path equal to the server's or a prefix of it at
// a segment boundary, a trailing slash aside. It is mcp-go's
// resourceBindsToURL (client/transport/oauth.go), which is unexported.
func resourceBinds(resource, addressed string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(addressed)
	if err1 != nil || err2 != nil {
		return resource == addressed
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Host, s.Host) ||
		r.RawQuery != s.RawQuery || r.Fragment != s.Fragment || r.User.String() != s.User.String() {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}
