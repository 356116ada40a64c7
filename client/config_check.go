package client

import (
	"errors"
	"strings"

	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// wire is what an entry says of how to reach its server, as the file
// says it; check turns it into the spec's Stdio or HTTP.
type wire struct {
	command, cwd, url string
	args              []string
	env, headers      map[string]string
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
			field := ""
			if msg, ok := strings.CutPrefix(err.Error(), "http spec: URL: "); ok {
				field, err = "url", errors.New(msg)
			}
			p.errorf(name, field, "%v", err)
		}
	}
}
