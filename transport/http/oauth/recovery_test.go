package oauth_test

import (
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// codeRequests counts the authorization code redemptions srv saw (the
// registration check's fake code aside).
func codeRequests(srv *oauthtest.Server) int {
	n := 0
	for _, tr := range srv.TokenRequests() {
		if tr.Grant == "authorization_code" && tr.Form.Get("code") != "mcpfleet-registration-check" {
			n++
		}
	}
	return n
}

// withIss returns redirect with its iss parameter set to iss ("" drops
// it).
func withIss(t *testing.T, redirect, iss string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("iss")
	if iss != "" {
		q.Set("iss", iss)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// RFC 9207: where the authorization server says it sends iss, a redirect
// without it, or with another issuer's (a mix-up), is refused before its
// code is redeemed; nothing reaches the token endpoint, and the
// authorization stays open for the genuine redirect.
func TestRedirectIssuerCheckedBeforeCode(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{Metadata: func(m map[string]any) {
		m["authorization_response_iss_parameter_supported"] = true
	}})
	a := mustNew(t, srv.URL(), oauth.Config{})
	u, err := a.Start(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	redirect, err := oauthtest.Approve(ctx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	for _, iss := range []string{"", "https://evil.example.com", srv.Issuer() + "/other"} {
		err := a.Complete(ctx(t), withIss(t, redirect, iss))
		if err == nil || !strings.Contains(err.Error(), "RFC 9207") {
			t.Errorf("iss %q: %v, want the RFC 9207 refusal", iss, err)
		}
		if n := codeRequests(srv); n != 0 {
			t.Fatalf("iss %q: the code was redeemed (%d requests) before the issuer was checked", iss, n)
		}
	}
	if err := a.Complete(ctx(t), withIss(t, redirect, srv.Issuer())); err != nil {
		t.Fatalf("the genuine redirect: %v", err)
	}
	if n := codeRequests(srv); n != 1 {
		t.Errorf("%d code redemptions, want 1", n)
	}
	// Without the metadata's promise a redirect without iss is taken, and
	// one with another issuer's still refused.
	plain := oauthtest.Start(t, oauthtest.Options{})
	b := mustNew(t, plain.URL(), oauth.Config{})
	u, _ = b.Start(ctx(t))
	redirect, err = oauthtest.Approve(ctx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Complete(ctx(t), withIss(t, redirect, "https://evil.example.com")); err == nil {
		t.Error("another issuer's iss was taken")
	}
	if err := b.Complete(ctx(t), withIss(t, redirect, "")); err != nil {
		t.Errorf("no iss, none promised: %v", err)
	}
}

// The resource indicator a token was asked for (here the protected
// resource metadata's, the server's origin, not the URL the client
// connects to) is the one every refresh asks for: the first refresh, the
// next, and one by an Authorizer that read the entry from the store.
func TestRefreshKeepsIndicator(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{OriginResource: true})
	indicator := srv.Issuer() + "/"
	st := oauth.NewMemoryStore()
	var clock atomic.Int64
	now := time.Now()
	clock.Store(now.UnixNano())
	opts := []oauth.Option{oauth.WithStore(st), oauth.WithClock(func() time.Time { return time.Unix(0, clock.Load()) })}
	a := mustNew(t, srv.URL(), oauth.Config{}, opts...)
	u, err := a.Start(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	redirect, err := oauthtest.Approve(ctx(t), u)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Complete(ctx(t), redirect); err != nil {
		t.Fatal(err)
	}
	refresh := func(a *oauth.Authorizer, hours int) {
		t.Helper()
		clock.Store(now.Add(time.Duration(hours) * time.Hour).UnixNano()) // the hour-long token is due
		if err := a.Authorize(request(t, srv.URL())); err != nil {
			t.Fatal(err)
		}
	}
	refresh(a, 2)
	refresh(a, 4)
	b := mustNew(t, srv.URL(), oauth.Config{}, opts...) // a new process, the same store
	refresh(b, 6)
	var got []string
	for _, tr := range srv.TokenRequests() {
		if tr.Grant == "authorization_code" || tr.Grant == "refresh_token" {
			got = append(got, tr.Grant+" "+strings.Join(tr.Form["resource"], ","))
		}
	}
	want := []string{"authorization_code " + indicator, "refresh_token " + indicator, "refresh_token " + indicator,
		"refresh_token " + indicator}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("token requests:\n got %v\nwant %v", got, want)
	}
}

// A dynamic registration with no token to prove it (an authorization the
// user never finished) is checked at the token endpoint before the user is
// sent with it: one the authorization server still knows is kept; one it
// forgot (it restarted) is dropped and the client registers again, so the
// user's authorization succeeds.
func TestRegistrationCheckedBeforeTheUser(t *testing.T) {
	srv := oauthtest.Start(t, oauthtest.Options{})
	st := oauth.NewMemoryStore()
	first := mustNew(t, srv.URL(), oauth.Config{}, oauth.WithStore(st))
	if _, err := first.Start(ctx(t)); err != nil { // the user never comes back
		t.Fatal(err)
	}
	if n := srv.Registrations(); n != 1 {
		t.Fatalf("%d registrations", n)
	}
	checks := func() int {
		n := 0
		for _, tr := range srv.TokenRequests() {
			if tr.Form.Get("code") == "mcpfleet-registration-check" {
				n++
			}
		}
		return n
	}
	known := mustNew(t, srv.URL(), oauth.Config{}, oauth.WithStore(st))
	if _, err := known.Start(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := srv.Registrations(); n != 1 || checks() != 1 {
		t.Fatalf("a registration the server knows: %d registrations, %d checks; want 1 and 1", n, checks())
	}

	srv.RestartForgetting(t)
	again := mustNew(t, srv.URL(), oauth.Config{}, oauth.WithStore(st))
	u, err := again.Start(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Registrations(); n != 2 || checks() != 2 {
		t.Fatalf("a registration the server forgot: %d registrations, %d checks; want 2 and 2", n, checks())
	}
	redirect, err := oauthtest.Approve(ctx(t), u)
	if err != nil {
		t.Fatalf("the user at the authorization server: %v", err)
	}
	if err := again.Complete(ctx(t), redirect); err != nil {
		t.Fatal(err)
	}
	if tok := again.Token(ctx(t)); tok == nil {
		t.Fatal("no token after the authorization")
	}
}
