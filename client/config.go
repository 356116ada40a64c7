package client

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/redact"
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
