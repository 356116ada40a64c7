package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

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
