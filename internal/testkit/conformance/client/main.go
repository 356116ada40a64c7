// Command client is the client under test of the MCP conformance suite
// (@modelcontextprotocol/conformance, client scenarios), built on mcpfleet's
// Manager. The suite runs it once per scenario with the scenario's server URL
// as the last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO.
//
// Every request goes through the Manager: the handshake and catalog fetch of
// Add and WaitFor, CallTool, and the Manager's elicitation handler. For the
// auth scenarios the server gets an OAuth config from the scenario's
// context (MCP_CONFORMANCE_CONTEXT: pre-registered credentials, a private
// key, the enterprise identity provider's token), and the client plays the
// user: when the server needs authorization it follows the authorization
// URL (the suite's authorization server approves at once and redirects)
// and hands the redirect to CompleteAuthorization, as a host would after
// the user approved in a browser. internal/testkit/conformance/baseline.json lists
// the scenarios expected to fail.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// server is the name the scenario's server is added under.
const server = "conformance"

// timeout bounds a whole scenario; the suite kills the client after 30 s.
const timeout = 20 * time.Second

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client [flags...] <server-url> (scenario in MCP_CONFORMANCE_SCENARIO)")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err := run(scenario, url, logger)
	for _, f := range cleanups {
		f()
	}
	if err != nil {
		logger.Error("scenario failed", "scenario", scenario, "err", err)
		os.Exit(1)
	}
}

// cleanups remove what a scenario left on disk, once it has run.
var cleanups []func()

func run(scenario, url string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	m := client.New(
		client.WithLogger(logger),
		client.WithClientInfo(mcp.Implementation{Name: "mcpfleet-conformance", Version: "0.1.0"}),
		client.WithElicitationHandler(acceptDefaults),
		// One dial, no retries: a scenario server that refuses us should
		// fail the scenario at once, not after a backoff schedule.
		client.WithPolicy(lifecycle.Policy{MaxAttempts: 1}),
	)
	defer m.Close()

	spec := client.ServerSpec{HTTP: &mcphttp.Spec{URL: url}}
	if strings.HasPrefix(scenario, "auth/") {
		cfg, err := oauthConfig(scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT"))
		if err != nil {
			return err
		}
		spec.OAuth = cfg
	}
	if err := connect(ctx, m, spec); err != nil {
		return err
	}

	switch scenario {
	case "initialize":
		// Add already ran initialize and tools/list; nothing more is asked.
		return nil
	case "tools_call":
		return call(ctx, m, "add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults":
		return call(ctx, m, "test_client_elicitation_defaults", nil)
	case "sse-retry":
		return call(ctx, m, "test_reconnection", nil)
	default:
		// Auth scenarios and any scenario this client does not know: connect
		// and list tools (done above), then call each tool without arguments.
		for t := range m.View().Tools() {
			if err := call(ctx, m, t.Name(), nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// connect adds the scenario's server and waits until it is Connected, or
// fails as soon as its one dial failed.
func connect(ctx context.Context, m *client.Manager, spec client.ServerSpec) error {
	events, stop := m.Events(0)
	defer stop()
	if err := m.Add(ctx, server, spec); err != nil {
		return err
	}
	authorizations := 0
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("connect: %w", ctx.Err())
		case ev := <-events:
			if ev.Kind != client.EventState {
				continue
			}
			switch ev.To {
			case lifecycle.Connected:
				return nil
			case lifecycle.PermanentlyFailed:
				return fmt.Errorf("connect: %w", ev.Err)
			case lifecycle.NeedsAuthorization:
				if authorizations++; authorizations > maxAuthorizations {
					return fmt.Errorf("connect: still needs authorization after %d: %w", maxAuthorizations, ev.Err)
				}
				if err := authorize(ctx, m, ev.AuthorizationURL); err != nil {
					return fmt.Errorf("connect: %w", err)
				}
			}
		}
	}
}

// maxAuthorizations bounds how often the client plays the user in one
// scenario; the Manager's own step-up limit comes first.
const maxAuthorizations = 5

// authorize plays the user who approves at url: the suite's authorization
// server approves at once and redirects to the redirect URI with the code,
// and that redirect goes to CompleteAuthorization, as a loopback listener
// or a user pasting it would hand it over.
func authorize(ctx context.Context, m *client.Manager, url string) error {
	if url == "" {
		var err error
		if url, err = m.StartAuthorization(ctx, server); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("authorization URL: %w", err)
	}
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Do(req)
	if err != nil {
		return fmt.Errorf("authorization request: %w", err)
	}
	resp.Body.Close()
	redirect := resp.Header.Get("Location")
	if redirect == "" {
		return fmt.Errorf("authorization request: HTTP %d without a redirect", resp.StatusCode)
	}
	return m.CompleteAuthorization(ctx, server, redirect)
}

// scenarioContext is what the suite hands an auth scenario's client.
type scenarioContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
}

// clientMetadataURL is the Client ID Metadata Document URL the suite
// expects (auth/basic-cimd); the client uses it where the authorization
// server supports such documents.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// oauthConfig is the server's OAuth config for an auth scenario.
func oauthConfig(scenario, raw string) (*oauth.Config, error) {
	var sc scenarioContext
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	cfg := &oauth.Config{
		ClientID:          sc.ClientID,
		ClientSecret:      sc.ClientSecret,
		ClientMetadataURL: clientMetadataURL,
		ClientName:        "mcpfleet-conformance",
	}
	switch {
	case sc.IdPIDToken != "":
		return tokenExchangeConfig(sc)
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		cfg.Grant = oauth.ClientCredentials
		cfg.PrivateKey = sc.PrivateKeyPEM
		cfg.SigningAlgorithm = sc.SigningAlgorithm
	}
	return cfg, nil
}

// tokenExchangeConfig is the OAuth config of the token exchange scenario
// (auth/cross-app-access-complete-flow), made as a host makes it: from a
// config file's oauth block, whose ID token is read from a file.
func tokenExchangeConfig(sc scenarioContext) (*oauth.Config, error) {
	dir, err := os.MkdirTemp("", "conformance")
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	idTokenFile := filepath.Join(dir, "id_token")
	if err := os.WriteFile(idTokenFile, []byte(sc.IdPIDToken), 0o600); err != nil {
		return nil, err
	}
	block, err := json.Marshal(map[string]string{"grant": "token_exchange", "clientId": sc.ClientID,
		"clientSecret": sc.ClientSecret, "clientName": "mcpfleet-conformance", "idpTokenEndpoint": sc.IdPTokenEndpoint,
		"idpClientId": sc.IdPClientID, "idTokenFile": idTokenFile})
	if err != nil {
		return nil, err
	}
	cfg, err := client.ParseConfig([]byte(`{"mcpServers": {"s": {"url": "http://127.0.0.1/mcp", "oauth": ` + string(block) + `}}}`))
	if err != nil {
		return nil, err
	}
	return cfg.Servers["s"].OAuth, nil
}

// call calls tool on the scenario's server, failing when the server does not
// publish it or answers with a tool error.
//
// args is any, not a map: a nil map in an interface would be sent as
// "arguments": null, which the suite's TypeScript servers reject, while a nil
// interface leaves arguments out.
func call(ctx context.Context, m *client.Manager, tool string, args any) error {
	cat, ok := m.View().Catalog(server)
	if !ok {
		return errors.New("no published catalog")
	}
	found := false
	for _, t := range cat.Tools() {
		found = found || t.Name == tool
	}
	if !found {
		return fmt.Errorf("tool %q not in the catalog", tool)
	}
	res, err := m.CallTool(ctx, server, tool, args)
	for stepUps := 0; errors.Is(err, client.ErrNeedsAuthorization) && stepUps < maxAuthorizations; stepUps++ {
		// A step-up: the server asks for more scope for this call.
		var ae *client.AuthorizationError
		errors.As(err, &ae)
		if err := authorize(ctx, m, ae.URL); err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		if err := m.WaitFor(ctx, server, lifecycle.Connected); err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		res, err = m.CallTool(ctx, server, tool, args)
	}
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	out, _ := json.Marshal(res)
	fmt.Printf("%s: %s\n", tool, out)
	if res.IsError {
		return fmt.Errorf("call %s: tool error", tool)
	}
	return nil
}

// acceptDefaults answers a form elicitation as a user who accepts every
// default the schema offers (SEP-1034): fields with a default get it, the
// others are left out.
func acceptDefaults(_ context.Context, _ string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	raw, err := json.Marshal(req.Params.RequestedSchema)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	content := map[string]any{}
	for name, p := range schema.Properties {
		if p.Default != nil {
			content[name] = p.Default
		}
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: content,
	}}, nil
}
