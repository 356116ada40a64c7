package client

import (
	"errors"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/oauthtest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// Through the Manager: a server that starts naming another authorization
// server fails with ErrIssuerChanged, and that one gets nothing, the client
// secret least of all; pinning it in the spec (the host's consent) lets it
// have the secret.
func TestOAuthIssuerChangeNeedsConsent(t *testing.T) {
	const secret = "CLIENT-SECRET-i4"
	legit := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": secret}})
	evil := oauthtest.Start(t, oauthtest.Options{Clients: map[string]string{"svc": secret}})
	m := newTestManager(t)
	r := record(m)
	cfg := oauth.Config{Grant: oauth.ClientCredentials, ClientID: "svc", ClientSecret: secret}
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: legit.URL()}, OAuth: &cfg})
	mustWait(t, m, "s", lifecycle.Connected)

	legit.SetAuthorizationServers(evil.Issuer())
	legit.ExpireAccessTokens()
	// A new runtime, whose dial needs a new token. (Reconnect, not a
	// restart of the server: this Manager's three quick dials can all be
	// refused while a server restarts on a loaded machine.)
	if err := m.Reconnect(testCtx(t), "s"); err != nil && !errors.Is(err, oauth.ErrIssuerChanged) {
		t.Fatal(err)
	}
	r.wait(t, func(e Event) bool {
		return e.Kind == EventState && e.Server == "s" && errors.Is(e.Err, oauth.ErrIssuerChanged)
	})
	if n := evil.AuthServerRequests(); n != 0 {
		t.Fatalf("%d requests reached the new authorization server without consent", n)
	}

	// The host consents by pinning the new issuer. (Its tokens are no
	// good at this test server, which knows only the first one's: the
	// server ends PermanentlyFailed, for want of a valid token, not for
	// the issuer.)
	pinned := cfg
	pinned.Issuer = evil.Issuer()
	if err := m.Remove(testCtx(t), "s"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, m, "s", ServerSpec{HTTP: &mcphttp.Spec{URL: legit.URL()}, OAuth: &pinned})
	mustWait(t, m, "s", lifecycle.PermanentlyFailed)
	if st, _ := m.Status("s"); errors.Is(st.LastError, oauth.ErrIssuerChanged) {
		t.Fatalf("the pinned issuer was refused: %v", st.LastError)
	}
	sent := 0
	for _, tr := range evil.TokenRequests() {
		if tr.BasicSecret == secret || tr.Form.Get("client_secret") == secret {
			sent++
		}
	}
	if sent == 0 {
		t.Error("the pinned issuer never got the secret")
	}
}
