// Package oauth authorizes a client with an MCP server as the MCP
// authorization spec describes (OAuth 2.1 with discovery, resource
// indicators and PKCE), for one server at a time: an Authorizer holds that
// server's tokens and outlives every connection to it.
//
// transport/http takes an Authorizer (WithAuthorizer): every request of a
// Conn carries the token, a 401 refreshes it and sends the request again
// once (the server did not run it), and a request that only the user can
// authorize fails with an error wrapping ErrNeedsAuthorization. The
// client package makes one Authorizer per server from the server's OAuth
// config, and drives the interactive step (Start, Complete) through the
// Manager.
//
// What it does, and where each piece comes from:
//
//	WWW-Authenticate parsing              official Go SDK, oauthex.ParseWWWAuthenticate
//	protected resource metadata (9728)    here: the official SDK's fetch cannot tell "absent"
//	                                      from "for another resource", and its handlers skip a
//	                                      mismatched document; here it is refused (ErrResourceMismatch).
//	                                      The binding rule is mcp-go's resourceBindsToURL.
//	authorization server metadata         official Go SDK, auth.GetAuthServerMetadata (RFC 8414
//	(8414, OIDC discovery)                and OIDC, path insertion and appending, issuer check)
//	2025-03-26 fallbacks                  here (root metadata without the issuer check that
//	                                      revision did not have; /authorize, /token, /register)
//	dynamic client registration (7591)    official Go SDK, oauthex.RegisterClient
//	PKCE S256, authorization URL,         golang.org/x/oauth2 (GenerateVerifier,
//	code exchange                         S256ChallengeOption, Config.Exchange)
//	refresh                               here: x/oauth2's TokenSource cannot send the resource
//	                                      indicator (RFC 8707), which a refresh must carry
//	client credentials                    golang.org/x/oauth2/clientcredentials
//	private_key_jwt (7523)                here, signed with golang.org/x/oauth2/jws and crypto/ecdsa
//	                                      (x/oauth2 signs RS256 only)
//	token exchange (8693) for SEP-990     official Go SDK, oauthex.ExchangeToken; the JWT bearer
//	                                      grant after it on x/oauth2 (the SDK's EnterpriseHandler
//	                                      authenticates it in the body only)
//	refresh coalescing                    golang.org/x/sync/singleflight, on a context of its own,
//	                                      as mcp-go's handler does
//	scope selection, step-up, the         here, after the official SDK's AuthorizationCodeHandler
//	offline_access rule (SEP-2207)        (whose flow blocks inside one request; here the user's
//	                                      step is the host's, through Start and Complete)
//	token stores, loopback listener,      here
//	pasted redirects
//	the discovery guard                   here, after the official SDK's private-address guard,
//	                                      which its discovery client drops for a client with a
//	                                      dialer of its own (see below)
//
// What keeps credentials at home:
//
//   - The token goes only to the server's origin (Authorize leaves a
//     request elsewhere alone), and transport/http follows no redirect to
//     another origin.
//   - Discovery goes where the server points only within limits: https
//     (plain http only on localhost, for a server on localhost), redirects
//     within the origin, and no loopback or private address unless the host
//     configured something there (the server, the pinned issuer, the
//     identity provider); every URL is checked, and the default client also
//     checks every connection's resolved address. Violations wrap
//     ErrEndpointRefused.
//   - The client's credentials (secret, private key assertion, ID token,
//     a registration, the user) go only to the authorization server pinned
//     in Config.Issuer or, without a pin, the first one seen, remembered in
//     the token store before anything is sent; the server naming another is
//     refused with ErrIssuerChanged until the host consents (a pin,
//     TrustIssuer, or Forget).
//   - An authorization starts only with an authorization server whose
//     metadata lists PKCE S256 (ErrPKCEUnsupported), but for the 2025-03-26
//     fallback that publishes nothing.
//   - A redirect's state is checked before anything else in it.
//   - FileStore refuses a file that another user owns or others can write
//     (ErrUntrustedStore).
//
// Nothing here logs or puts in an error a client secret, a private key, a
// token, an authorization code, a PKCE verifier, or a URL's userinfo or
// query values; the types that hold them (Config, Token, Client, Entry,
// Redirect) print redacted. SECURITY.md at the repository's root says what
// goes where for the whole module.
package oauth
