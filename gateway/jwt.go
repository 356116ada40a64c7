package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/sync/singleflight"

	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

// Defaults of JWTConfig.
const (
	// DefaultJWKSMaxAge is how long an issuer's key set is used before it
	// is fetched again.
	DefaultJWKSMaxAge = time.Hour
	// DefaultJWKSMinRefresh is how soon after a fetch of an issuer's key
	// set a token signed by a key not in it makes the validator fetch it
	// again (an issuer that rotated its keys): tokens naming made-up keys
	// cost the issuer at most one fetch per interval.
	DefaultJWKSMinRefresh = 10 * time.Second
	// DefaultTokenCacheSize is how many validated tokens the validator
	// remembers, so that a client's next request with the same token costs
	// a map lookup, not a signature check.
	DefaultTokenCacheSize = 10000
	// DefaultLeeway is the clock skew allowed on a token's exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
)

// maxJWKSBytes bounds an issuer's metadata and key set documents.
const maxJWKSBytes = 1 << 20

// signatureAlgorithms are the JWS algorithms a token may be signed with:
// asymmetric ones only, so that no public key can be taken for an HMAC
// secret, and never "none".
var signatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// JWTConfig configures a JWTValidator.
type JWTConfig struct {
	// Issuers are the authorization servers whose tokens are accepted, by
	// their issuer identifiers (RFC 8414): a token's iss must be one of
	// them exactly. Each one's key set is found through its metadata
	// (RFC 8414, else OpenID Connect discovery: its jwks_uri). An issuer
	// must be https, or http on a loopback address. At least one.
	Issuers []string
	// Audience is the gateway's canonical URL (https://mcp.example.com/mcp):
	// a token's aud must include it, since a token issued for another
	// resource must not be accepted here (RFC 8707, and the MCP
	// authorization specification). Required.
	Audience string
	// IdentityClaim is the claim that names the identity. Defaults to
	// "sub". With more than one issuer, an identity's ID is its issuer, a
	// '#', and the claim ("https://idp.example.com#alice"), so that two
	// issuers' subjects never meet.
	IdentityClaim string
	// GroupsClaim is the claim that lists the identity's groups (an array
	// of strings, or a string of names separated by spaces). Defaults to
	// "groups".
	GroupsClaim string
	// Leeway is the clock skew allowed on exp, nbf and iat. Defaults to
	// DefaultLeeway.
	Leeway time.Duration
	// JWKSMaxAge, MinRefresh and CacheSize default to DefaultJWKSMaxAge,
	// DefaultJWKSMinRefresh and DefaultTokenCacheSize.
	JWKSMaxAge time.Duration
	MinRefresh time.Duration
	CacheSize  int
	// HTTPClient fetches the issuers' metadata and key sets. Defaults to a
	// client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger gets a line for each key set fetched or failed. Defaults to
	// discarding them.
	Logger *slog.Logger
}

// JWTValidator is an Authenticator of JWT access tokens (RFC 9068 and
// others that carry iss, aud, exp and a subject), verified with the keys
// their issuer publishes. Key sets are fetched when first needed, kept for
// JWTConfig.JWKSMaxAge, and fetched again early when a token names a key
// the set does not have (the issuer rotated its keys), at most once per
// JWTConfig.MinRefresh. A token validated once is remembered until it
// expires (or its key leaves the issuer's set), so a client's requests cost
// one signature check per token. It is safe for concurrent use.
type JWTValidator struct {
	// Set at creation, read-only.
	cfg     JWTConfig
	issuers map[string]*issuerKeys

	cache tokenCache

	verified atomic.Int64 // signatures checked
}

// NewJWTValidator returns a validator of cfg. It fetches nothing yet: see
// Discover.
func NewJWTValidator(cfg JWTConfig) (*JWTValidator, error) {
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("mcpfleet: gateway: JWTConfig.Issuers is empty: name the authorization server whose tokens to accept")
	}
	if err := checkAudience(cfg.Audience); err != nil {
		return nil, err
	}
	if cfg.IdentityClaim == "" {
		cfg.IdentityClaim = "sub"
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.JWKSMaxAge <= 0 {
		cfg.JWKSMaxAge = DefaultJWKSMaxAge
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = DefaultJWKSMinRefresh
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultTokenCacheSize
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v := &JWTValidator{cfg: cfg, issuers: map[string]*issuerKeys{}}
	v.cache.init(cfg.CacheSize)
	for _, iss := range cfg.Issuers {
		u, err := url.Parse(iss)
		if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("mcpfleet: gateway: issuer %q is not an issuer identifier (an https URL without query or fragment)", iss)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && netguard.IsLoopback(u.Hostname())) {
			return nil, fmt.Errorf("mcpfleet: gateway: issuer %q is not https: its keys could be changed on the way, and with them who the gateway takes a client for", iss)
		}
		v.issuers[iss] = &issuerKeys{v: v, issuer: iss}
	}
	return v, nil
}

// checkAudience checks the gateway's canonical URL.
func checkAudience(aud string) error {
	if aud == "" {
		return errors.New("mcpfleet: gateway: the audience (the gateway's canonical URL, such as https://mcp.example.com/mcp) is required: tokens issued for other resources must be refused")
	}
	u, err := url.Parse(aud)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Fragment != "" {
		return fmt.Errorf("mcpfleet: gateway: audience %q is not the gateway's URL (https://host[:port]/path)", aud)
	}
	return nil
}

// Discover fetches every issuer's metadata and key set now, so that a
// mistake (an issuer that does not answer, metadata without jwks_uri)
// shows at start rather than at a client's first request. A failure is
// not kept: the next token tries again.
func (v *JWTValidator) Discover(ctx context.Context) error {
	var errs []error
	for _, ik := range v.issuers {
		if _, err := ik.refresh(ctx, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Verified counts the signatures the validator checked: the tokens it did
// not find in its cache.
func (v *JWTValidator) Verified() int64 { return v.verified.Load() }

// Authenticate validates token: its signature by a key of its issuer's,
// its issuer among the trusted ones, its audience, its expiry.
func (v *JWTValidator) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if strings.Count(token, ".") != 2 {
		return nil, notMine("not a JWT")
	}
	now := v.cfg.Now()
	if e := v.cache.get(token); e != nil {
		// Good until it expires, or until its key leaves the issuer's set
		// (fetched again when it is JWKSMaxAge old, cached tokens or not).
		if ks, _ := e.issuer.current(ctx, now); now.Before(e.id.Expiry.Add(v.cfg.Leeway)) && ks.has(e.kid) {
			return e.id, nil
		}
		v.cache.remove(token)
	}
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return nil, refuse("invalid", "not a signed JWT of an accepted algorithm (%s)", jwtReason(err))
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, refuse("invalid", "its claims do not parse")
	}
	ik := v.issuers[unverified.Issuer]
	if ik == nil {
		return nil, refuse("issuer", "issuer %q is not trusted by this gateway", unverified.Issuer)
	}
	kid := tok.Headers[0].KeyID
	key, err := ik.key(ctx, kid)
	if err != nil {
		return nil, err
	}
	v.verified.Add(1)
	var claims jwt.Claims
	var all map[string]any
	if err := tok.Claims(key, &claims, &all); err != nil {
		return nil, refuse("invalid", "its signature does not verify with the key %q of %s", kid, ik.issuer)
	}
	if claims.Expiry == nil {
		return nil, refuse("invalid", "it has no expiry (exp)")
	}
	// The canonical URL with or without a trailing slash is the same
	// resource.
	aud := jwt.Audience{v.cfg.Audience, strings.TrimSuffix(v.cfg.Audience, "/")}
	if aud[1] == aud[0] {
		aud[1] = aud[0] + "/"
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: ik.issuer, AnyAudience: aud, Time: now}, v.cfg.Leeway)
	if err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return nil, refuse("expired", "it expired at %s", claims.Expiry.Time().UTC().Format(time.RFC3339))
		case errors.Is(err, jwt.ErrInvalidAudience):
			return nil, refuse("audience", "it was issued for %q, not for this gateway (%s)", []string(claims.Audience), v.cfg.Audience)
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			return nil, refuse("invalid", "it is not valid yet")
		default:
			return nil, refuse("invalid", "%s", jwtReason(err))
		}
	}
	subject, _ := all[v.cfg.IdentityClaim].(string)
	if subject == "" {
		return nil, refuse("invalid", "it has no %q claim to name who it is for", v.cfg.IdentityClaim)
	}
	id := &Identity{ID: subject, Issuer: ik.issuer, Expiry: claims.Expiry.Time(), Claims: map[string]string{}}
	if len(v.issuers) > 1 {
		id.ID = ik.issuer + "#" + subject
	}
	id.Groups = groupsOf(all[v.cfg.GroupsClaim])
	for k, val := range all {
		if s, ok := val.(string); ok && !registered[k] {
			id.Claims[k] = s
		}
	}
	v.cache.put(token, &cacheEntry{id: id, issuer: ik, kid: key.KeyID}, now)
	return id, nil
}

// registered are the JWT claims that say what the token is rather than who
// it is for: not kept in an Identity's Claims.
var registered = map[string]bool{"iss": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true}

// jwtReason is go-jose's error without its package prefix.
func jwtReason(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.HasPrefix(s, "go-jose") {
		return s[i+2:]
	}
	return s
}

// groupsOf reads a groups claim: an array of strings, or one string of
// names separated by spaces (as scope is).
func groupsOf(v any) []string {
	switch g := v.(type) {
	case string:
		return strings.Fields(g)
	case []any:
		out := make([]string, 0, len(g))
		for _, x := range g {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// issuerKeys is one issuer's key set, as last fetched.
type issuerKeys struct {
	// Set at creation, read-only.
	v      *JWTValidator
	issuer string

	keys atomic.Pointer[keySet] // nil until fetched
	sf   singleflight.Group

	mu        sync.Mutex // guards the fields below
	jwksURI   string     // found by discovery
	attempted time.Time  // the last fetch, successful or not
}

// keySet is an issuer's keys by id, as one fetch found them. Immutable.
type keySet struct {
	byID    map[string]jose.JSONWebKey
	fetched time.Time
}

func (ks *keySet) has(kid string) bool {
	if ks == nil {
		return false
	}
	_, ok := ks.byID[kid]
	return ok
}

// key returns the issuer's key of kid (any key, if kid is empty and the set
// has one), fetching the set first if it has none, if it is older than
// JWKSMaxAge, or if it lacks kid and was fetched MinRefresh ago.
func (ik *issuerKeys) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	now := ik.v.cfg.Now()
	ks, err := ik.current(ctx, now)
	if ks == nil {
		return jose.JSONWebKey{}, refuse("unavailable", "the keys of %s could not be fetched: %v", ik.issuer, err)
	}
	if k, ok := find(ks, kid); ok {
		return k, nil
	}
	ik.mu.Lock()
	due := now.Sub(ik.attempted) >= ik.v.cfg.MinRefresh
	ik.mu.Unlock()
	if due {
		if fresh, err := ik.refresh(ctx, false); err == nil {
			ks = fresh
			if k, ok := find(ks, kid); ok {
				return k, nil
			}
		}
	}
	return jose.JSONWebKey{}, refuse("unknown_key", "it is signed by a key %s does not publish (kid %q)", ik.issuer, kid)
}

// current returns the issuer's key set, fetched first if it has none or
// it is JWKSMaxAge old; if the fetch fails, the set before it (nil if
// none).
func (ik *issuerKeys) current(ctx context.Context, now time.Time) (*keySet, error) {
	ks := ik.keys.Load()
	if ks != nil && now.Sub(ks.fetched) < ik.v.cfg.JWKSMaxAge {
		return ks, nil
	}
	// An issuer that does not answer is asked again after MinRefresh, not
	// at every request: the set before stays in use meanwhile.
	ik.mu.Lock()
	due := ik.attempted.IsZero() || now.Sub(ik.attempted) >= ik.v.cfg.MinRefresh
	ik.mu.Unlock()
	if !due {
		if ks == nil {
			return nil, errors.New("the last fetch failed; retried shortly")
		}
		return ks, nil
	}
	fresh, err := ik.refresh(ctx, false)
	if err == nil {
		return fresh, nil
	}
	return ks, err
}

// find returns the key of kid in ks; a token without a kid takes the set's
// one signing key, if it has one.
func find(ks *keySet, kid string) (jose.JSONWebKey, bool) {
	if kid != "" {
		k, ok := ks.byID[kid]
		return k, ok
	}
	if len(ks.byID) == 1 {
		for _, k := range ks.byID {
			return k, true
		}
	}
	return jose.JSONWebKey{}, false
}

// refresh fetches the issuer's key set (discovering its jwks_uri first, if
// it is not known or rediscover is set); concurrent calls share one fetch.
func (ik *issuerKeys) refresh(ctx context.Context, rediscover bool) (*keySet, error) {
	ch := ik.sf.DoChan("keys", func() (any, error) {
		// The fetch is every waiter's: it does not end with the first
		// caller's request.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		ks, err := ik.fetch(fctx, rediscover)
		if err != nil {
			ik.v.cfg.Logger.Warn("mcpfleet: gateway: fetching an issuer's keys", "issuer", ik.issuer, "err", err)
			return nil, err
		}
		return ks, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*keySet), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch does one discovery (if need be) and key set fetch.
func (ik *issuerKeys) fetch(ctx context.Context, rediscover bool) (*keySet, error) {
	ik.mu.Lock()
	ik.attempted = ik.v.cfg.Now()
	uri := ik.jwksURI
	ik.mu.Unlock()
	hc := ik.v.cfg.HTTPClient
	if uri == "" || rediscover {
		asm, err := auth.GetAuthServerMetadata(ctx, ik.issuer, hc)
		if err != nil {
			return nil, fmt.Errorf("the metadata of %s: %w", ik.issuer, err)
		}
		if asm == nil {
			return nil, fmt.Errorf("%s publishes no authorization server metadata (RFC 8414 or OpenID Connect discovery)", ik.issuer)
		}
		if asm.JWKSURI == "" {
			return nil, fmt.Errorf("the metadata of %s has no jwks_uri", ik.issuer)
		}
		u, err := url.Parse(asm.JWKSURI)
		if err != nil || u.Scheme != "https" && !(u.Scheme == "http" && netguard.IsLoopback(u.Hostname())) {
			return nil, fmt.Errorf("the jwks_uri of %s is not https: %q", ik.issuer, asm.JWKSURI)
		}
		uri = asm.JWKSURI
		ik.mu.Lock()
		ik.jwksURI = uri
		ik.mu.Unlock()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the key set of %s: %w", ik.issuer, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("the key set of %s: %w", ik.issuer, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the key set of %s: HTTP %d", ik.issuer, resp.StatusCode)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("the key set of %s is over %d bytes", ik.issuer, maxJWKSBytes)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("the key set of %s does not parse: %w", ik.issuer, err)
	}
	ks := &keySet{byID: map[string]jose.JSONWebKey{}, fetched: ik.v.cfg.Now()}
	for _, k := range set.Keys {
		// Public signing keys only: a set that carries a private or a
		// symmetric key is the issuer's mistake, not a key to trust.
		if !k.Valid() || !k.IsPublic() || k.Use == "enc" {
			continue
		}
		ks.byID[k.KeyID] = k
	}
	if len(ks.byID) == 0 {
		return nil, fmt.Errorf("the key set of %s has no public signing key", ik.issuer)
	}
	old := ik.keys.Swap(ks)
	ik.v.cfg.Logger.Debug("mcpfleet: gateway: fetched an issuer's keys", "issuer", ik.issuer, "keys", len(ks.byID))
	if old != nil {
		for kid := range old.byID {
			if _, ok := ks.byID[kid]; !ok {
				ik.v.cfg.Logger.Info("mcpfleet: gateway: an issuer withdrew a key; its tokens are refused from now on", "issuer", ik.issuer, "kid", kid)
			}
		}
	}
	return ks, nil
}

// cacheEntry is a validated token.
type cacheEntry struct {
	id     *Identity
	issuer *issuerKeys
	kid    string // of the key that verified it
}

// tokenCache remembers validated tokens by their SHA-256 (the tokens
// themselves are not kept), bounded: when full, expired ones go first,
// then any.
type tokenCache struct {
	max int
	mu  sync.Mutex
	m   map[[32]byte]*cacheEntry
}

func (c *tokenCache) init(max int) {
	c.max = max
	c.m = map[[32]byte]*cacheEntry{}
}

func (c *tokenCache) get(tok string) *cacheEntry {
	k := sha256.Sum256([]byte(tok))
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

func (c *tokenCache) remove(tok string) {
	k := sha256.Sum256([]byte(tok))
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

func (c *tokenCache) put(tok string, e *cacheEntry, now time.Time) {
	k := sha256.Sum256([]byte(tok))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, old := range c.m {
			if old.id.Expiry.Before(now) {
				delete(c.m, k)
			}
		}
		// Still full: a tenth goes, whichever the map gives first.
		for k := range c.m {
			if len(c.m) < c.max-c.max/10 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[k] = e
}
