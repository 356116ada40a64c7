package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/gateway"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// serveFlags are serve's flags.
type serveFlags struct {
	common        commonFlags
	stdio         bool
	http          string
	tokenFile     string
	noAuth        bool
	insecureHTTP  bool
	tlsCert       string
	tlsKey        string
	clientCA      string
	origins       stringList
	toolSearch    bool
	admin         bool
	logLevel      string
	maxMessage    int64
	inFlight      int
	rate          float64
	maxSessions   int
	maxClientSess int
	openRate      float64
	watchInterval time.Duration
	startupWait   time.Duration
	separator     string
	bareNames     bool
	dropStale     bool
	team          teamFlags
}

// stringList is a flag that may be given several times.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// defaultStartupWait is how long serve's first tools/list waits for the
// servers still connecting: hosts that list tools once, at start, see them.
const defaultStartupWait = 10 * time.Second

// readyLine starts the line serve writes to stderr once it answers: tests
// and scripts wait for it.
const readyLine = "mcpfleet: serving MCP on "

func cmdServe(ctx context.Context, args []string, e *env) error {
	var f serveFlags
	fs := newFlags("serve", e, &f.common, flagConfig|flagVars)
	fs.BoolVar(&f.stdio, "stdio", false, "serve one MCP client on stdin and stdout (the default)")
	fs.StringVar(&f.http, "http", "", "serve streamable HTTP at http://`ADDR`/mcp (a port alone binds 127.0.0.1); another host than 127.0.0.1 or ::1 needs --tls-cert/--tls-key (or --client-ca)")
	fs.StringVar(&f.tokenFile, "token", "", "require of every HTTP client the bearer token in `FILE` (mode 0600; default: a token made at the first serve, kept in the state directory, and printed)")
	fs.BoolVar(&f.noAuth, "no-auth", false, "DANGEROUS: serve HTTP without a token: any program of any user of this machine could call every tool with your credentials")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "DANGEROUS: allow the bearer token over plain HTTP beyond loopback, where anyone on the network path can read it")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate `FILE` (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the key `FILE` of --tls-cert (PEM)")
	fs.StringVar(&f.clientCA, "client-ca", "", "require client certificates signed by the CAs in `FILE` (PEM); needs --tls-cert")
	fs.Var(&f.origins, "allow-origin", "a browser `origin` allowed besides local ones (repeatable)")
	fs.BoolVar(&f.toolSearch, "tool-search", false, "serve search_tools and call_tool instead of every tool")
	fs.BoolVar(&f.admin, "admin", true, "answer status, tools, call, watch and auth on a local admin endpoint")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level` on stderr: debug, info, warn or error")
	fs.Int64Var(&f.maxMessage, "max-message", 0, "the largest message a client may send, in `bytes` (default 16 MiB, as from servers)")
	fs.IntVar(&f.inFlight, "client-max-in-flight", 0, fmt.Sprintf("requests one client may have in flight, all its sessions together (default %d; -1: no limit)", gateway.DefaultClientMaxInFlight))
	fs.Float64Var(&f.rate, "client-rate", 0, fmt.Sprintf("requests a second one client may send, all its sessions together (default %d; -1: no limit)", gateway.DefaultClientRequestRate))
	fs.IntVar(&f.inFlight, "session-max-in-flight", 0, "the old name of --client-max-in-flight")
	fs.Float64Var(&f.rate, "session-rate", 0, "the old name of --client-rate")
	fs.IntVar(&f.maxSessions, "max-sessions", 0, fmt.Sprintf("HTTP sessions held at once, all clients together (default %d; -1: no cap)", gateway.DefaultMaxSessions))
	fs.IntVar(&f.maxClientSess, "max-client-sessions", 0, fmt.Sprintf("HTTP sessions one client may hold at once (default %d; -1: no cap)", gateway.DefaultMaxClientSessions))
	fs.Float64Var(&f.openRate, "session-open-rate", 0, fmt.Sprintf("HTTP sessions a second one client may open, in bursts of ten times as many (default %d; -1: no limit)", gateway.DefaultSessionOpenRate))
	fs.DurationVar(&f.watchInterval, "watch-interval", configfile.DefaultWatchInterval, "how often to look for changes of the config file")
	fs.DurationVar(&f.startupWait, "startup-wait", defaultStartupWait, "how long the first tools/list may wait for servers still connecting (0: not at all)")
	fs.StringVar(&f.separator, "separator", "", "the `separator` of qualified tool names, server and tool (default __; A-Z a-z 0-9 _ - . only)")
	fs.BoolVar(&f.bareNames, "bare-tool-names", false, "serve tools under their own names when the fleet has one server")
	fs.BoolVar(&f.dropStale, "drop-stale", false, "leave out the tools of a server that is down instead of listing them marked stale")
	addTeamFlags(fs, &f.team)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected arguments %q", pos)
	}
	if f.common.config, err = configPath(f.common.config); err != nil {
		return err
	}
	if f.common.config, err = filepath.Abs(f.common.config); err != nil {
		return err
	}
	if err := checkInputs(f.common.inputs); err != nil {
		return err
	}
	// A config that holds a serve of itself: refused before anything of
	// it runs.
	if err := checkChain(f.common.config); err != nil {
		return err
	}
	if f.stdio && f.http != "" {
		return usagef("--stdio and --http exclude each other")
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if f.clientCA != "" && f.tlsCert == "" {
		return usagef("--client-ca needs --tls-cert and --tls-key")
	}
	if f.http == "" && (f.tokenFile != "" || f.tlsCert != "" || len(f.origins) > 0 || f.noAuth || f.insecureHTTP) {
		return usagef("--token, --no-auth, --insecure-http, --tls-cert, --client-ca and --allow-origin are for --http")
	}
	if f.noAuth && f.tokenFile != "" {
		return usagef("--no-auth and --token exclude each other")
	}
	if f.http != "" {
		if _, _, err := net.SplitHostPort(loopbackByDefault(f.http)); err != nil {
			why := err.Error()
			if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
				why = ae.Err
			}
			return usagef("--http %q: %s: give HOST:PORT, or a port alone for 127.0.0.1", f.http, why)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usagef("--log-level: %v", err)
	}
	if f.separator != "" {
		if err := gateway.CheckSeparator(f.separator); err != nil {
			return usagef("--separator: %v", err)
		}
	}
	if err := checkTeamFlags(&f); err != nil {
		return err
	}
	if f.team.on() {
		f.http = loopbackByDefault(f.http)
		return serveTeam(ctx, e, &f, level)
	}
	if f.http == "" {
		return serve(ctx, e, &f, "", level)
	}
	token := ""
	switch {
	case f.tokenFile != "":
		if token, err = readSecretFile(f.tokenFile); err != nil {
			return fmt.Errorf("--token: %w", err)
		}
	case !f.noAuth:
		paths, err := pathsFor(f.common.config)
		if err != nil {
			return err
		}
		if token, err = servedToken(paths.serveToken); err != nil {
			return fmt.Errorf("the token of serve --http: %w", err)
		}
		// The user's client needs it: once it is in the client's config,
		// the same token serves every restart.
		fmt.Fprintf(e.stderr, "mcpfleet: HTTP clients must send the header\n  Authorization: Bearer %s\n"+
			"(the token is kept in %s; remove the file for a new one)\n", token, paths.serveToken)
	}
	f.http = loopbackByDefault(f.http)
	err = gateway.CheckBind(f.http, gateway.BindSecurity{Token: token != "", TLS: f.tlsCert != "", ClientCerts: f.clientCA != "",
		InsecureHTTP: f.insecureHTTP})
	switch {
	case errors.Is(err, gateway.ErrTokenInClear):
		return fmt.Errorf("%w (--tls-cert FILE --tls-key FILE; or, at your own risk, --insecure-http)", err)
	case errors.Is(err, gateway.ErrInsecureBind) && f.noAuth:
		return fmt.Errorf("%w (drop --no-auth, or require client certificates: --tls-cert/--tls-key/--client-ca)", err)
	case err != nil:
		return err
	}
	return serve(ctx, e, &f, token, level)
}

// loopbackByDefault completes an address given as a port alone ("8931" or
// ":8931") with 127.0.0.1: serve binds loopback unless told otherwise
// ("0.0.0.0:8931", which needs authentication).
func loopbackByDefault(addr string) string {
	if _, err := strconv.Atoi(addr); err == nil {
		return "127.0.0.1:" + addr
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// serve runs the fleet of the config until ctx ends (or, over stdio, the
// client closes stdin).
func serve(ctx context.Context, e *env, f *serveFlags, token string, level slog.Level) error {
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	config := f.common.config
	paths, err := pathsFor(config)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(paths.dir, 0o700); err != nil {
		return fmt.Errorf("the state directory: %w", err)
	}
	loader := newConfigLoader(e, config, &f.common, f.http != "") // over stdio, stdin is the client's
	loader.warn = func(s string) { logger.Warn(s) }
	cw, cfg, err := configfile.NewWatcher(config, configfile.WatchOptions{Interval: f.watchInterval, Logger: logger, Load: loader.load})
	if err != nil {
		return err
	}

	fw := gateway.NewForwarder()
	mopts := append(fw.ClientOptions(),
		client.WithLogger(logger),
		client.WithClientInfo(mcp.Implementation{Name: "mcpfleet", Version: version()}),
		client.WithTokenStore(oauth.NewFileStore(paths.tokens)),
		client.WithCatalogCache(paths.catalogs), // the tools of lazy servers are known at once
	)
	// What a crashed serve left running is ended; each serve of the config
	// has a state file of its own, so a second serve is the first's peer.
	if reg := openRegistry(paths, logger); reg != nil {
		defer reg.Close() // after the Manager closed its children
		mopts = append(mopts, client.WithStdioOptions(stdio.WithRegistry(reg)))
	}
	if f.separator != "" {
		mopts = append(mopts, client.WithSeparator(f.separator))
	}
	m := client.New(mopts...)
	defer m.Close()
	actx, cancel := context.WithTimeout(ctx, configfile.DefaultApplyTimeout)
	res, err := m.Apply(actx, cfg)
	cancel()
	if err != nil {
		logger.Error("mcpfleet: config: applied with errors", "path", config, "summary", res.String(), "err", err)
	} else {
		logger.Info("mcpfleet: config: applied", "path", config, "summary", res.String())
	}

	gopts := []gateway.Option{gateway.WithForwarder(fw), gateway.WithLogger(logger), gateway.WithServerInfo("mcpfleet", version()),
		gateway.WithClientLimits(f.inFlight, f.rate), gateway.WithSessionCaps(f.maxSessions, f.maxClientSess, f.openRate),
		gateway.WithMaxMessageBytes(f.maxMessage), gateway.WithStartupWait(f.startupWait)}
	if f.toolSearch {
		gopts = append(gopts, gateway.WithToolSearch())
	}
	if f.bareNames {
		gopts = append(gopts, gateway.WithBareToolNames())
	}
	if f.dropStale {
		gopts = append(gopts, gateway.WithDropStaleTools())
	}
	g := gateway.New(m, gopts...)
	defer g.Close()

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() { cw.Run(ctx, m) })

	if f.admin {
		serving := "stdio"
		if f.http != "" {
			serving = "http://" + f.http + "/mcp"
			if f.tlsCert != "" {
				serving = "https://" + f.http + "/mcp"
			}
		}
		closeAdmin, err := startAdmin(ctx, m, g, config, paths, serving,
			func(ctx context.Context) (client.ApplyResult, error) { return cw.Reload(ctx, m) }, logger)
		if err != nil {
			return err
		}
		defer closeAdmin()
	}

	if f.http == "" {
		logger.Info(readyLine + "stdio")
		return g.ServeStdio(ctx, e.stdin, e.stdout)
	}
	if token == "" && f.clientCA == "" {
		logger.Warn("mcpfleet: serving HTTP without authentication (--no-auth): any program of any user of this machine can call every tool with your credentials")
	}
	return serveHTTP(ctx, e, f, g, token, logger)
}

// serveHTTP serves the gateway over streamable HTTP until ctx ends.
func serveHTTP(ctx context.Context, e *env, f *serveFlags, g *gateway.Gateway, token string, logger *slog.Logger) error {
	h := g.HTTPHandler(gateway.HTTPOptions{Token: token, AllowedOrigins: f.origins})
	ln, served, err := listenHTTP(f)
	if err != nil {
		return err
	}
	srv := newHTTPServer(h, logger)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// The line a host or a script waits for: the address with the port
	// chosen, once connections are accepted.
	fmt.Fprintf(e.stderr, "%s%s\n", readyLine, served)
	select {
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.Shutdown(sctx) // ends the sessions, whose streams hold connections open
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	return nil
}

// listenHTTP listens on serve's --http address, with TLS when it has a
// certificate, and returns the URL it serves MCP at (the port chosen).
func listenHTTP(f *serveFlags) (ln net.Listener, served string, err error) {
	if ln, err = net.Listen("tcp", f.http); err != nil {
		return nil, "", err
	}
	scheme := "http"
	if f.tlsCert != "" {
		tc, err := tlsConfig(f)
		if err != nil {
			ln.Close()
			return nil, "", err
		}
		ln = tls.NewListener(ln, tc)
		scheme = "https"
	}
	return ln, scheme + "://" + ln.Addr().String() + "/mcp", nil
}

// newHTTPServer is the http.Server of serve --http: a client that sends a
// request slowly, or keeps a connection idle, is cut off (gateway's
// Default…Timeout); the timeouts bound reading requests, not the calls and
// streams that answer them.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{Handler: h,
		ReadHeaderTimeout: gateway.DefaultReadHeaderTimeout,
		ReadTimeout:       gateway.DefaultReadTimeout,
		IdleTimeout:       gateway.DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
}

// tlsConfig is the TLS of --tls-cert, --tls-key and --client-ca.
func tlsConfig(f *serveFlags) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca: no certificate in %s", f.clientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// startAdmin serves the admin endpoint on a port of 127.0.0.1 and writes
// the admin file of this serve that the commands find it by. The returned
// function stops it and removes the file.
func startAdmin(ctx context.Context, m *client.Manager, g *gateway.Gateway, config string, paths statePaths, serving string,
	reload func(context.Context) (client.ApplyResult, error), logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the admin endpoint: %w", err)
	}
	token := newToken()
	started := time.Now()
	h := admin.New(m, token, admin.Options{Gateway: g, Reload: reload,
		Serve: admin.ServeInfo{PID: os.Getpid(), Started: started, Serving: serving, Version: version(), Config: config}})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: gateway.DefaultReadHeaderTimeout, IdleTimeout: gateway.DefaultIdleTimeout,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("mcpfleet: the admin endpoint stopped", "err", err)
		}
	}()
	path := paths.admin(os.Getpid())
	if err := writeAdminFile(path, adminFile{Addr: ln.Addr().String(), Token: token, PID: os.Getpid(), Config: config,
		Started: started, Serving: serving}); err != nil {
		srv.Close()
		<-served
		return nil, fmt.Errorf("the admin file: %w", err)
	}
	logger.Debug("mcpfleet: admin endpoint", "addr", ln.Addr().String(), "file", path)
	return func() {
		removeAdminFile(path, token)
		srv.Close() // its watch streams end with ctx, which ends first
		<-served
		h.Close()
	}, nil
}
