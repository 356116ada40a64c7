package client

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
// the "mcpServers" object of Claude Desktop, Claude Code's .mcp.json,
// Cursor and Gemini CLI's settings.json, or the "servers" object of VS
// Code's mcp.json. Comments and trailing commas are allowed, as VS Code
// and Gemini CLI allow them.
type Config struct {
	// Source names where the config came from (a file path), for errors.
	Source string
	// Dialect is the host whose file it was read as (see Dialect).
	Dialect Dialect
	// Servers maps a server's name to its entry.
	Servers map[string]ServerConfig
}

// ServerConfig is one server's entry. Every string field may use variables,
// expanded when the config is parsed: ${VAR} and ${VAR:-default} (an
// environment variable, as Claude Code and Cursor read them), and VS
// Code's ${env:VAR}, ${userHome}, ${workspaceFolder} and
// ${workspaceFolderBasename} (WithWorkspaceFolder), ${pathSeparator} (or
// ${/}) and ${input:id} (WithInputs, or the "default" of the file's
// "inputs" entry); in a Gemini CLI file, $VAR as well. Header and env
// values are secrets: String, LogValue and errors never show them.
type ServerConfig struct {
	// Type is "stdio", "http" or "sse", as the entry's "type" (or its
	// "transport") said it or as the parser resolved it: stdio for a
	// "command", http for a "url" ("streamable-http" too), sse for a
	// "url" in a Gemini CLI file, where "httpUrl" is the key for
	// streamable HTTP.
	Type string
	// EnvFile is the dotenv file (VS Code's "envFile") whose variables
	// were read into the stdio spec's Env, under the entry's own "env"; a
	// relative path is read from the workspace folder
	// (WithWorkspaceFolder), else from the config file's directory. Its
	// lines are NAME=value, "export " before one allowed, a value bare (up
	// to a " #" comment), 'single-quoted' or "double-quoted" (with \n
	// escapes); blank lines and # lines are skipped; no variables are
	// expanded in it. A bad line is an error naming the file and the line
	// number, never the line.
	EnvFile string
	// Required makes Apply wait for the server to connect and fail if it
	// does not (or as soon as it settles where only a person can help).
	Required bool
	// Trust is Gemini CLI's "trust": there it bypasses the user's
	// confirmation of every call of the server's tools. mcpfleet asks no
	// one anything, so it does nothing with it: a host that confirms tool
	// calls reads it here. Changing it needs no restart.
	Trust bool
	// Description is Gemini CLI's "description" of the server, for a host
	// to show.
	Description string

	// ServerSpec is the entry as Add takes it, which Spec returns:
	//   - Stdio from "command", "args", "env" (over the envFile's) and
	//     "cwd"; HTTP from "url" (or Gemini CLI's "httpUrl") and
	//     "headers", with the type's Kind;
	//   - OAuth from the "oauth" block of an HTTP server: clientId,
	//     clientSecret, scopes, callbackPort or redirectUri, grant
	//     ("authorization_code", "client_credentials", "token_exchange"),
	//     clientMetadataUrl, tokenEndpointAuthMethod, privateKey,
	//     signingAlgorithm, clientName, and issuer (the authorization
	//     server to pin, see oauth.Config.Issuer), named as in Claude
	//     Code's and Gemini CLI's oauth blocks; for token_exchange (RFC
	//     8693, enterprise-managed authorization) idpTokenEndpoint,
	//     idpClientId, idpClientSecret and idTokenFile (the file the ID
	//     token is read from at each exchange); the client secret, the
	//     private key and the IdP client secret are secrets;
	//   - Disabled, Lazy, IdleTimeout ("idleTimeout": "5m" or seconds; no
	//     restart when it alone changes), Reconnect ("reconnect"),
	//     ToolPrefix ("toolPrefix"), Limits ("limits": sizes as bytes or
	//     "16MiB", counts and rates as numbers, "off" to turn one off);
	//   - Timeout ("timeout": "30s", or a number of seconds; in a Gemini CLI
	//     file a number is milliseconds, as Gemini CLI documents it, and
	//     elsewhere a bare number of 1000 or more is refused as ambiguous);
	//   - ToolFilter: the "tools" object, {"allow": [...], "deny": [...]},
	//     or Gemini CLI's "includeTools" and "excludeTools" arrays; entries
	//     are tool names or globs (see ToolFilter); no restart when it alone
	//     changes.
	ServerSpec
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

// WithUnknownKeys makes ParseConfig skip a key it does not know at the top
// of the file or in a server entry, calling report with the server's name
// ("" at the top) and the key, instead of refusing the file: the keys other
// hosts keep in their files (Claude Desktop's globalShortcut, Cline's
// autoApprove) then cost a warning, not the file. A key within a typo of a
// known one ("comand") is still an error, and so is an unknown key inside
// mcpfleet's own blocks (oauth, limits, reconnect, tools, inputs).
func WithUnknownKeys(report func(server, key string)) ConfigOption {
	return func(p *configParser) { p.onUnknown = report }
}

// LoadConfig reads and parses a config file. A relative envFile in it is
// read from the file's directory unless WithWorkspaceFolder is given.
func LoadConfig(path string, opts ...ConfigOption) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcpfleet: config: %w", err)
	}
	return ParseConfig(data, append([]ConfigOption{WithSource(path), withConfigDir(filepath.Dir(path))}, opts...)...)
}

// ParseConfig parses a config in the mcpServers form (Claude Desktop,
// Claude Code, Cursor, Gemini CLI) or VS Code's servers form; see Dialect
// for how it tells them apart. Every problem is reported, each naming the
// source, the server and the field; an unknown key is an error, not
// silently dropped, with the nearest known key suggested; a JSON syntax
// error gives the line and column and shows the line.
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
	// dialect is the host the file is read as: WithDialect's, else
	// detected.
	dialect Dialect
	// dir is the config file's directory, workspace the workspace folder.
	dir          string
	workspace    string
	workspaceSet bool
	// resolveInput is WithInputs'; declared holds the file's "inputs" by
	// id, answers what each used input resolved to.
	resolveInput func(Input) (string, error)
	// vars answers ${kind:NAME} by kind (WithVariables, WithVariablesAt).
	vars     map[string]func(string, VariableUse) (string, error)
	declared map[string]Input
	answers  map[string]answer
	// onUnknown is WithUnknownKeys'.
	onUnknown func(server, key string)
	errs      []error
}

// Keys a config may have at the top and in each server entry; a block's
// keys are its table's (see block).
var (
	topKeys = []string{"mcpServers", "servers", "inputs", "$schema"}
	// Aliases spell the same field differently across hosts.
	serverKeys = []string{"type", "transport", "command", "args", "env", "cwd", "url", "httpUrl", "headers",
		"disabled", "required", "lazy", "timeout", "idleTimeout", "reconnect", "toolPrefix", "envFile", "limits", "oauth",
		"tools", "includeTools", "excludeTools", "trust", "description"}
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
	data = stripJSONC(data)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, syntaxError(p.source, data, err)
	}
	if top == nil {
		return nil, fmt.Errorf("mcpfleet: %s: not a JSON object", p.source)
	}
	if p.dialect == "" {
		p.dialect = detectDialect(top, p.source)
	}
	for _, k := range sortedKeys(top) {
		// Gemini CLI's settings.json holds all of its settings; only its
		// mcpServers are ours.
		if !slices.Contains(topKeys, k) && p.dialect != DialectGemini {
			p.foreignKey("", k, topKeys)
		}
	}
	if raw, ok := top["inputs"]; ok {
		p.inputs(raw)
	}
	raw, ok := top["mcpServers"]
	if vs, vsOK := top["servers"]; vsOK {
		if ok {
			p.errorf("", "servers", "both mcpServers and servers are present; use one")
		}
		raw, ok = vs, true
	}
	cfg := &Config{Source: p.source, Dialect: p.dialect, Servers: map[string]ServerConfig{}}
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
	var (
		sc      ServerConfig
		w       wire
		httpURL string // Gemini CLI's "httpUrl"
	)
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		switch k {
		case "type", "transport":
			sc.Type = p.str(name, k, v)
		case "command":
			w.command = p.str(name, k, v)
		case "cwd":
			w.cwd = p.str(name, k, v)
		case "url":
			w.url = p.str(name, k, v)
		case "httpUrl":
			httpURL = p.str(name, k, v)
		case "description":
			sc.Description = p.str(name, k, v)
		case "trust":
			sc.Trust = p.boolean(name, k, v)
		case "toolPrefix":
			sc.ToolPrefix = p.str(name, k, v)
		case "args":
			var args []json.RawMessage
			if err := json.Unmarshal(v, &args); err != nil {
				p.errorf(name, k, "must be an array of strings")
				continue
			}
			for i, a := range args {
				w.args = append(w.args, p.str(name, fmt.Sprintf("args[%d]", i), a))
			}
		case "env":
			w.env = p.strMap(name, k, v)
		case "headers":
			w.headers = p.strMap(name, k, v)
		case "disabled":
			sc.Disabled = p.boolean(name, k, v)
		case "required":
			sc.Required = p.boolean(name, k, v)
		case "lazy":
			sc.Lazy = p.boolean(name, k, v)
		case "timeout":
			sc.Timeout = p.callTimeout(name, v)
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
			sc.EnvFile = p.str(name, k, v)
		case "authProviderType":
			// Gemini CLI's; its default is the MCP authorization spec's
			// discovery, which is what the oauth block does here.
			if t := p.str(name, k, v); t != "dynamic_discovery" {
				p.errorf(name, k, "%q is not supported: mcpfleet authorizes by the MCP spec's discovery (dynamic_discovery) with the oauth block", t)
			}
		case "targetAudience", "targetServiceAccount":
			p.errorf(name, k, "not supported: Gemini CLI's Google service account impersonation; use headers or the oauth block")
		default:
			p.foreignKey(name, k, serverKeys)
		}
	}
	p.transport(name, &sc, &w, httpURL)
	p.envFile(name, &sc, &w)
	p.check(name, &sc, &w)
	return sc, len(p.errs) == before
}

// wire is what an entry says of how to reach its server, as the file
// says it; check turns it into the spec's Stdio or HTTP.
type wire struct {
	command, cwd, url string
	args              []string
	env, headers      map[string]string
}

// transport settles an entry's URL keys: Gemini CLI's "httpUrl" is
// streamable HTTP; in a Gemini CLI file, "url" without a "type" is legacy
// SSE, as Gemini CLI reads it (elsewhere check makes it streamable HTTP).
func (p *configParser) transport(name string, sc *ServerConfig, w *wire, httpURL string) {
	if httpURL != "" {
		switch {
		case w.url != "":
			p.errorf(name, "httpUrl", "url is set too; use httpUrl for streamable HTTP or url for SSE, not both")
		case sc.Type == "sse":
			p.errorf(name, "httpUrl", "httpUrl is streamable HTTP but type is sse; use url for SSE")
		default:
			w.url = httpURL
			if sc.Type == "" {
				sc.Type = "http"
			}
		}
		return
	}
	if p.dialect == DialectGemini && w.url != "" && sc.Type == "" && w.command == "" {
		sc.Type = "sse"
	}
}

// envFile reads the entry's envFile into its env; the entry's own env
// wins over the file, as in VS Code.
func (p *configParser) envFile(name string, sc *ServerConfig, w *wire) {
	if sc.EnvFile == "" {
		return
	}
	path, err := p.envFilePath(sc.EnvFile)
	if err != nil {
		p.errorf(name, "envFile", "%v", err)
		return
	}
	vars, err := readEnvFile(path)
	if err != nil {
		p.errorf(name, "envFile", "%v", err)
		return
	}
	for k, v := range w.env {
		vars[k] = v
	}
	w.env = vars
}

// check validates the entry as a whole, resolving an empty type.
func (p *configParser) check(name string, sc *ServerConfig, w *wire) {
	switch sc.Type {
	case "":
		switch {
		case w.command != "" && w.url != "":
			p.errorf(name, "type", "both command and url are set; set type to say which")
		case w.command != "":
			sc.Type = "stdio"
		case w.url != "":
			sc.Type = "http"
		default:
			p.errorf(name, "command", "missing: a server needs a command (stdio) or a url (http, sse)")
		}
	case "stdio":
		if w.command == "" {
			p.errorf(name, "command", "missing for type stdio")
		}
	case "http", "streamable-http", "streamableHttp", "sse":
		if w.url == "" {
			p.errorf(name, "url", "missing for type %s", sc.Type)
		}
	default:
		p.errorf(name, "type", "unknown type %q (want stdio, http, streamable-http or sse)", sc.Type)
	}
	if sc.Type == "stdio" && (w.url != "" || len(w.headers) > 0) {
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
	if sc.Type != "stdio" && sc.Type != "" && (w.command != "" || len(w.args) > 0 || len(w.env) > 0 || w.cwd != "" || sc.EnvFile != "") {
		p.errorf(name, "command", "command, args, env, envFile and cwd do not apply to a %s server", sc.Type)
	}
	if sc.Reconnect != nil {
		if err := sc.Reconnect.Validate(); err != nil {
			p.errorf(name, "reconnect", "%v", err)
		}
	}
	switch sc.Type {
	case "stdio":
		if w.command != "" {
			sc.Stdio = &stdio.Spec{Command: w.command, Args: w.args, Env: w.env, Dir: w.cwd}
		}
	case "http", "streamable-http", "streamableHttp":
		sc.HTTP = &mcphttp.Spec{URL: w.url, Headers: w.headers, Kind: mcphttp.StreamableHTTP}
	case "sse":
		sc.HTTP = &mcphttp.Spec{URL: w.url, Headers: w.headers, Kind: mcphttp.SSE}
	}
	if sc.Stdio != nil || (sc.HTTP != nil && w.url != "") {
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
	out, err := p.expand(server, field, s)
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
	s, err := p.expand(server, field, s)
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

// blockKey is one key of a block (tools, limits, oauth, reconnect, an
// input) and what its value sets.
type blockKey struct {
	name string
	// set parses the key's value; field is its full name ("oauth.grant").
	set func(field string, v json.RawMessage)
}

// block parses v, the block field of server's entry (server "" for one
// at the top of the file), which must be a JSON object: each key by its
// set, in sorted order, so errors come in the file's key order whatever
// the table's. A key not in keys is an error suggesting the nearest one,
// or listing them all in the table's order. If v is not an object, block
// records the error msg and reports false.
func (p *configParser) block(server, field string, v json.RawMessage, msg string, keys []blockKey) bool {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil || fields == nil {
		p.errorf(server, field, "%s", msg)
		return false
	}
	for _, k := range sortedKeys(fields) {
		f := field + "." + k
		i := slices.IndexFunc(keys, func(b blockKey) bool { return b.name == k })
		if i < 0 {
			known := make([]string, len(keys))
			for j, b := range keys {
				known[j] = b.name
			}
			p.unknownKey(server, f, k, known)
			continue
		}
		keys[i].set(f, fields[k])
	}
	return true
}

// into is the set of a block key whose value parse makes into *dst.
func into[T any](server string, parse func(server, field string, v json.RawMessage) T, dst *T) func(string, json.RawMessage) {
	return func(field string, v json.RawMessage) { *dst = parse(server, field, v) }
}

// toolFilter parses a "tools" object: {"allow": [...], "deny": [...]}.
func (p *configParser) toolFilter(server string, v json.RawMessage) ToolFilter {
	var f ToolFilter
	if !p.block(server, "tools", v, `must be an object like {"allow": ["read_*"], "deny": ["delete_*"]}`, []blockKey{
		{"allow", into(server, p.patterns, &f.Allow)},
		{"deny", into(server, p.patterns, &f.Deny)},
	}) {
		return ToolFilter{}
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
	var l Limits
	count := func(dst *int) func(string, json.RawMessage) {
		return func(f string, v json.RawMessage) { *dst = int(p.limitNumber(server, f, v, false)) }
	}
	rate := func(dst *float64) func(string, json.RawMessage) {
		return func(f string, v json.RawMessage) { *dst = p.limitNumber(server, f, v, false) }
	}
	if !p.block(server, "limits", v, "must be an object", []blockKey{
		{"maxMessageBytes", func(f string, v json.RawMessage) { l.MaxMessageBytes = int64(p.limitNumber(server, f, v, true)) }},
		{"maxCatalogItems", count(&l.MaxCatalogItems)},
		{"maxCatalogPages", count(&l.MaxCatalogPages)},
		{"notificationRate", rate(&l.NotificationRate)},
		{"maxServerRequests", count(&l.MaxServerRequests)},
		{"serverRequestRate", rate(&l.ServerRequestRate)},
	}) {
		return Limits{}
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
	s, err := p.expand(server, field, s)
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
	var c oauth.Config
	str := func(dst *string) func(string, json.RawMessage) { return into(server, p.str, dst) }
	if !p.block(server, "oauth", v, "must be an object", []blockKey{
		{"clientId", str(&c.ClientID)},
		{"clientSecret", str(&c.ClientSecret)},
		{"scopes", func(f string, v json.RawMessage) {
			// An array of scopes, as Gemini CLI writes it, or one
			// space-separated string, as OAuth's scope parameter is.
			var list []json.RawMessage
			if err := json.Unmarshal(v, &list); err == nil {
				for i, s := range list {
					c.Scopes = append(c.Scopes, p.str(server, fmt.Sprintf("%s[%d]", f, i), s))
				}
				return
			}
			c.Scopes = strings.Fields(p.str(server, f, v))
		}},
		{"callbackPort", func(f string, v json.RawMessage) {
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				var s string
				if json.Unmarshal(v, &s) != nil {
					p.errorf(server, f, "must be a port number")
					return
				}
				if s, err = p.expand(server, f, s); err != nil {
					p.errorf(server, f, "%v", err)
					return
				}
				if n, err = strconv.Atoi(s); err != nil {
					p.errorf(server, f, "must be a port number")
					return
				}
			}
			c.CallbackPort = n
		}},
		{"redirectUri", str(&c.RedirectURI)},
		{"grant", func(f string, v json.RawMessage) {
			g, err := oauth.ParseGrant(p.str(server, f, v))
			if err != nil {
				p.errorf(server, f, "%v", err)
			}
			c.Grant = g
		}},
		{"clientMetadataUrl", str(&c.ClientMetadataURL)},
		{"tokenEndpointAuthMethod", str(&c.TokenEndpointAuthMethod)},
		{"privateKey", str(&c.PrivateKey)},
		{"signingAlgorithm", str(&c.SigningAlgorithm)},
		{"clientName", str(&c.ClientName)},
		{"issuer", str(&c.Issuer)},
		{"idpTokenEndpoint", str(&c.IdPTokenEndpoint)},
		{"idpClientId", str(&c.IdPClientID)},
		{"idpClientSecret", str(&c.IdPClientSecret)},
		{"idTokenFile", str(&c.IDTokenFile)},
	}) {
		return nil
	}
	return &c
}

// policy parses a "reconnect" block.
func (p *configParser) policy(server string, v json.RawMessage) *lifecycle.Policy {
	var pol lifecycle.Policy
	duration := func(dst *time.Duration) func(string, json.RawMessage) { return into(server, p.duration, dst) }
	number := func(dst *float64) func(string, json.RawMessage) {
		return func(f string, v json.RawMessage) {
			var x float64
			if err := json.Unmarshal(v, &x); err != nil {
				p.errorf(server, f, "must be a number")
			}
			*dst = x
		}
	}
	if !p.block(server, "reconnect", v, "must be an object", []blockKey{
		{"initialInterval", duration(&pol.InitialInterval)},
		{"maxInterval", duration(&pol.MaxInterval)},
		{"multiplier", number(&pol.Multiplier)},
		{"jitter", number(&pol.Jitter)},
		{"maxAttempts", func(f string, v json.RawMessage) {
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				p.errorf(server, f, "must be an integer (negative means forever)")
			}
			pol.MaxAttempts = n
		}},
		{"maxElapsed", duration(&pol.MaxElapsed)},
		{"stableAfter", duration(&pol.StableAfter)},
		{"probeInterval", func(f string, v json.RawMessage) {
			// "off" turns the slow probe off.
			var s string
			if json.Unmarshal(v, &s) == nil && s == "off" {
				pol.ProbeInterval = -1
			} else {
				pol.ProbeInterval = p.duration(server, f, v)
			}
		}},
	}) {
		return nil
	}
	return &pol
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

// Spec returns the entry's ServerSpec, checked.
func (c ServerConfig) Spec() (ServerSpec, error) {
	return c.ServerSpec, c.ServerSpec.Validate()
}

// String describes the entry without secrets: env and header names only,
// the URL with its userinfo and query values masked.
func (c ServerConfig) String() string {
	var b strings.Builder
	b.WriteString(c.Type)
	if s := c.Stdio; s != nil {
		b.WriteString(" " + strconv.Quote(s.Command))
		for _, a := range s.Args {
			b.WriteString(" " + strconv.Quote(a))
		}
		if len(s.Env) > 0 {
			b.WriteString(" env=[" + strings.Join(sortedKeys(s.Env), ",") + "]")
		}
	}
	if h := c.HTTP; h != nil {
		b.WriteString(" " + redact.URL(h.URL))
		if len(h.Headers) > 0 {
			b.WriteString(" headers=[" + strings.Join(sortedKeys(h.Headers), ",") + "]")
		}
	}
	if c.OAuth != nil {
		b.WriteString(" " + c.OAuth.String())
	}
	if c.EnvFile != "" {
		b.WriteString(" envFile=" + c.EnvFile)
	}
	if c.Stdio != nil && c.Stdio.Dir != "" {
		b.WriteString(" cwd=" + c.Stdio.Dir)
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

// Identity is a digest (sha256, hex) of what the entry makes the server:
// every field of its spec whose change restarts it (see Apply). Two
// entries with one Identity reach one server the same way; it shows no
// secret, only a digest of them. The fleet package names each server of
// a template by it, for the catalog cache every user's fleet shares.
func (c ServerConfig) Identity() string {
	sum := sha256.Sum256([]byte(c.key()))
	return hex.EncodeToString(sum[:])
}

// key identifies everything about the entry whose change needs a
// restart: its spec's restart key (see specFields). The config's own
// fields (Required, Trust, Description, EnvFile, whose variables are in the
// spec's env) never do.
func (c ServerConfig) key() string { return restartKey(c.ServerSpec) }
