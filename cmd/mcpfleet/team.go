package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	fleets "github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
	"github.com/mcpfleet/mcpfleet/internal/netguard"
)

// teamFlags are serve's flags of a team's gateway: with --auth-issuer or
// --api-keys, serve --http serves each identity its own fleet from the
// config as a template, under the config's policy.
type teamFlags struct {
	issuers       stringList
	audience      string
	apiKeys       string
	identityClaim string
	groupsClaim   string
	maxIdentities int
	identityIdle  time.Duration
}

// on reports whether serve runs as a team's gateway.
func (t *teamFlags) on() bool { return len(t.issuers) > 0 || t.apiKeys != "" }

// addTeamFlags adds the team's flags to serve's.
func addTeamFlags(fs *flag.FlagSet, t *teamFlags) {
	fs.Var(&t.issuers, "auth-issuer", "serve a team: accept JWT access tokens of the authorization server `URL` (repeatable); each identity gets its own fleet, the config being its template")
	fs.StringVar(&t.audience, "auth-audience", "", "the gateway's public `URL` (https://host/mcp), the audience tokens must be issued for (default: the URL served, on loopback only)")
	fs.StringVar(&t.apiKeys, "api-keys", "", "serve a team: accept the API keys of `FILE` (mode 0600, JSON: {\"keys\": [{\"identity\": ..., \"key\": ...}]})")
	fs.StringVar(&t.identityClaim, "identity-claim", "sub", "the token claim that names the identity")
	fs.StringVar(&t.groupsClaim, "groups-claim", "groups", "the token claim that lists the identity's groups, for the policy")
	fs.IntVar(&t.maxIdentities, "max-identities", 0, fmt.Sprintf("fleets up at once before idle ones are closed (default %d)", fleets.DefaultMaxLive))
	fs.DurationVar(&t.identityIdle, "identity-idle", 0, fmt.Sprintf("how long an identity's fleet stays up unused (default %v)", gateway.DefaultIdentityIdleTimeout))
}

// checkTeamFlags checks the team's flags against serve's others.
func checkTeamFlags(f *serveFlags) error {
	t := &f.team
	if !t.on() {
		if t.audience != "" {
			return usagef("--auth-audience needs --auth-issuer")
		}
		return nil
	}
	switch {
	case f.http == "":
		return usagef("--auth-issuer and --api-keys serve a team over HTTP: give --http ADDR")
	case f.tokenFile != "" || f.noAuth:
		return usagef("--auth-issuer and --api-keys authenticate every client: drop --token and --no-auth")
	case t.audience != "" && len(t.issuers) == 0:
		return usagef("--auth-audience is for --auth-issuer")
	}
	return nil
}

// serveTeam runs serve --http as a team's gateway until ctx ends.
func serveTeam(ctx context.Context, e *env, f *serveFlags, level slog.Level) error {
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	config := f.common.config
	tmpl, policy, data, err := gateway.LoadTeamConfig(config)
	if err != nil {
		return err
	}
	var auths []gateway.Authenticator
	var keys *gateway.APIKeys
	if f.team.apiKeys != "" {
		if keys, err = gateway.LoadAPIKeys(f.team.apiKeys); err != nil {
			return err
		}
		auths = append(auths, keys)
	}
	err = gateway.CheckBind(f.http, gateway.BindSecurity{Token: true, TLS: f.tlsCert != "", ClientCerts: f.clientCA != "", InsecureHTTP: f.insecureHTTP})
	if errors.Is(err, gateway.ErrTokenInClear) {
		return fmt.Errorf("%w (--tls-cert FILE --tls-key FILE; or, behind a proxy that ends TLS, --insecure-http)", err)
	} else if err != nil {
		return err
	}
	ln, served, err := listenHTTP(f)
	if err != nil {
		return err
	}
	audience := f.team.audience
	if audience == "" {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		if len(f.team.issuers) > 0 && !netguard.IsLoopback(host) {
			ln.Close()
			return usagef("--auth-audience URL is required beyond loopback: the gateway's public URL, which tokens must be issued for")
		}
		audience = served
	}
	if len(f.team.issuers) > 0 {
		v, err := gateway.NewJWTValidator(gateway.JWTConfig{Issuers: f.team.issuers, Audience: audience,
			IdentityClaim: f.team.identityClaim, GroupsClaim: f.team.groupsClaim, Logger: logger})
		if err != nil {
			ln.Close()
			return err
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := v.Discover(dctx); err != nil {
			logger.Warn("mcpfleet: the authorization server's keys could not be fetched yet; tried again at the first token", "err", err)
		}
		cancel()
		auths = append([]gateway.Authenticator{v}, auths...)
	}
	copts := []client.Option{client.WithClientInfo(mcp.Implementation{Name: "mcpfleet", Version: version()})}
	if f.separator != "" {
		copts = append(copts, client.WithSeparator(f.separator))
	}
	team, err := gateway.NewTeam(gateway.TeamConfig{
		Fleet: fleets.Config{Template: tmpl, Logger: logger, MaxLive: f.team.maxIdentities,
			IdleTimeout: f.team.identityIdle, Options: copts},
		Authenticators:       auths,
		Resource:             audience,
		AuthorizationServers: f.team.issuers,
		Policy:               policy,
		Options:              gatewayOptions(f, logger),
		HTTP:                 gateway.HTTPOptions{AllowedOrigins: f.origins},
		IdleTimeout:          f.team.identityIdle,
		StartupWait:          cmpOrNeg(f.startupWait),
		Logger:               logger,
	})
	if err != nil {
		ln.Close()
		return err
	}
	defer team.Close()
	rules := 0
	if policy != nil {
		rules = len(policy.Rules)
	}
	logger.Info("mcpfleet: serving a team", "audience", audience, "issuers", strings.Join(f.team.issuers, " "),
		"api_keys", keys != nil, "servers", len(tmpl.Servers()), "policy_rules", rules)
	if f.admin {
		logger.Info("mcpfleet: a team's gateway has no admin endpoint: status, tools and call are per identity")
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { watchTeam(ctx, config, f.team.apiKeys, data, keys, team, f.watchInterval, logger) })

	srv := newHTTPServer(team, logger)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "%s%s\n", readyLine, served)
	select {
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = team.Shutdown(sctx) // ends the sessions, whose streams hold connections open
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	return nil
}

// gatewayOptions are the options of serve's gateways.
func gatewayOptions(f *serveFlags, logger *slog.Logger) []gateway.Option {
	opts := []gateway.Option{gateway.WithLogger(logger), gateway.WithServerInfo("mcpfleet", version()),
		gateway.WithClientLimits(f.inFlight, f.rate), gateway.WithSessionCaps(f.maxSessions, f.maxClientSess, f.openRate),
		gateway.WithMaxMessageBytes(f.maxMessage)}
	if f.toolSearch {
		opts = append(opts, gateway.WithToolSearch())
	}
	if f.bareNames {
		opts = append(opts, gateway.WithBareToolNames())
	}
	if f.dropStale {
		opts = append(opts, gateway.WithDropStaleTools())
	}
	return opts
}

// watchTeam looks at the team's config file and API key file every
// interval until ctx ends: a changed policy is put in force at once (in
// the sessions already open too), changed API keys are read again; a
// change of the servers is logged, since it applies at the next start.
func watchTeam(ctx context.Context, config, keysPath string, data []byte, keys *gateway.APIKeys, team *gateway.Team,
	interval time.Duration, logger *slog.Logger) {
	if interval <= 0 {
		interval = configfile.DefaultWatchInterval
	}
	stamp := func(path string) string {
		fi, err := os.Stat(path)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(fi.ModTime().UnixNano(), fi.Size(), fi.Mode())
	}
	servers, _, _ := gateway.SplitPolicy(data)
	servers = bytes.Clone(servers)
	cfgStamp, keysStamp := stamp(config), ""
	if keysPath != "" {
		keysStamp = stamp(keysPath)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s := stamp(config); s != cfgStamp {
			cfgStamp = s
			_, policy, fresh, err := gateway.LoadTeamConfig(config)
			if err != nil {
				logger.Error("mcpfleet: config: not applied; the policy in force stays", "path", config, "err", err)
				continue
			}
			if err := team.SetPolicy(policy); err != nil {
				logger.Error("mcpfleet: config: the policy was not applied", "path", config, "err", err)
				continue
			}
			logger.Info("mcpfleet: config: policy applied", "path", config)
			if now, _, _ := gateway.SplitPolicy(fresh); !sameJSON(now, servers) {
				logger.Warn("mcpfleet: config: the servers changed; a team's servers change at the next start of serve", "path", config)
				servers = bytes.Clone(now)
			}
		}
		if keysPath != "" {
			if s := stamp(keysPath); s != keysStamp {
				keysStamp = s
				if err := keys.Reload(); err != nil {
					logger.Error("mcpfleet: api keys: not reloaded; the keys read before stay", "path", keysPath, "err", err)
				} else {
					logger.Info("mcpfleet: api keys: reloaded", "path", keysPath, "keys", keys.Len())
				}
			}
		}
	}
}

// sameJSON reports whether a and b are the same JSON value (whatever their
// spacing), or, if either is not plain JSON, the same bytes.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(va) // maps marshal sorted: a canonical form
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// cmpOrNeg is d, or -1 for 0 (serve's "not at all", which TeamConfig says
// with a negative value).
func cmpOrNeg(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
