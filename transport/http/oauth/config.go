package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/netguard"
	"github.com/mcpfleet/mcpfleet/internal/redact"
)

// Grant is how the client obtains its tokens.
type Grant int

const (
	// AuthorizationCode is the authorization code grant with PKCE (S256):
	// the user approves in a browser. The default.
	AuthorizationCode Grant = iota
	// ClientCredentials is the client credentials grant (the MCP
	// extension SEP-1046) for headless hosts: a pre-registered client
	// authenticates with its secret or a private key, no user involved.
	ClientCredentials
	// TokenExchange is enterprise-managed authorization (SEP-990): an ID
	// token from the enterprise identity provider is exchanged there for an
	// identity assertion grant (RFC 8693), which the server's authorization
	// server takes in a JWT bearer grant (RFC 7523). No user step.
	TokenExchange
)

var grantNames = [...]string{"authorization_code", "client_credentials", "token_exchange"}

// String returns the grant's name as the config file spells it.
func (g Grant) String() string {
	if g >= 0 && int(g) < len(grantNames) {
		return grantNames[g]
	}
	return "Grant(" + strconv.Itoa(int(g)) + ")"
}

// ParseGrant returns the Grant named s ("authorization_code",
// "client_credentials", "token_exchange"); empty is AuthorizationCode.
func ParseGrant(s string) (Grant, error) {
	if s == "" {
		return AuthorizationCode, nil
	}
	for i, n := range grantNames {
		if n == s {
			return Grant(i), nil
		}
	}
	return 0, fmt.Errorf("unknown grant %q (want %s)", s, strings.Join(grantNames[:], ", "))
}

// DefaultCallbackPort is the loopback port of the default redirect URI,
// http://127.0.0.1:33418/callback, when neither RedirectURI nor
// CallbackPort is set.
const DefaultCallbackPort = 33418

// Config is how one server's client authorizes. The zero value works for a
// server whose authorization server offers dynamic client registration:
// the client registers itself, the user approves in a browser, and the
// redirect comes to DefaultCallbackPort on 127.0.0.1.
//
// ClientSecret, PrivateKey and the ID token are secrets: String, LogValue
// and every error leave them out.
type Config struct {
	// Grant is how tokens are obtained. Defaults to AuthorizationCode.
	Grant Grant

	// ClientID is a pre-registered client's id. Empty means: a Client ID
	// Metadata Document (ClientMetadataURL) if the authorization server
	// supports them, else dynamic client registration (RFC 7591).
	ClientID string
	// ClientSecret authenticates a pre-registered confidential client
	// (client_secret_basic or client_secret_post, as the authorization
	// server offers).
	ClientSecret string
	// PrivateKey, a PEM PKCS#8 EC (P-256) or RSA key, authenticates the
	// client with private_key_jwt (RFC 7523) instead of a secret.
	PrivateKey string
	// SigningAlgorithm is the JWS algorithm for PrivateKey: ES256 or RS256.
	// Defaults to the one the key's type implies.
	SigningAlgorithm string
	// TokenEndpointAuthMethod overrides the choice among none,
	// client_secret_basic, client_secret_post and private_key_jwt, which
	// otherwise follows what was configured and what the authorization
	// server supports.
	TokenEndpointAuthMethod string
	// ClientMetadataURL is the HTTPS URL of the client's Client ID
	// Metadata Document, used as its client id where the authorization
	// server supports them (client_id_metadata_document_supported).
	ClientMetadataURL string
	// ClientName is the client_name of a dynamic registration. Defaults to
	// "mcpfleet".
	ClientName string

	// Issuer pins the server's authorization server: the issuer identifier
	// (RFC 8414) its metadata must carry. The client then talks to no other
	// authorization server for this server, and sends its client secret,
	// client assertion or ID token to no other; a server whose metadata
	// names another fails with ErrIssuerChanged. Without it the first
	// issuer seen is remembered in the token store with the server's
	// credentials, and a change needs the host's consent (the same error,
	// naming both; see Authorizer.TrustIssuer): never a silent switch.
	Issuer string

	// Scopes, when set, are asked for instead of the ones discovered (the
	// WWW-Authenticate challenge's scope, else the server's
	// scopes_supported, else none).
	Scopes []string

	// RedirectURI is where the authorization server sends the user back
	// with the code. Defaults to http://127.0.0.1:<CallbackPort>/callback.
	RedirectURI string
	// CallbackPort is the loopback port of the default RedirectURI.
	// Defaults to DefaultCallbackPort.
	CallbackPort int

	// IdPTokenEndpoint, IdPClientID and IdPClientSecret are the enterprise
	// identity provider's token endpoint and this client's credentials
	// there (TokenExchange).
	IdPTokenEndpoint string
	IdPClientID      string
	IdPClientSecret  string
	// IDToken returns the user's ID token from the identity provider
	// (TokenExchange).
	IDToken func(ctx context.Context) (string, error)
	// IDTokenFile, when IDToken is nil, is a file holding the user's ID
	// token, read at each exchange (TokenExchange): a token that a login
	// helper or an agent of the identity provider keeps fresh there. This
	// is how a config file gives the grant its ID token.
	IDTokenFile string
}

// maxIDTokenBytes bounds what is read of IDTokenFile.
const maxIDTokenBytes = 64 << 10

// idToken returns the ID token of the TokenExchange grant: IDToken's, or
// IDTokenFile's content without surrounding white space.
func (c Config) idToken(ctx context.Context) (string, error) {
	if c.IDToken != nil {
		return c.IDToken(ctx)
	}
	f, err := os.Open(c.IDTokenFile)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIDTokenBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", c.IDTokenFile, err)
	case len(data) > maxIDTokenBytes:
		return "", fmt.Errorf("%s: larger than %d bytes: not an ID token", c.IDTokenFile, maxIDTokenBytes)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s: empty", c.IDTokenFile)
	}
	return tok, nil
}

// Redirect returns the redirect URI the client uses.
func (c Config) Redirect() string {
	if c.RedirectURI != "" {
		return c.RedirectURI
	}
	port := c.CallbackPort
	if port == 0 {
		port = DefaultCallbackPort
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	fail := func(field, format string, args ...any) error {
		return fmt.Errorf("oauth: %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch c.Grant {
	case AuthorizationCode:
	case ClientCredentials:
		if c.ClientID == "" {
			return fail("clientId", "the client_credentials grant needs a pre-registered client")
		}
		if c.ClientSecret == "" && c.PrivateKey == "" {
			return fail("clientSecret", "the client_credentials grant needs a client secret or a private key")
		}
	case TokenExchange:
		switch {
		case c.ClientID == "":
			return fail("clientId", "the token_exchange grant needs a pre-registered client")
		case c.IdPTokenEndpoint == "":
			return fail("idpTokenEndpoint", "missing for the token_exchange grant")
		case c.IdPClientID == "":
			return fail("idpClientId", "missing for the token_exchange grant")
		case c.IDToken == nil && c.IDTokenFile == "":
			return fail("idTokenFile", "missing for the token_exchange grant (or oauth.Config.IDToken, in code)")
		}
	default:
		return fail("grant", "unknown %v", c.Grant)
	}
	if c.ClientSecret != "" && c.PrivateKey != "" {
		return fail("privateKey", "set a client secret or a private key, not both")
	}
	if c.PrivateKey != "" {
		if _, err := parseSigner(c.PrivateKey, c.SigningAlgorithm); err != nil {
			return fail("privateKey", "%v", err)
		}
	}
	switch c.TokenEndpointAuthMethod {
	case "", "none", "client_secret_basic", "client_secret_post", "private_key_jwt":
	default:
		return fail("tokenEndpointAuthMethod", "unknown %q", c.TokenEndpointAuthMethod)
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" {
			return fail("clientMetadataUrl", "must be an https URL with a path")
		}
	}
	if c.Issuer != "" {
		u, err := url.Parse(c.Issuer)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			!(u.Scheme == "https" || u.Scheme == "http" && netguard.IsLoopback(u.Hostname())) {
			return fail("issuer", "must be an https URL (http only on localhost) without query or fragment")
		}
	}
	if c.CallbackPort < 0 || c.CallbackPort > 65535 {
		return fail("callbackPort", "out of range: %d", c.CallbackPort)
	}
	if c.RedirectURI != "" && c.CallbackPort != 0 {
		return fail("callbackPort", "set redirectUri or callbackPort, not both")
	}
	if u, err := url.Parse(c.Redirect()); err != nil || u.Scheme == "" || u.Host == "" {
		return fail("redirectUri", "not an absolute URL")
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\n") {
			return fail("scopes", "invalid scope %q", s)
		}
	}
	return nil
}

// String describes c without its secrets.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("oauth grant=" + c.Grant.String())
	if c.ClientID != "" {
		b.WriteString(" clientId=" + c.ClientID)
	}
	if c.ClientSecret != "" {
		b.WriteString(" clientSecret=<redacted>")
	}
	if c.PrivateKey != "" {
		b.WriteString(" privateKey=<redacted>")
	}
	if c.ClientMetadataURL != "" {
		b.WriteString(" clientMetadataUrl=" + redact.URL(c.ClientMetadataURL))
	}
	if c.Issuer != "" {
		b.WriteString(" issuer=" + redact.URL(c.Issuer))
	}
	if len(c.Scopes) > 0 {
		b.WriteString(" scopes=" + strings.Join(c.Scopes, ","))
	}
	b.WriteString(" redirect=" + c.Redirect())
	if c.IdPTokenEndpoint != "" {
		b.WriteString(" idpTokenEndpoint=" + redact.URL(c.IdPTokenEndpoint))
	}
	if c.IdPClientID != "" {
		b.WriteString(" idpClientId=" + c.IdPClientID)
	}
	if c.IDTokenFile != "" {
		b.WriteString(" idTokenFile=" + c.IDTokenFile)
	}
	if c.IdPClientSecret != "" {
		b.WriteString(" idpClientSecret=<redacted>")
	}
	return b.String()
}

// GoString is String, so that %#v shows no secret either.
func (c Config) GoString() string { return "oauth.Config{" + c.String() + "}" }

// Format prints the redacted form for every verb.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, c.GoString())
		return
	}
	fmt.Fprint(f, c.String())
}

// LogValue logs c without its secrets.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// errNoClient is why an authorization cannot start: no way to identify the
// client to the authorization server.
var errNoClient = errors.New("the authorization server offers neither dynamic client registration nor client ID metadata documents; configure a client id")
