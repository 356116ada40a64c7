package oauthtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	oauth2 "github.com/go-oauth2/oauth2/v4"
)

// jwtIssuer is the library's access token generator (oauth2.AccessGenerate)
// for Options.JWT: RFC 9068 access tokens, ES256, signed by the newest of
// the server's keys; all of them are published at /jwks until retired.
type jwtIssuer struct {
	s        *Server
	requests atomic.Int64 // of /jwks

	mu   sync.Mutex // guards keys and next
	keys []jose.JSONWebKey
	next int
}

func newJWTIssuer(s *Server) (*jwtIssuer, error) {
	j := &jwtIssuer{s: s}
	if _, err := j.rotate(); err != nil {
		return nil, err
	}
	return j, nil
}

// rotate makes a new signing key, published beside the others.
func (j *jwtIssuer) rotate() (jose.JSONWebKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.next++
	k := jose.JSONWebKey{Key: priv, KeyID: "key-" + strconv.Itoa(j.next), Algorithm: string(jose.ES256), Use: "sig"}
	j.keys = append(j.keys, k)
	return k, nil
}

// current is the signing key.
func (j *jwtIssuer) current() jose.JSONWebKey {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.keys[len(j.keys)-1]
}

// Token makes the access token of a grant: iss, sub (the user), aud (the
// resource the token request names), client_id, scope, iat, exp, jti, and
// the claims Options.Claims adds.
func (j *jwtIssuer) Token(_ context.Context, data *oauth2.GenerateBasic, isGenRefresh bool) (string, string, error) {
	ti := data.TokenInfo
	created := ti.GetAccessCreateAt()
	if created.IsZero() {
		created = data.CreateAt
	}
	claims := map[string]any{
		"iss": j.s.Issuer(), "sub": data.UserID, "client_id": data.Client.GetID(),
		"iat": created.Unix(), "exp": created.Add(ti.GetAccessExpiresIn()).Unix(), "jti": random(),
	}
	if scope := ti.GetScope(); scope != "" {
		claims["scope"] = scope
	}
	if data.Request != nil {
		if res := data.Request.FormValue("resource"); res != "" {
			claims["aud"] = res
		}
	}
	if j.s.opts.Claims != nil {
		for k, v := range j.s.opts.Claims(data.UserID) {
			claims[k] = v
		}
	}
	access, err := sign(j.current(), claims)
	if err != nil {
		return "", "", err
	}
	refresh := ""
	if isGenRefresh {
		refresh = random()
	}
	return access, refresh, nil
}

func random() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sign signs claims with k as an RFC 9068 access token.
func sign(k jose.JSONWebKey, claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}

// serveJWKS publishes the public halves of the keys.
func (j *jwtIssuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	j.requests.Add(1)
	j.mu.Lock()
	set := jose.JSONWebKeySet{}
	for _, k := range j.keys {
		set.Keys = append(set.Keys, k.Public())
	}
	j.mu.Unlock()
	writeJSON(w, http.StatusOK, set)
}

// JWKSRequests counts the requests of the key set (Options.JWT).
func (s *Server) JWKSRequests() int64 { return s.jwt.requests.Load() }

// RotateKey makes a new signing key (Options.JWT): tokens from now on are
// signed with it; the older keys stay published until RetireOldKeys.
func (s *Server) RotateKey(t testing.TB) {
	t.Helper()
	if _, err := s.jwt.rotate(); err != nil {
		t.Fatal(err)
	}
}

// RetireOldKeys publishes only the newest key (Options.JWT): tokens signed
// by the others no longer verify.
func (s *Server) RetireOldKeys() {
	s.jwt.mu.Lock()
	defer s.jwt.mu.Unlock()
	s.jwt.keys = s.jwt.keys[len(s.jwt.keys)-1:]
}

// Mint signs claims with the current key (Options.JWT), as a token of the
// server's: iss, iat and exp (an hour on) are added unless claims has them;
// a claim set to nil is left out.
func (s *Server) Mint(t testing.TB, claims map[string]any) string {
	t.Helper()
	tok, err := sign(s.jwt.current(), fill(s, claims))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// MintUnknownKey is Mint with a key the server does not publish, under a
// key id it does not use.
func (s *Server) MintUnknownKey(t testing.TB, claims map[string]any) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := sign(jose.JSONWebKey{Key: priv, KeyID: "not-published", Algorithm: string(jose.ES256)}, fill(s, claims))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func fill(s *Server, claims map[string]any) map[string]any {
	out := map[string]any{"iss": s.Issuer(), "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "jti": random()}
	for k, v := range claims {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}
