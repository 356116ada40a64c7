package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/internal/admin"
	"github.com/mcpfleet/mcpfleet/internal/configfile"
)

// The commands that manage servers (add, remove, enable, disable) change
// the config file, keeping its comments and formatting (configfile.Doc
// edits byte ranges), and then have the running serve of it, if one
// answers, read it at once, so that what the file says is what runs.
// reconnect acts on the running serve alone: a file has nothing to
// reconnect.

// configEdit is a config file being edited by a command.
type configEdit struct {
	e    *env
	path string // absolute
	was  []byte // the text the edit started from; nil for a new file
	doc  *configfile.Doc
	// serve is the running serve of the config, nil when none answers.
	serve *remoteFleet
}

// openEdit reads the config file of flags for editing and finds its
// running serve. create allows a file that does not exist yet: the user's
// own, or the one --config names.
func openEdit(ctx context.Context, e *env, flags *commonFlags, create bool) (*configEdit, error) {
	path, err := configPath(flags.config)
	if errors.Is(err, errNoConfig) && create && flags.config == "" && os.Getenv(envConfig) == "" {
		path, err = userConfig()
	}
	if err != nil {
		return nil, err
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	ed := &configEdit{e: e, path: path}
	data, err := os.ReadFile(path)
	switch {
	case isNotExist(err) && create:
	case err != nil:
		return nil, fmt.Errorf("mcpfleet: config: %w", err)
	default:
		ed.was = data
	}
	if ed.doc, err = configfile.ParseDoc(data); err != nil {
		return nil, fmt.Errorf("mcpfleet: config: %s: %w", path, err)
	}
	paths, err := pathsFor(path)
	if err != nil {
		return nil, err
	}
	if r, notes := findServe(ctx, e, paths); r != nil {
		ed.serve = r
	} else {
		for _, n := range notes {
			fmt.Fprintf(e.stderr, "mcpfleet: %s\n", n)
		}
	}
	return ed, nil
}

func (ed *configEdit) close() {
	if ed.serve != nil {
		ed.serve.close()
	}
}

// server checks that the file has server name, suggesting the nearest
// names when it does not.
func (ed *configEdit) server(name string) error {
	names := ed.doc.Servers()
	if slices.Contains(names, name) {
		return nil
	}
	return fmt.Errorf("%s has no server %q%s", ed.path, name, didYouMean(name, names))
}

// save writes the edited file (unless the edit changed nothing) and has
// the serve read it; it returns what the serve's Apply did ("" without a
// serve or a change).
func (ed *configEdit) save(ctx context.Context) (string, error) {
	if ed.was != nil && string(ed.was) == string(ed.doc.Bytes()) {
		return "", nil
	}
	if err := configfile.WriteFile(ed.path, ed.was, ed.doc.Bytes()); err != nil {
		return "", err
	}
	if ed.serve == nil {
		return "", nil
	}
	rep, err := ed.serve.reload(ctx)
	if err != nil {
		return "", fmt.Errorf("the file is written, but the serve (pid %d) did not read it: %w", ed.serve.info.PID, err)
	}
	if rep.Error != "" {
		return rep.Summary, fmt.Errorf("the file is written; the serve (pid %d) says: %s", ed.serve.info.PID, rep.Error)
	}
	return rep.Summary, nil
}

// where says where a change was made, for the line a command ends with.
func (ed *configEdit) where() string {
	if ed.serve == nil {
		return ed.path + " (no serve of it runs)"
	}
	return fmt.Sprintf("%s and on its serve (pid %d)", ed.path, ed.serve.info.PID)
}

// manageFlags is the flag set of a command that edits the config.
func manageFlags(name string, e *env, c *commonFlags) *flag.FlagSet {
	return newFlags(name, e, c, flagConfig|flagJSON)
}

// oneServer parses the arguments of a command that takes one server name.
func oneServer(fs *flag.FlagSet, args []string, name string) (string, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("%s takes the name of one server", name)
	}
	return pos[0], nil
}

// manageReport is what a managing command prints with --json.
type manageReport struct {
	Server  string              `json:"server"`
	File    string              `json:"file"`
	Changed bool                `json:"changed"` // the file was written
	Serve   *admin.ServeInfo    `json:"serve,omitempty"`
	Summary string              `json:"summary,omitempty"` // the serve's Apply
	State   *admin.ServerReport `json:"state,omitempty"`   // on the serve, after
}

// finish prints what a managing command did: with --json, rep; else one
// line, and the server's state on the serve.
func (ed *configEdit) finish(c *commonFlags, rep manageReport, line string) error {
	rep.File = ed.path
	if ed.serve != nil {
		rep.Serve = &ed.serve.info
	}
	if c.json {
		return printJSON(ed.e.stdout, rep)
	}
	fmt.Fprintln(ed.e.stdout, termSafe(line, false))
	if rep.State != nil {
		fmt.Fprintln(ed.e.stdout, termSafe(stateLine(*rep.State), false))
	}
	return nil
}

// stateLine says a server's state on the serve, in one line.
func stateLine(r admin.ServerReport) string {
	line := fmt.Sprintf("%s: %s, generation %d, %d tools", r.Name, r.State, r.Generation, r.Tools)
	switch {
	case r.State == "Connecting" || r.State == "Reconnecting":
		line += " (still connecting: mcpfleet status shows how it goes)"
	case r.LastError != "" && r.State != "Connected":
		line += ": " + firstLine(r.LastError)
	}
	return line
}

func cmdEnable(ctx context.Context, args []string, e *env) error {
	return setDisabled(ctx, args, e, "enable", false)
}

func cmdDisable(ctx context.Context, args []string, e *env) error {
	return setDisabled(ctx, args, e, "disable", true)
}

// setDisabled is enable and disable: the entry's "disabled" in the file,
// and the server on the serve (which may have been switched on the status
// page, against the file).
func setDisabled(ctx context.Context, args []string, e *env, op string, disabled bool) error {
	var c commonFlags
	fs := manageFlags(op, e, &c)
	var wait time.Duration
	if disabled {
		fs.DurationVar(&wait, "wait", defaultWait, "not used by disable, which shows the server's state once the serve has switched it off "+
			"(its calls in flight drained first); taken so that enable's flags work here too")
	} else {
		fs.DurationVar(&wait, "wait", defaultWait, "how long to wait for the server to connect on the serve, once enabled")
	}
	name, err := oneServer(fs, args, op)
	if err != nil {
		return err
	}
	ed, err := openEdit(ctx, e, &c, false)
	if err != nil {
		return err
	}
	defer ed.close()
	if err := ed.server(name); err != nil {
		return err
	}
	if _, has := ed.doc.ServerField(name, "disabled"); disabled || has {
		if err := ed.doc.SetServerField(name, "disabled", disabled); err != nil {
			return err
		}
	}
	rep := manageReport{Server: name}
	rep.Changed = ed.was != nil && string(ed.was) != string(ed.doc.Bytes())
	if rep.Summary, err = ed.save(ctx); err != nil {
		return err
	}
	if ed.serve != nil {
		st, err := ed.serve.control(ctx, name, op)
		if err != nil {
			return fmt.Errorf("the file is written; on the serve (pid %d): %w", ed.serve.info.PID, err)
		}
		if !disabled && st.State != "Connected" {
			st = ed.serve.settle(ctx, name, st.Generation, wait)
		}
		rep.State = &st
	}
	return ed.finish(&c, rep, fmt.Sprintf("%sd %s in %s", op, name, ed.where()))
}

func cmdReconnect(ctx context.Context, args []string, e *env) error {
	var c commonFlags
	fs := manageFlags("reconnect", e, &c)
	var wait time.Duration
	fs.DurationVar(&wait, "wait", defaultWait, "how long to wait for the server to connect again")
	name, err := oneServer(fs, args, "reconnect")
	if err != nil {
		return err
	}
	ed, err := openEdit(ctx, e, &c, false)
	if err != nil {
		return err
	}
	defer ed.close()
	if ed.serve == nil {
		return fmt.Errorf("no serve of %s runs: there is no connection to replace (the servers of a command without a serve live as long as it)", ed.path)
	}
	st, err := ed.serve.status(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(st.Servers))
	var gen uint64
	for _, r := range st.Servers {
		names = append(names, r.Name)
		if r.Name == name {
			gen = r.Generation
		}
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("the serve (pid %d) has no server %q%s", ed.serve.info.PID, name, didYouMean(name, names))
	}
	if _, err := ed.serve.control(ctx, name, "reconnect"); err != nil {
		return err
	}
	after := ed.serve.settle(ctx, name, gen, wait)
	return ed.finish(&c, manageReport{Server: name, State: &after},
		fmt.Sprintf("reconnected %s on the serve (pid %d) of %s", name, ed.serve.info.PID, ed.path))
}

func cmdRemove(ctx context.Context, args []string, e *env) error {
	var c commonFlags
	fs := manageFlags("remove", e, &c)
	name, err := oneServer(fs, args, "remove")
	if err != nil {
		return err
	}
	ed, err := openEdit(ctx, e, &c, false)
	if err != nil {
		return err
	}
	defer ed.close()
	if err := ed.server(name); err != nil {
		return err
	}
	if err := ed.doc.RemoveServer(name); err != nil {
		return err
	}
	rep := manageReport{Server: name, Changed: true}
	if rep.Summary, err = ed.save(ctx); err != nil {
		return err
	}
	return ed.finish(&c, rep, fmt.Sprintf("removed %s from %s", name, ed.where()))
}

// entry is a server entry as add writes it, fields in the order people
// write them.
type entry struct {
	Type     string            `json:"type,omitempty"`
	Command  string            `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	URL      string            `json:"url,omitempty"`
	HTTPURL  string            `json:"httpUrl,omitempty"` // Gemini CLI's streamable HTTP
	Headers  map[string]string `json:"headers,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
}

func cmdAdd(ctx context.Context, args []string, e *env) error {
	var c commonFlags
	fs := manageFlags("add", e, &c)
	var envs, headers stringList
	var typ, cwd string
	var disabled bool
	var wait time.Duration
	fs.Var(&envs, "env", "an environment variable of a command's server, as `KEY=VALUE` (repeatable)")
	fs.Var(&headers, "header", "an HTTP header of a URL's server, as `'Name: value'` (repeatable)")
	fs.StringVar(&typ, "type", "", "the transport: stdio, http or sse (default: stdio for a command, http for a URL)")
	fs.StringVar(&cwd, "cwd", "", "the working `directory` of a command's server")
	fs.BoolVar(&disabled, "disabled", false, "add it switched off")
	fs.DurationVar(&wait, "wait", defaultWait, "how long to wait for it to connect on the serve")
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: mcpfleet add [flags] NAME COMMAND [ARGS...]\n       mcpfleet add [flags] NAME URL\n\n"+
			"Everything after the command is its own: mcpfleet add memory npx -y @modelcontextprotocol/server-memory\n\n")
		fs.PrintDefaults()
	}
	pos, err := parseUntil(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("add takes a name and a command (with its arguments) or a URL")
	}
	name, target := pos[0], pos[1]
	if own := ownFlags(fs, pos[2:]); len(own) > 0 {
		fmt.Fprintf(e.stderr, "mcpfleet add: note: %s went to the server %s as its arguments; mcpfleet add's own flags go before the name\n",
			termSafe(strings.Join(own, ", "), false), termSafe(name, false))
	}
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/ ") || strings.Contains(name, "__") {
		return usagef("the name %q cannot be a server's: it is empty, or has a space, a / or __ (which tool names use)", name)
	}
	remote := false
	if u, err := url.Parse(target); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		remote = true
	}
	switch {
	case typ == "":
		typ = map[bool]string{true: "http", false: "stdio"}[remote]
	case typ == "stdio" && remote, (typ == "http" || typ == "sse") && !remote:
		return usagef("--type %s does not go with %q", typ, target)
	case typ != "stdio" && typ != "http" && typ != "sse":
		return usagef("--type is stdio, http or sse, not %q", typ)
	}
	var en entry
	if remote {
		if len(pos) > 2 || len(envs) > 0 || cwd != "" {
			return usagef("a URL's server takes no arguments, --env or --cwd")
		}
		en.URL = target
		if len(headers) > 0 {
			en.Headers = map[string]string{}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(k) == "" {
					return usagef("--header wants 'Name: value', not %q", h)
				}
				en.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	} else {
		if len(headers) > 0 {
			return usagef("a command's server takes no --header")
		}
		en.Command, en.Args, en.Cwd = target, pos[2:], cwd
		if len(envs) > 0 {
			en.Env = map[string]string{}
			for _, kv := range envs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--env wants KEY=VALUE, not %q", kv)
				}
				en.Env[k] = v
			}
		}
	}
	en.Disabled = disabled

	ed, err := openEdit(ctx, e, &c, true)
	if err != nil {
		return err
	}
	defer ed.close()
	if slices.Contains(ed.doc.Servers(), name) {
		return fmt.Errorf("%s already has a server %q: remove it first, or choose another name", ed.path, name)
	}
	// Each host writes an entry its way; the file's dialect decides.
	dialect := dialectOf(ed.was, ed.path)
	switch {
	case dialect == client.DialectVSCode:
		en.Type = typ
	case dialect == client.DialectGemini && typ == "http":
		en.HTTPURL, en.URL = en.URL, ""
	case typ != "stdio":
		en.Type = typ
	}
	if err := checkEntry(ed.doc.ServersKey(), dialect, name, en); err != nil {
		return err
	}
	if err := ed.doc.AddServer(name, en); err != nil {
		return err
	}
	rep := manageReport{Server: name, Changed: true}
	if rep.Summary, err = ed.save(ctx); err != nil {
		return err
	}
	if ed.serve != nil && !disabled {
		st := ed.serve.settle(ctx, name, 0, wait)
		rep.State = &st
	}
	return ed.finish(&c, rep, fmt.Sprintf("added %s to %s", name, ed.where()))
}

// ownFlags returns the arguments of a server's command line that are
// flags of fs (--config, -env=K=V): the server gets them, as everything
// after its command, but the user may have meant them for mcpfleet.
func ownFlags(fs *flag.FlagSet, args []string) []string {
	var own []string
	for _, a := range args {
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, _, _ = strings.Cut(name, "=")
		if name != "" && fs.Lookup(name) != nil {
			own = append(own, a)
		}
	}
	return own
}

// dialectOf returns the dialect the library reads the file's text as; the
// mcpServers form when it cannot read it.
func dialectOf(data []byte, path string) client.Dialect {
	if data == nil {
		return client.DialectMCPServers
	}
	cfg, err := client.ParseConfig(data, client.WithSource(path), client.WithUnknownKeys(func(string, string) {}),
		client.WithInputs(func(client.Input) (string, error) { return "", nil }), client.WithWorkspaceFolder(filepath.Dir(path)),
		client.WithLookupEnv(func(string) (string, bool) { return "", true }))
	if err != nil {
		if doc, derr := configfile.ParseDoc(data); derr == nil && doc.ServersKey() == "servers" {
			return client.DialectVSCode
		}
		return client.DialectMCPServers
	}
	return cfg.Dialect
}

// checkEntry refuses an entry the library would refuse, with its error.
func checkEntry(key string, dialect client.Dialect, name string, en entry) error {
	b, err := json.Marshal(map[string]any{key: map[string]entry{name: en}})
	if err != nil {
		return err
	}
	_, err = client.ParseConfig(b, client.WithSource("the new entry"), client.WithDialect(dialect),
		client.WithLookupEnv(func(string) (string, bool) { return "", true }),
		client.WithInputs(func(client.Input) (string, error) { return "", nil }), client.WithWorkspaceFolder("/"))
	return err
}

// settle waits up to wait for server name to settle on the serve (to be
// neither connecting nor reconnecting) in a generation after minGen,
// following its watch stream, and returns its report then.
func (r *remoteFleet) settle(ctx context.Context, name string, minGen uint64, wait time.Duration) admin.ServerReport {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	last := admin.ServerReport{Name: name, State: "unknown"}
	if resp, err := r.do(wctx, http.MethodGet, "/v1/watch", nil); err == nil {
		settled := func(state string) bool {
			switch state {
			case "Connecting", "Reconnecting", "Disconnected", "unknown":
				return false
			case "Connected":
				return last.Generation > minGen
			}
			return true
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), client.DefaultMaxMessageBytes)
		for sc.Scan() {
			var l admin.StreamLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				break
			}
			for _, s := range l.Servers {
				if s.Name == name {
					last = s
				}
			}
			if ev := l.Event; ev != nil && ev.Kind == "state" && ev.Server == name {
				last.State = ev.To
				last.Generation = max(last.Generation, ev.Generation)
			}
			if settled(last.State) {
				break
			}
		}
		resp.Body.Close()
	}
	if st, err := r.status(ctx); err == nil {
		for _, s := range st.Servers {
			if s.Name == name {
				return s
			}
		}
	}
	return last
}
