package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/redact"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// Config is a set of servers as the standard config files describe them:
// the "mcpServers" object of Claude Desktop, Cursor and .mcp.json, or the
// "servers" object of VS Code's mcp.json.
type Config struct {
	// Source names where the config came from (a file path), for errors.
	Source string
	// Servers maps a server's name to its entry.
	Servers map[string]ServerConfig
}

// ServerConfig is one server's entry. Every string field may use ${VAR} and
// ${VAR:-default}, expanded when the config is parsed. Header and env values
// are secrets: String, LogValue and errors never show them.
type ServerConfig struct {
	// Type is "stdio", "http" (or "streamable-http") or "sse". Empty means
	// stdio when Command is set and http when URL is set.
	Type    string
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	Headers map[string]string
	// OAuth is the "oauth" block of an HTTP server: clientId,
	// clientSecret, scopes, callbackPort or redirectUri, grant
	// ("authorization_code", "client_credentials"), and
	// clientMetadataUrl, tokenEndpointAuthMethod, privateKey,
	// signingAlgorithm, clientName, and issuer (the authorization server
	// to pin, see oauth.Config.Issuer). The names follow Claude Code's and
	// Gemini CLI's oauth blocks where they have one. The client secret and
	// the private key are secrets.
	OAuth *oauth.Config

	// Disabled adds the server switched off.
	Disabled bool
	// Required makes Apply wait for the server to connect and fail if it
	// does not.
	Required bool
	// Lazy defers the first connect to the first call.
	Lazy bool
	// Timeout bounds each call ("30s", or a number of seconds).
	Timeout time.Duration
	// IdleTimeout closes the server's runtime after that long unused
	// ("idleTimeout": "5m", or a number of seconds); the next call starts
	// it again. See ServerSpec.IdleTimeout. Changing it needs no restart.
	IdleTimeout time.Duration
	// Reconnect overrides the manager's reconnect policy.
	Reconnect *lifecycle.Policy
	// ToolPrefix replaces the server's name in qualified tool names.
	ToolPrefix string
	// ToolFilter decides which of the server's tools are published: the
	// "tools" object, {"allow": [...], "deny": [...]}, or Gemini CLI's
	// "includeTools" and "excludeTools" arrays (allow and deny). Entries
	// are tool names or path.Match globs (see ToolFilter). A change of it
	// alone is applied without a restart.
	ToolFilter ToolFilter
	// Limits bounds what the server may cost the host ("limits": sizes as
	// a number of bytes or "16MiB", counts and rates as numbers, "off" to
	// turn one off).
	Limits Limits
}

// ConfigOption configures ParseConfig and LoadConfig.
type ConfigOption func(*configParser)

// WithLookupEnv sets how ${VAR} is looked up. Defaults to os.LookupEnv.
func WithLookupEnv(lookup func(string) (string, bool)) ConfigOption {
	return func(p *configParser) { p.lookup = lookup }
}

// WithSource names the config's origin in errors.
func WithSource(name string) ConfigOption {
	return func(p *configParser) { p.source = name }
}

// LoadConfig reads and parses a config file.
func LoadConfig(path string, opts ...ConfigOption) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: config: %w", err)
	}
	return ParseConfig(data, append([]ConfigOption{WithSource(path)}, opts...)...)
}

// ParseConfig parses a config in the mcpServers or VS Code servers form.
// Every problem is reported, each naming the source, the server and the
// field; an unknown key is an error, not silently dropped.
func ParseConfig(data []byte, opts ...ConfigOption) (*Config, error) {
	p := &configParser{lookup: os.LookupEnv, source: "config"}
	for _, o := range opts {
		o(p)
	}
	return p.parse(data)
}

type configParser struct {
	lookup func(string) (string, bool)
	source string
	errs   []error
}

// Keys a config may have at the top and in each server entry.
var (
	topKeys = []string{"mcpServers", "servers", "inputs"}
	// Each entry key maps to whether it is known; aliases spell the same
	// field differently across hosts.
	serverKeys = []string{"type", "transport", "command", "args", "env", "cwd", "url", "headers",
		"disabled", "required", "lazy", "timeout", "idleTimeout", "reconnect", "toolPrefix", "envFile", "limits", "oauth",
		"tools", "includeTools", "excludeTools"}
	oauthKeys = []string{"clientId", "clientSecret", "scopes", "callbackPort", "redirectUri", "grant",
		"clientMetadataUrl", "tokenEndpointAuthMethod", "privateKey", "signingAlgorithm", "clientName", "issuer"}
	policyKeys = []string{"initialInterval", "maxInterval", "multiplier", "jitter", "maxAttempts",
		"maxElapsed", "stableAfter", "probeInterval"}
)

func (p *configParser) errorf(server, field, format string, args ...any) {
	where := p.source
	if server != "" {
		where += fmt.Sprintf(": server %q", server)
	}
	if field != "" {
		where += fmt.Sprintf(": field %q", field)
	}
	p.errs = append(p.errs, fmt.Errorf("mcpfleet: %s: %s", where, fmt.Sprintf(format, args...)))
}

func (p *configParser) parse(data []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("mcpfleet: %s: not a JSON object: %w", p.source, err)
	}
	if top == nil {
		return nil, fmt.Errorf("mcpfleet: %s: not a JSON object", p.source)
	}
	for _, k := range sortedKeys(top) {
		if !slices.Contains(topKeys, k) {
			p.errorf("", k, "unknown key (want mcpServers or servers)")
		}
	}
	raw, ok := top["mcpServers"]
	if vs, vsOK := top["servers"]; vsOK {
		if ok {
			p.errorf("", "servers", "both mcpServers and servers are present; use one")
		}
		raw, ok = vs, true
	}
	cfg := &Config{Source: p.source, Servers: map[string]ServerConfig{}}
	if !ok {
		p.errorf("", "mcpServers", "missing")
		return nil, errors.Join(p.errs...)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		p.errorf("", "mcpServers", "must be an object of server entries")
		return nil, errors.Join(p.errs...)
	}
	for _, name := range sortedKeys(entries) {
		if strings.TrimSpace(name) == "" {
			p.errorf(name, "", "server name is empty")
			continue
		}
		if sc, ok := p.server(name, entries[name]); ok {
			cfg.Servers[name] = sc
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return cfg, nil
}

func (p *configParser) server(name string, raw json.RawMessage) (ServerConfig, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		p.errorf(name, "", "must be an object")
		return ServerConfig{}, false
	}
	before := len(p.errs)
	var sc ServerConfig
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		switch k {
		case "type", "transport":
			sc.Type = p.str(name, k, v)
		case "command":
			sc.Command = p.str(name, k, v)
		case "cwd":
			sc.Cwd = p.str(name, k, v)
		case "url":
			sc.URL = p.str(name, k, v)
		case "toolPrefix":
			sc.ToolPrefix = p.str(name, k, v)
		case "args":
			var args []json.RawMessage
			if err := json.Unmarshal(v, &args); err != nil {
				p.errorf(name, k, "must be an array of strings")
				continue
			}
			for i, a := range args {
				sc.Args = append(sc.Args, p.str(name, fmt.Sprintf("args[%d]", i), a))
			}
		case "env":
			sc.Env = p.strMap(name, k, v)
		case "headers":
			sc.Headers = p.strMap(name, k, v)
		case "disabled":
			sc.Disabled = p.boolean(name, k, v)
		case "required":
			sc.Required = p.boolean(name, k, v)
		case "lazy":
			sc.Lazy = p.boolean(name, k, v)
		case "timeout":
			sc.Timeout = p.duration(name, k, v)
		case "idleTimeout":
			sc.IdleTimeout = p.duration(name, k, v)
		case "reconnect":
			sc.Reconnect = p.policy(name, v)
		case "limits":
			sc.Limits = p.limits(name, v)
		case "oauth":
			sc.OAuth = p.oauth(name, v)
		case "tools":
			f := p.toolFilter(name, v)
			sc.ToolFilter.Allow = p.toolList(name, "allow", "includeTools", sc.ToolFilter.Allow, f.Allow)
			sc.ToolFilter.Deny = p.toolList(name, "deny", "excludeTools", sc.ToolFilter.Deny, f.Deny)
		case "includeTools":
			// Gemini CLI's name for the allow list; sorted keys put it
			// before "tools", which reports a clash.
			sc.ToolFilter.Allow = p.patterns(name, k, v)
		case "excludeTools":
			sc.ToolFilter.Deny = p.patterns(name, k, v)
		case "envFile":
			p.errorf(name, k, "not supported; put the variables in env")
		default:
			p.errorf(name, k, "unknown key")
		}
	}
	p.check(name, &sc)
	return sc, len(p.errs) == before
}

// check validates the entry as a whole, resolving an empty type.
func (p *configParser) check(name string, sc *ServerConfig) {
	switch sc.Type {
	case "":
		switch {
		case sc.Command != "" && sc.URL != "":
			p.errorf(name, "type", "both command and url are set; set type to say which")
		case sc.Command != "":
			sc.Type = "stdio"
		case sc.URL != "":
			sc.Type = "http"
		default:
			p.errorf(name, "command", "missing: a server needs a command (stdio) or a url (http, sse)")
		}
	case "stdio":
		if sc.Command == "" {
			p.errorf(name, "command", "missing for type stdio")
		}
	case "http", "streamable-http", "streamableHttp", "sse":
		if sc.URL == "" {
			p.errorf(name, "url", "missing for type %s", sc.Type)
		}
	default:
		p.errorf(name, "type", "unknown type %q (want stdio, http, streamable-http or sse)", sc.Type)
	}
	if sc.Type == "stdio" && (sc.URL != "" || len(sc.Headers) > 0) {
		p.errorf(name, "url", "url and headers do not apply to a stdio server")
	}
	if sc.Type == "stdio" && sc.OAuth != nil {
		p.errorf(name, "oauth", "oauth does not apply to a stdio server")
	}
	if sc.OAuth != nil {
		if err := sc.OAuth.Validate(); err != nil {
			p.errorf(name, "oauth", "%s", strings.TrimPrefix(err.Error(), "mcpfleet: oauth: "))
		}
	}
	if sc.Type != "stdio" && sc.Type != "" && (sc.Command != "" || len(sc.Args) > 0 || len(sc.Env) > 0 || sc.Cwd != "") {
		p.errorf(name, "command", "command, args, env and cwd do not apply to a %s server", sc.Type)
	}
	if sc.Reconnect != nil {
		if err := sc.Reconnect.Validate(); err != nil {
			p.errorf(name, "reconnect", "%v", err)
		}
	}
	if sc.Type != "" && (sc.Command != "" || sc.URL != "") {
		if _, err := sc.Spec(); err != nil {
			p.errorf(name, "", "%v", err)
		}
	}
}

func (p *configParser) str(server, field string, v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, "must be a string")
		return ""
	}
	out, err := expand(s, p.lookup)
	if err != nil {
		p.errorf(server, field, "%v", err)
	}
	return out
}

func (p *configParser) strMap(server, field string, v json.RawMessage) map[string]string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		p.errorf(server, field, "must be an object of strings")
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if k == "" {
			p.errorf(server, field, "has an empty name")
			continue
		}
		out[k] = p.str(server, field+"."+k, m[k])
	}
	return out
}

func (p *configParser) boolean(server, field string, v json.RawMessage) bool {
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		p.errorf(server, field, "must be true or false")
	}
	return b
}

// duration accepts a Go duration string ("1m30s") or a number of seconds.
func (p *configParser) duration(server, field string, v json.RawMessage) time.Duration {
	var n float64
	if err := json.Unmarshal(v, &n); err == nil {
		if n < 0 || n > float64(1<<62)/float64(time.Second) {
			p.errorf(server, field, "must be a non-negative number of seconds")
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, `must be a duration like "30s" or a number of seconds`)
		return 0
	}
	s, err := expand(s, p.lookup)
	if err != nil {
		p.errorf(server, field, "%v", err)
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		p.errorf(server, field, `must be a duration like "30s" or a number of seconds, got %q`, s)
		return 0
	}
	return d
}

// object decodes the block field of server's entry, which must be a JSON
// object; if it is not, it records the error msg and reports false.
func (p *configParser) object(server, field string, v json.RawMessage, msg string) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil || fields == nil {
		p.errorf(server, field, "%s", msg)
		return nil, false
	}
	return fields, true
}

// toolFilter parses a "tools" object: {"allow": [...], "deny": [...]}.
func (p *configParser) toolFilter(server string, v json.RawMessage) ToolFilter {
	fields, ok := p.object(server, "tools", v, `must be an object like {"allow": ["read_*"], "deny": ["delete_*"]}`)
	if !ok {
		return ToolFilter{}
	}
	var f ToolFilter
	for _, k := range sortedKeys(fields) {
		switch k {
		case "allow":
			f.Allow = p.patterns(server, "tools.allow", fields[k])
		case "deny":
			f.Deny = p.patterns(server, "tools.deny", fields[k])
		default:
			p.errorf(server, "tools."+k, "unknown key (want allow or deny)")
		}
	}
	return f
}

// toolList settles one list of a tool filter given both by "tools" (ours)
// and by the Gemini CLI key (theirs, already parsed): giving it twice is
// an error, not a merge.
func (p *configParser) toolList(server, ours, theirs string, had, got []string) []string {
	if got == nil {
		return had
	}
	if had != nil {
		p.errorf(server, "tools."+ours, "%s is set too; use one of them", theirs)
	}
	return got
}

// patterns parses an array of tool names and globs. It returns an empty
// (not nil) list for an empty array, so that a list given twice is told
// apart from one not given.
func (p *configParser) patterns(server, field string, v json.RawMessage) []string {
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		p.errorf(server, field, "must be an array of tool names or globs")
		return nil
	}
	out := make([]string, 0, len(list))
	for i, raw := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		s := p.str(server, f, raw)
		if err := validPattern(s); err != nil {
			p.errorf(server, f, "%v", err)
			continue
		}
		out = append(out, s)
	}
	return out
}

// limits parses a "limits" object. Every field takes a number, or "off";
// maxMessageBytes also a size like "16MiB" or "512KiB".
func (p *configParser) limits(server string, v json.RawMessage) Limits {
	fields, ok := p.object(server, "limits", v, "must be an object")
	if !ok {
		return Limits{}
	}
	var l Limits
	for _, k := range sortedKeys(fields) {
		f, v := "limits."+k, fields[k]
		switch k {
		case "maxMessageBytes":
			l.MaxMessageBytes = int64(p.limitNumber(server, f, v, true))
		case "maxCatalogItems":
			l.MaxCatalogItems = int(p.limitNumber(server, f, v, false))
		case "maxCatalogPages":
			l.MaxCatalogPages = int(p.limitNumber(server, f, v, false))
		case "notificationRate":
			l.NotificationRate = p.limitNumber(server, f, v, false)
		case "maxServerRequests":
			l.MaxServerRequests = int(p.limitNumber(server, f, v, false))
		case "serverRequestRate":
			l.ServerRequestRate = p.limitNumber(server, f, v, false)
		default:
			p.errorf(server, f, "unknown key")
		}
	}
	return l
}

// limitNumber parses one limit: a positive number, "off" (-1), or, for a
// size, a string with a KiB, MiB or GiB suffix.
func (p *configParser) limitNumber(server, field string, v json.RawMessage, size bool) float64 {
	var n float64
	if err := json.Unmarshal(v, &n); err == nil {
		if n <= 0 || n > 1<<53 {
			p.errorf(server, field, `must be a positive number or "off"`)
			return 0
		}
		return n
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		p.errorf(server, field, `must be a positive number or "off"`)
		return 0
	}
	s, err := expand(s, p.lookup)
	if err != nil {
		p.errorf(server, field, "%v", err)
		return 0
	}
	if s == "off" {
		return -1
	}
	if size {
		for _, u := range []struct {
			suffix string
			mult   float64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
			if num, ok := strings.CutSuffix(s, u.suffix); ok {
				if x, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil && x > 0 && x*u.mult <= 1<<53 {
					return x * u.mult
				}
				break
			}
		}
		p.errorf(server, field, `must be a number of bytes, a size like "16MiB", or "off", got %q`, s)
		return 0
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x > 0 && x <= 1<<53 {
		return x
	}
	p.errorf(server, field, `must be a positive number or "off", got %q`, s)
	return 0
}

// oauth parses an "oauth" block.
func (p *configParser) oauth(server string, v json.RawMessage) *oauth.Config {
	fields, ok := p.object(server, "oauth", v, "must be an object")
	if !ok {
		return nil
	}
	var c oauth.Config
	for _, k := range sortedKeys(fields) {
		f, v := "oauth."+k, fields[k]
		switch k {
		case "clientId":
			c.ClientID = p.str(server, f, v)
		case "clientSecret":
			c.ClientSecret = p.str(server, f, v)
		case "redirectUri":
			c.RedirectURI = p.str(server, f, v)
		case "clientMetadataUrl":
			c.ClientMetadataURL = p.str(server, f, v)
		case "tokenEndpointAuthMethod":
			c.TokenEndpointAuthMethod = p.str(server, f, v)
		case "privateKey":
			c.PrivateKey = p.str(server, f, v)
		case "signingAlgorithm":
			c.SigningAlgorithm = p.str(server, f, v)
		case "clientName":
			c.ClientName = p.str(server, f, v)
		case "issuer":
			c.Issuer = p.str(server, f, v)
		case "grant":
			g, err := oauth.ParseGrant(p.str(server, f, v))
			if err != nil {
				p.errorf(server, f, "%v", err)
			}
			if g == oauth.TokenExchange {
				p.errorf(server, f, "token_exchange needs an ID token source; configure it in code (oauth.Config.IDToken)")
			}
			c.Grant = g
		case "callbackPort":
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				var s string
				if json.Unmarshal(v, &s) != nil {
					p.errorf(server, f, "must be a port number")
					continue
				}
				if s, err = expand(s, p.lookup); err != nil {
					p.errorf(server, f, "%v", err)
					continue
				}
				if n, err = strconv.Atoi(s); err != nil {
					p.errorf(server, f, "must be a port number")
					continue
				}
			}
			c.CallbackPort = n
		case "scopes":
			// An array of scopes, as Gemini CLI writes it, or one
			// space-separated string, as OAuth's scope parameter is.
			var list []json.RawMessage
			if err := json.Unmarshal(v, &list); err == nil {
				for i, s := range list {
					c.Scopes = append(c.Scopes, p.str(server, fmt.Sprintf("%s[%d]", f, i), s))
				}
				continue
			}
			c.Scopes = strings.Fields(p.str(server, f, v))
		default:
			p.errorf(server, f, "unknown key (want one of %s)", strings.Join(oauthKeys, ", "))
		}
	}
	return &c
}

func (p *configParser) policy(server string, v json.RawMessage) *lifecycle.Policy {
	fields, ok := p.object(server, "reconnect", v, "must be an object")
	if !ok {
		return nil
	}
	var pol lifecycle.Policy
	for _, k := range sortedKeys(fields) {
		f, v := "reconnect."+k, fields[k]
		switch k {
		case "initialInterval":
			pol.InitialInterval = p.duration(server, f, v)
		case "maxInterval":
			pol.MaxInterval = p.duration(server, f, v)
		case "maxElapsed":
			pol.MaxElapsed = p.duration(server, f, v)
		case "stableAfter":
			pol.StableAfter = p.duration(server, f, v)
		case "probeInterval":
			// "off" turns the slow probe off.
			var s string
			if json.Unmarshal(v, &s) == nil && s == "off" {
				pol.ProbeInterval = -1
			} else {
				pol.ProbeInterval = p.duration(server, f, v)
			}
		case "multiplier", "jitter":
			var x float64
			if err := json.Unmarshal(v, &x); err != nil {
				p.errorf(server, f, "must be a number")
			}
			if k == "multiplier" {
				pol.Multiplier = x
			} else {
				pol.Jitter = x
			}
		case "maxAttempts":
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				p.errorf(server, f, "must be an integer (negative means forever)")
			}
			pol.MaxAttempts = n
		default:
			p.errorf(server, f, "unknown key (want one of %s)", strings.Join(policyKeys, ", "))
		}
	}
	return &pol
}

// expand replaces ${VAR} and ${VAR:-default} in s. An unset variable
// without a default is an error: sending an empty token is worse than
// refusing to start.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", redactVar(s))
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("invalid variable name %q", name)
		}
		if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", name, name)
		}
		s = s[i+end+1:]
	}
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// redactVar shows the shape of a malformed value without its content.
func redactVar(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Spec turns the entry into a ServerSpec.
func (c ServerConfig) Spec() (ServerSpec, error) {
	spec := ServerSpec{
		Disabled:   c.Disabled,
		Lazy:       c.Lazy,
		Timeout:    c.Timeout,
		Reconnect:  c.Reconnect,
		ToolPrefix: c.ToolPrefix,
		ToolFilter: c.ToolFilter,
		Limits:     c.Limits,
	}
	spec.IdleTimeout = c.IdleTimeout
	switch c.Type {
	case "stdio", "":
		if c.Command == "" {
			return ServerSpec{}, errors.New("command: missing")
		}
		spec.Stdio = &stdio.Spec{Command: c.Command, Args: c.Args, Env: c.Env, Dir: c.Cwd}
	case "http", "streamable-http", "streamableHttp":
		spec.HTTP = &mcphttp.Spec{URL: c.URL, Headers: c.Headers, Kind: mcphttp.StreamableHTTP}
		spec.OAuth = c.OAuth
	case "sse":
		spec.HTTP = &mcphttp.Spec{URL: c.URL, Headers: c.Headers, Kind: mcphttp.SSE}
		spec.OAuth = c.OAuth
	default:
		return ServerSpec{}, fmt.Errorf("type: unknown type %q", c.Type)
	}
	return spec, spec.Validate()
}

// String describes the entry without secrets: env and header names only.
func (c ServerConfig) String() string {
	var b strings.Builder
	b.WriteString(c.Type)
	if c.Command != "" {
		b.WriteString(" " + strconv.Quote(c.Command))
		for _, a := range c.Args {
			b.WriteString(" " + strconv.Quote(a))
		}
	}
	if c.URL != "" {
		b.WriteString(" " + redact.URL(c.URL))
	}
	if len(c.Env) > 0 {
		b.WriteString(" env=[" + strings.Join(sortedKeys(c.Env), ",") + "]")
	}
	if len(c.Headers) > 0 {
		b.WriteString(" headers=[" + strings.Join(sortedKeys(c.Headers), ",") + "]")
	}
	if c.OAuth != nil {
		b.WriteString(" " + c.OAuth.String())
	}
	if c.Cwd != "" {
		b.WriteString(" cwd=" + c.Cwd)
	}
	if c.Disabled {
		b.WriteString(" disabled")
	}
	return b.String()
}

// GoString is String, so that %#v does not print secrets either.
func (c ServerConfig) GoString() string { return "client.ServerConfig{" + c.String() + "}" }

// LogValue logs the entry without secrets.
func (c ServerConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Format implements fmt.Formatter, so that every verb (%v, %+v, %s, %q,
// %#v) prints the redacted form.
func (c ServerConfig) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, c.GoString())
		return
	}
	fmt.Fprint(f, c.String())
}

// key identifies everything about the entry that needs a restart when it
// changes: all of it but Disabled, which Apply toggles in place, Required,
// which only concerns Apply itself, and ToolFilter and IdleTimeout, which
// Apply changes in place (the fields are listed one by one below: a new
// field is in the key only when added there).
func (c ServerConfig) key() string {
	c.Disabled, c.Required = false, false
	var b bytes.Buffer
	// Field order is fixed and maps marshal sorted, so the key is stable.
	_ = json.NewEncoder(&b).Encode(struct {
		T, C, Cwd, U, P string
		A               []string
		E, H            map[string]string
		L               bool
		D               time.Duration
		R               *lifecycle.Policy
		Lim             Limits
		O               *oauthKey
	}{c.Type, c.Command, c.Cwd, c.URL, c.ToolPrefix, c.Args, c.Env, c.Headers, c.Lazy, c.Timeout, c.Reconnect, c.Limits, newOAuthKey(c.OAuth)})
	return b.String()
}

// oauthKey is an oauth block as ServerConfig.key compares it: every field
// (the key is never shown).
type oauthKey struct {
	G                                     oauth.Grant
	ID, Secret, Key, Alg, Method, Meta, N string
	S                                     []string
	R, I                                  string
	P                                     int
}

func newOAuthKey(c *oauth.Config) *oauthKey {
	if c == nil {
		return nil
	}
	return &oauthKey{c.Grant, c.ClientID, c.ClientSecret, c.PrivateKey, c.SigningAlgorithm,
		c.TokenEndpointAuthMethod, c.ClientMetadataURL, c.ClientName, c.Scopes, c.RedirectURI, c.Issuer, c.CallbackPort}
}
