package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
)

// envServeChain lists, in the environment of every server a fleet of
// mcpfleet starts, the config files of the fleets above it (absolute
// paths, joined by the OS's list separator). A fleet whose config is in
// the list would be its own ancestor: a config that holds `mcpfleet serve`
// of itself (Claude Desktop's file, once mcpfleet's entry is in it) would
// otherwise start itself without end, its tools fleet__fleet__…__add.
const envServeChain = "MCPFLEET_SERVE_CHAIN"

// maxChain bounds the depth of fleets within fleets, whatever their
// configs: a loop through files that name each other differently (a
// link, a copy) stops there.
const maxChain = 8

// errRecursion is the error of a fleet started by a fleet of its own
// config.
var errRecursion = errors.New("refusing to run a fleet inside itself")

// fleetChain returns the configs of the fleets above this process, from
// its environment.
func fleetChain() []string {
	var out []string
	for _, p := range filepath.SplitList(os.Getenv(envServeChain)) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// checkChain refuses to run the fleet of config (an absolute path) when a
// fleet of the same file, or too many fleets, are above this process.
func checkChain(config string) error {
	chain := fleetChain()
	if slices.Contains(chain, config) {
		return fmt.Errorf("%w: a fleet of %s started this one (fleets: %s), which would start itself again without end; "+
			"remove mcpfleet's own entry from %s, or give that entry a config of its own",
			errRecursion, config, strings.Join(append(chain, config), " -> "), config)
	}
	if len(chain) >= maxChain {
		return fmt.Errorf("%w: %d fleets deep (%s)", errRecursion, len(chain), strings.Join(chain, " -> "))
	}
	return nil
}

// markChildren sets envServeChain, with config added, in the environment
// of every stdio server of cfg: every child knows the fleets above it.
func markChildren(cfg *client.Config, config string) {
	chain := strings.Join(append(fleetChain(), config), string(os.PathListSeparator))
	for name, sc := range cfg.Servers {
		if sc.Stdio == nil {
			continue
		}
		spec := *sc.Stdio
		spec.Env = maps.Clone(spec.Env)
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[envServeChain] = chain
		sc.Stdio = &spec
		cfg.Servers[name] = sc
	}
}

// configLoader reads the config file as every command does: refusing one
// another user could have written (configfile.Load), answering a VS Code
// file's variables from --workspace and --input (and, on a terminal,
// asking), passing over the keys other hosts keep in their files with one
// warning line, and marking every child with the fleets above it.
type configLoader struct {
	e      *env
	path   string // absolute
	flags  *commonFlags
	canAsk bool         // a person can be asked on the terminal
	warn   func(string) // where the warning about unknown keys goes

	mu       sync.Mutex        // guards answered
	answered map[string]string // inputs answered at the terminal, for the next read
}

// newConfigLoader returns the loader of the config file at path (absolute)
// with the command's flags. canAsk says whether inputs may be asked for on
// the terminal (never by serve --stdio, whose stdin is its client's).
func newConfigLoader(e *env, path string, flags *commonFlags, canAsk bool) *configLoader {
	return &configLoader{e: e, path: path, flags: flags, canAsk: canAsk && e.stdinTTY,
		warn: func(s string) { fmt.Fprintln(e.stderr, termSafe(s, false)) }}
}

// workspace returns ${workspaceFolder}: --workspace, else the folder above
// .vscode for a .vscode/mcp.json, else "".
func (l *configLoader) workspace() string {
	if l.flags.workspace != "" {
		if abs, err := filepath.Abs(l.flags.workspace); err == nil {
			return abs
		}
		return l.flags.workspace
	}
	if filepath.Base(filepath.Dir(l.path)) == ".vscode" {
		return filepath.Dir(filepath.Dir(l.path))
	}
	return ""
}

// inputValue returns the --input answer to id.
func (l *configLoader) inputValue(id string) (string, bool) {
	for _, kv := range l.flags.inputs {
		if k, v, ok := strings.Cut(kv, "="); ok && k == id {
			return v, true
		}
	}
	return "", false
}

// resolve answers ${input:ID}: --input, else an answer given at the
// terminal before, else the terminal asked, else the file's default.
func (l *configLoader) resolve(in client.Input) (string, error) {
	if v, ok := l.inputValue(in.ID); ok {
		return v, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.answered[in.ID]; ok {
		return v, nil
	}
	if l.canAsk {
		q := in.Description
		if q == "" {
			q = in.ID
		}
		q = termSafe(q, false) + " (" + termSafe(in.ID, false) + ")"
		if len(in.Options) > 0 {
			q += " [" + termSafe(strings.Join(in.Options, "|"), false) + "]"
		}
		if in.Default != "" && !in.Password {
			q += " [" + termSafe(in.Default, false) + "]"
		}
		v, err := l.e.ask(q+": ", in.Password)
		if err != nil {
			return "", fmt.Errorf("asking for it: %w", err)
		}
		if v == "" {
			v = in.Default
		}
		if l.answered == nil {
			l.answered = map[string]string{}
		}
		l.answered[in.ID] = v
		return v, nil
	}
	if in.Default != "" {
		return in.Default, nil
	}
	return "", fmt.Errorf("no value: give --input %s=VALUE (or run the command on a terminal, which asks)", in.ID)
}

// load reads the config file.
func (l *configLoader) load(path string) (*client.Config, error) {
	opts := []client.ConfigOption{client.WithInputs(l.resolve)}
	ws := l.workspace()
	if ws != "" {
		opts = append(opts, client.WithWorkspaceFolder(ws))
	} else if data, err := os.ReadFile(path); err == nil {
		if doc, err := configfile.ParseDoc(data); err == nil && doc.UsesVariable("workspaceFolder") {
			return nil, fmt.Errorf("mcpfleet: config: %s uses ${workspaceFolder}: give --workspace DIR, the folder VS Code has open", path)
		}
	}
	var unknown []string
	opts = append(opts, client.WithUnknownKeys(func(server, key string) {
		if server == "" {
			unknown = append(unknown, key)
		} else {
			unknown = append(unknown, fmt.Sprintf("%s (server %q)", key, server))
		}
	}))
	cfg, err := configfile.Load(path, opts...)
	if err != nil {
		return nil, err
	}
	if len(unknown) > 0 {
		l.warn(fmt.Sprintf("mcpfleet: %s: passing over keys mcpfleet does not use: %s", path, strings.Join(unknown, ", ")))
	}
	markChildren(cfg, l.path)
	return cfg, nil
}
