package client

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
)

// Dialect is the host whose config file a Config was read as. The hosts
// agree on most of an entry and differ on a few fields. Unless WithDialect
// says which it is, ParseConfig tells them apart: a top-level "servers"
// object is VS Code's; a file named settings.json in a .gemini directory,
// a "$schema" naming gemini-cli, or an entry with a key only Gemini CLI
// has (httpUrl, trust, authProviderType, targetAudience,
// targetServiceAccount) is Gemini CLI's; anything else is the mcpServers
// form.
type Dialect string

const (
	// DialectMCPServers is the "mcpServers" object of Claude Desktop,
	// Claude Code's .mcp.json and Cursor: a "url" without a "type" is
	// streamable HTTP, "timeout" is in seconds (or a duration string).
	DialectMCPServers Dialect = "mcpServers"
	// DialectVSCode is VS Code's mcp.json: a "servers" object and an
	// "inputs" array. Entries read as in DialectMCPServers.
	DialectVSCode Dialect = "vscode"
	// DialectGemini is Gemini CLI's settings.json: in its "mcpServers", a
	// "url" without a "type" is legacy SSE and "httpUrl" is streamable
	// HTTP; "timeout" is in milliseconds; a string may use $VAR as well as
	// ${VAR}; and the file's other top-level keys are Gemini CLI's own
	// settings, which are skipped.
	DialectGemini Dialect = "gemini"
)

// WithDialect reads the config as the given host's file instead of
// detecting it: a Gemini CLI file whose entries use nothing but "command"
// or "url" cannot be told from a Claude Desktop one, and its "url" and
// "timeout" mean different things. The zero Dialect detects.
func WithDialect(d Dialect) ConfigOption {
	return func(p *configParser) { p.dialect = d }
}

// geminiOnlyKeys are entry keys only Gemini CLI writes: one of them in any
// entry makes the file Gemini's. (includeTools and excludeTools are
// Gemini's too, but mcpfleet read them before it read Gemini's units, so
// they do not change how a file's "timeout" is read.)
var geminiOnlyKeys = []string{"httpUrl", "trust", "authProviderType", "targetAudience", "targetServiceAccount"}

// detectDialect tells the hosts' files apart when WithDialect does not
// say: a top-level "servers" object is VS Code's; a file named
// settings.json in a .gemini directory, a "$schema" naming gemini-cli, or
// an entry with a key only Gemini CLI has (httpUrl, trust,
// authProviderType, targetAudience, targetServiceAccount) is Gemini CLI's;
// anything else is the mcpServers form of Claude Desktop, Claude Code and
// Cursor. source is the file's path, or a name.
func detectDialect(top map[string]json.RawMessage, source string) Dialect {
	if _, ok := top["servers"]; ok {
		if _, ok := top["mcpServers"]; !ok {
			return DialectVSCode
		}
	}
	if source != "" && filepath.Base(source) == "settings.json" &&
		filepath.Base(filepath.Dir(source)) == ".gemini" {
		return DialectGemini
	}
	var schema string
	if json.Unmarshal(top["$schema"], &schema) == nil && strings.Contains(schema, "gemini-cli") {
		return DialectGemini
	}
	var entries map[string]map[string]json.RawMessage
	_ = json.Unmarshal(top["mcpServers"], &entries) // a bad one is reported by the parse
	for _, fields := range entries {
		for _, k := range geminiOnlyKeys {
			if _, ok := fields[k]; ok {
				return DialectGemini
			}
		}
	}
	return DialectMCPServers
}

// ambiguousTimeout is the smallest bare number of seconds a "timeout"
// outside Gemini CLI's dialect refuses: Gemini's milliseconds (30000 is
// its 30 s) read as seconds would be hours.
const ambiguousTimeout = 1000

// callTimeout parses an entry's "timeout": in Gemini CLI's dialect a
// number is milliseconds; elsewhere seconds, below ambiguousTimeout. A
// duration string ("30s") means the same everywhere.
func (p *configParser) callTimeout(server string, v json.RawMessage) time.Duration {
	var n float64
	if json.Unmarshal(v, &n) != nil {
		return p.duration(server, "timeout", v)
	}
	if p.dialect == DialectGemini {
		if n < 0 || n > float64(1<<62)/float64(time.Millisecond) {
			p.errorf(server, "timeout", "must be a non-negative number of milliseconds")
			return 0
		}
		return time.Duration(n * float64(time.Millisecond))
	}
	if n >= ambiguousTimeout && n <= float64(1<<62)/float64(time.Second) {
		d := time.Duration(n * float64(time.Second))
		p.errorf(server, "timeout", "%v seconds is %s: if the file is Gemini CLI's, where it means milliseconds, "+
			"read it with client.WithDialect(client.DialectGemini); to mean %s, write %q", n, d, d, d.String())
		return 0
	}
	return p.duration(server, "timeout", v)
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
