package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// A registration endpoint's refusal is said once, with its code and
// description; another answer by its status, never its body.
func TestRegistrationErrorSaysItOnce(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		want, never       string
	}{
		{"refused", "application/json", `{"error":"invalid_redirect_uri","error_description":"redirect not allowed"}`, 400,
			"oauth: the authorization server refused the client registration: invalid_redirect_uri (redirect not allowed)", "registration failed"},
		{"error page", "text/html", "<html><body>" + strings.Repeat("Internal Server Error ", 50) + "</body></html>", 500,
			"oauth: dynamic client registration: the authorization server answered 500 Internal Server Error", "<html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, err := oauthex.RegisterClient(context.Background(), srv.URL, &oauthex.ClientRegistrationMetadata{
				RedirectURIs: []string{"http://127.0.0.1:1/callback"}}, srv.Client())
			if err == nil {
				t.Fatal("registration succeeded")
			}
			got := registrationError(err).Error()
			if got != tc.want || strings.Contains(got, tc.never) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
