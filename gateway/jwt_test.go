package gateway_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
)

// fakeNow is a clock a test moves.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// TestJWTKeyRotation: the issuer's keys are discovered (RFC 8414) and
// cached; a token signed by a new key makes the validator fetch the set
// again (at most once per MinRefresh); a key the issuer withdrew stops
// verifying once the set is fetched again (JWKSMaxAge), cached tokens
// signed by it included; a validated token costs one signature check.
func TestJWTKeyRotation(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Options{JWT: true})
	aud := "https://mcp.example.com/mcp"
	clock := &fakeNow{t: time.Now()}
	v, err := gateway.NewJWTValidator(gateway.JWTConfig{Issuers: []string{as.Issuer()}, Audience: aud,
		JWKSMaxAge: time.Hour, MinRefresh: time.Minute, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	mint := func() string {
		return as.Mint(t, map[string]any{"sub": "alice", "aud": aud, "groups": []string{"eng"},
			"iat": clock.now().Unix(), "exp": clock.now().Add(3 * time.Hour).Unix()})
	}
	old := mint()
	for range 100 {
		id, err := v.Authenticate(ctx, old)
		if err != nil || id.ID != "alice" || !id.InGroup("eng") || id.Issuer != as.Issuer() {
			t.Fatalf("%+v %v", id, err)
		}
	}
	if n, k := v.Verified(), as.JWKSRequests(); n != 1 || k != 1 {
		t.Fatalf("100 requests with one token: %d signatures checked, %d key set fetches; want 1 and 1", n, k)
	}

	// A new key: the next token names it, the set is fetched again.
	as.RotateKey(t)
	clock.add(2 * time.Minute)
	fresh := mint()
	if _, err := v.Authenticate(ctx, fresh); err != nil {
		t.Fatalf("a token of the new key: %v", err)
	}
	if k := as.JWKSRequests(); k != 2 {
		t.Fatalf("%d key set fetches after a rotation, want 2", k)
	}
	// Tokens naming made-up keys cost the issuer at most one fetch per
	// MinRefresh.
	for range 20 {
		_, err := v.Authenticate(ctx, as.MintUnknownKey(t, map[string]any{"sub": "mallory", "aud": aud}))
		if !errors.Is(err, gateway.ErrInvalidToken) || !strings.Contains(err.Error(), "does not publish") {
			t.Fatalf("a token of a made-up key: %v", err)
		}
	}
	if k := as.JWKSRequests(); k != 2 {
		t.Fatalf("%d key set fetches after 20 tokens of made-up keys within MinRefresh, want 2", k)
	}

	// The old key is withdrawn: once the set is fetched again, its tokens
	// (the cached one too) are refused; the new key's are not.
	as.RetireOldKeys()
	if _, err := v.Authenticate(ctx, old); err != nil {
		t.Fatalf("before the set is fetched again the cached token stands: %v", err)
	}
	clock.add(time.Hour)
	if _, err := v.Authenticate(ctx, fresh); err != nil {
		t.Fatalf("the new key's token after the refresh: %v", err)
	}
	if _, err := v.Authenticate(ctx, old); err == nil || !strings.Contains(err.Error(), "does not publish") {
		t.Fatalf("the withdrawn key's token after the refresh: %v", err)
	}
}

// TestJWTValidatorConfig: what a validator refuses to be made with.
func TestJWTValidatorConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  gateway.JWTConfig
		want string
	}{
		{gateway.JWTConfig{Audience: "https://a.example.com/mcp"}, "Issuers is empty"},
		{gateway.JWTConfig{Issuers: []string{"https://idp.example.com"}}, "audience"},
		{gateway.JWTConfig{Issuers: []string{"http://idp.example.com"}, Audience: "https://a.example.com/mcp"}, "is not https"},
		{gateway.JWTConfig{Issuers: []string{"https://idp.example.com?x=1"}, Audience: "https://a.example.com/mcp"}, "not an issuer identifier"},
		{gateway.JWTConfig{Issuers: []string{"https://idp.example.com"}, Audience: "mcp"}, "is not the gateway's URL"},
	} {
		if _, err := gateway.NewJWTValidator(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
