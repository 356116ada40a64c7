// Command mcpfleet serves a fleet of MCP servers as one MCP server, and
// tells a person what the fleet is doing.
//
//	mcpfleet serve     [--stdio | --http ADDR] [--tool-search] ...
//	mcpfleet status    [--json] [--wait D]
//	mcpfleet tools     [QUERY] [--schema] [--json]
//	mcpfleet describe  TOOL
//	mcpfleet call      SERVER/TOOL|SERVER__TOOL ['JSON'] [--json]
//	mcpfleet auth      SERVER [--no-browser]
//	mcpfleet watch     [--json]
//	mcpfleet add       [--env K=V] [--header 'N: V'] NAME COMMAND [ARGS...] | NAME URL
//	mcpfleet remove    NAME
//	mcpfleet enable    NAME
//	mcpfleet disable   NAME
//	mcpfleet reconnect NAME
//	mcpfleet install   claude|cursor|vscode [--print]
//	mcpfleet version   (or --version)
//
// Every command takes --config FILE. The config file is the one Claude
// Desktop, Claude Code, Cursor, Gemini CLI or VS Code reads: --config
// FILE, else $MCPFLEET_CONFIG, else mcp.json in mcpfleet's directory of
// the user's config directory (os.UserConfigDir); never the current
// directory's, whose commands anyone who wrote the directory chose. A file
// that is not the user's, or that others can write, is refused. serve runs
// the fleet for an MCP host: a host that starts it as its one stdio server
// (or connects to --http) gets every server of the file behind it,
// reconnected when they crash, with their tools under qualified names. The
// other commands talk to the newest serve of the same config file that
// answers (through its admin endpoint, which only the user can reach), and
// otherwise start the servers of the file themselves for as long as the
// command runs. add, remove, enable and disable edit the file, keeping its
// comments and formatting, and have the serve read it at once.
//
// Run mcpfleet COMMAND -h for a command's flags.
//
// The exit code is 0 when the command did what it was asked, 2 for a
// mistake in its arguments or flags, and 1 otherwise: the command failed,
// a call's result is the tool's error, or status (without a serve) found
// an entry of the file not applied or a server marked required not
// connected when its wait (--wait) ended.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(mainCode())
}

// mainCode runs the command of the process's arguments and returns its
// exit code.
func mainCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := newEnv(os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stderr.Fd()))
	if isTerminal(os.Stdin.Fd()) {
		e.stdinTTY = true
		e.echoOff = func() (func(), error) { return echoOff(os.Stdin.Fd()) }
	}
	return run(ctx, os.Args[1:], e)
}

// env is a command's world: its streams, whether stderr is a terminal (for
// progress), whether stdin is one (to ask for a VS Code input), and the
// logger the Manager of a direct command writes to (nothing: what it would
// say, the commands show).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            bool
	logger         *slog.Logger
	// stdinTTY says stdin is a terminal a person answers questions on;
	// echoOff, if set, stops the terminal from showing what is typed, and
	// returns how to restore it.
	stdinTTY bool
	echoOff  func() (func(), error)
	lines    *bufio.Reader // stdin, read a line at a time (see ask)
}

func newEnv(stdin io.Reader, stdout, stderr io.Writer, tty bool) *env {
	return &env{stdin: stdin, stdout: stdout, stderr: stderr, tty: tty,
		logger: slog.New(slog.DiscardHandler)}
}

// ask asks the person at the terminal question on stderr and returns the
// line typed, without its end; secret keeps it off the screen where the
// terminal allows.
func (e *env) ask(question string, secret bool) (string, error) {
	if e.lines == nil {
		e.lines = bufio.NewReader(e.stdin)
	}
	fmt.Fprint(e.stderr, question)
	if secret && e.echoOff != nil {
		if restore, err := e.echoOff(); err == nil {
			defer func() {
				restore()
				fmt.Fprintln(e.stderr) // the newline typed was not shown
			}()
		}
	}
	line, err := e.lines.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// commandDocs are mcpfleet's commands as the usage lists them and their -h
// shows them: name, arguments (flags are listed by -h) and what it does.
var commandDocs = []struct{ name, args, summary string }{
	{"serve", "[--stdio | --http ADDR]", "serve the fleet as one MCP server"},
	{"status", "", "every server's state, and which serve answers"},
	{"tools", "[QUERY]", "the tools, or the best matches of QUERY"},
	{"describe", "TOOL", "a tool's description, hints and input schema"},
	{"call", "SERVER/TOOL|SERVER__TOOL ['JSON']", "call a tool with a JSON object of arguments"},
	{"auth", "SERVER", "authorize an OAuth server in a browser"},
	{"watch", "", "events as they happen"},
	{"add", "NAME COMMAND [ARGS...] | NAME URL", "add a server, to the config and the running serve"},
	{"remove", "NAME", "remove a server, from the config and the serve"},
	{"enable", "NAME", "switch a server on, in the config and the serve"},
	{"disable", "NAME", "switch a server off, in the config and the serve"},
	{"reconnect", "NAME", "replace a server's connection on the serve"},
	{"install", "claude|cursor|vscode", "write a client's entry that runs mcpfleet serve"},
	{"version", "", "mcpfleet's version and build (also --version)"},
}

// commandArgs returns the arguments' synopsis of command name.
func commandArgs(name string) string {
	for _, d := range commandDocs {
		if d.name == name {
			return d.args
		}
	}
	return ""
}

const usageTail = `
Every command takes --config FILE: the mcpServers file of Claude Desktop, Claude
Code, Cursor or Gemini CLI, or VS Code's mcp.json. Without it the config is
$MCPFLEET_CONFIG, else your own:
  %s
mcpfleet runs the commands the file names, so it never reads one from the
current directory, and refuses a file that is not yours or that others can
write. The commands other than serve use the serve of the same file if one runs.

serve --http asks every client for a bearer token: one is made at the first
serve, kept in a file only you can read, and printed for your client's config;
--no-auth serves without it (any local user could then use your servers).
Run mcpfleet COMMAND -h for a command's flags.
`

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed, or a call's result is an error
	exitUsage = 2
)

// run runs the command of args and returns its exit code.
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usageText())
		return exitUsage
	}
	cmds := map[string]func(context.Context, []string, *env) error{
		"serve": cmdServe, "status": cmdStatus, "tools": cmdTools, "describe": cmdDescribe, "call": cmdCall,
		"auth": cmdAuth, "watch": cmdWatch, "add": cmdAdd, "remove": cmdRemove, "enable": cmdEnable,
		"disable": cmdDisable, "reconnect": cmdReconnect, "install": cmdInstall, "version": cmdVersion,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		switch args[0] {
		case "help", "-h", "--help":
			fmt.Fprint(e.stdout, usageText())
			return exitOK
		case "--version", "-version":
			cmd, args = cmdVersion, append([]string{"version"}, args[1:]...)
		default:
			names := make([]string, 0, len(commandDocs))
			for _, d := range commandDocs {
				names = append(names, d.name)
			}
			fmt.Fprintf(e.stderr, "mcpfleet: unknown command %q%s\n\n%s", args[0], didYouMean(args[0], names), usageText())
			return exitUsage
		}
	}
	err := cmd(ctx, args[1:], e)
	var u usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &u):
		if u.msg != "" { // else the flag package said it
			fmt.Fprintf(e.stderr, "mcpfleet %s: %v\n", args[0], err)
		}
		return exitUsage
	case errors.Is(err, errErrorResult), errors.Is(err, errNotAsConfigured):
		return exitError
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return exitError
	}
	// One prefix: the command's, in place of the library's.
	// Errors may quote what a server said: shown, not obeyed (termSafe).
	fmt.Fprintf(e.stderr, "mcpfleet %s: %s\n", args[0], termSafe(strings.TrimPrefix(err.Error(), "mcpfleet: "), true))
	return exitError
}

// usageError is a mistake in a command's arguments.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errErrorResult is the error of a call whose result is an error result: it
// was printed, and the exit code says so.
var errErrorResult = errors.New("the tool's result is an error")

// errNotAsConfigured is the error of a status whose own fleet is not what
// its config says: an entry could not be applied, or a server marked
// required was not connected when the wait (--wait) ended. What the Apply
// said was printed; the exit code says so.
var errNotAsConfigured = errors.New("the fleet is not as its config says")

// commonFlags are the flags the commands share.
type commonFlags struct {
	config string
	direct bool
	json   bool
	// workspace and inputs answer a VS Code file's ${workspaceFolder} and
	// ${input:ID}.
	workspace string
	inputs    stringList
	// wait bounds how long a command that shows the fleet waits for
	// servers still connecting (status, tools, describe: --wait).
	wait time.Duration
}

// flagKinds says which of the common flags a command takes.
type flagKinds uint8

const (
	flagConfig flagKinds = 1 << iota // --config
	flagJSON                         // --json: it prints something a program may read
	flagDirect                       // --direct: it uses a fleet, a serve's or its own
	flagVars                         // --workspace, --input: it reads the config's variables
)

// newFlags returns the flag set of command name, with the common flags of
// kinds.
func newFlags(name string, e *env, c *commonFlags, kinds flagKinds) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpfleet "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: mcpfleet %s [flags]\n\n", strings.TrimSpace(name+" "+commandArgs(name)))
		fs.PrintDefaults()
	}
	if kinds&flagConfig != 0 {
		fs.StringVar(&c.config, "config", "", "the config `file` (default $MCPFLEET_CONFIG, else "+userConfigShown()+"; never the current directory's)")
	}
	if kinds&flagVars != 0 {
		fs.StringVar(&c.workspace, "workspace", "", "the `folder` a VS Code file's ${workspaceFolder} names (default: the folder above .vscode for a .vscode/mcp.json)")
		fs.Var(&c.inputs, "input", "the answer to a VS Code file's ${input:ID}, as `ID=VALUE` (repeatable; on a terminal, what is not given is asked for)")
	}
	if kinds&flagDirect != 0 {
		fs.BoolVar(&c.direct, "direct", false, "start the config's servers here even if a serve of it runs")
	}
	if kinds&flagJSON != 0 {
		fs.BoolVar(&c.json, "json", false, "print JSON, for programs")
	}
	return fs
}

// cmdSpec is what a command other than serve says of its arguments for
// the preamble they share (prepare).
type cmdSpec struct {
	name string
	// minArgs and maxArgs bound the positional arguments (maxArgs -1: no
	// bound); wantArgs says what they are, for the error when they are
	// not.
	minArgs, maxArgs int
	wantArgs         string
	json             bool                   // the command takes --json
	wait             bool                   // the command takes --wait
	flags            func(fs *flag.FlagSet) // the command's own flags
	// check, if set, refuses positional arguments that are wrong in
	// themselves, before the fleet is opened.
	check func(args []string) error
	// noFleet, if set, says (once the flags are parsed) that the command
	// needs no fleet this time: prepare opens none.
	noFleet func() bool
}

// invocation is a command other than serve, ready to run: its flags, its
// positional arguments and the fleet of its config. close ends the fleet.
type invocation struct {
	commonFlags
	args  []string
	fleet fleet
}

func (inv *invocation) close() {
	if inv.fleet != nil {
		inv.fleet.close()
	}
}

// prepare is the preamble of every command other than serve: it parses
// args by s (the common flags and the command's own), checks the
// positional arguments, and opens the fleet of the config (the running
// serve's, or one of its own).
func prepare(ctx context.Context, e *env, s cmdSpec, args []string) (*invocation, error) {
	inv := &invocation{}
	kinds := flagConfig | flagDirect | flagVars
	if s.json {
		kinds |= flagJSON
	}
	fs := newFlags(s.name, e, &inv.commonFlags, kinds)
	inv.wait = defaultWait
	if s.wait {
		fs.DurationVar(&inv.wait, "wait", defaultWait, "how long to wait for servers still connecting, required ones too, before showing what is known (without a serve)")
	}
	if s.flags != nil {
		s.flags(fs)
	}
	pos, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(pos) < s.minArgs || s.maxArgs >= 0 && len(pos) > s.maxArgs:
		if s.wantArgs == "" {
			return nil, usagef("%s takes no arguments (got %q)", s.name, pos)
		}
		return nil, usagef("%s takes %s", s.name, s.wantArgs)
	}
	if s.check != nil {
		if err := s.check(pos); err != nil {
			return nil, err
		}
	}
	if err := checkInputs(inv.inputs); err != nil {
		return nil, err
	}
	inv.args = pos
	if s.noFleet != nil && s.noFleet() {
		return inv, nil
	}
	if inv.fleet, err = openFleet(ctx, e, &inv.commonFlags); err != nil {
		return nil, err
	}
	return inv, nil
}

// usageText is the usage, with the user's config file spelled out.
func usageText() string {
	var b strings.Builder
	b.WriteString("mcpfleet: many MCP servers as one, kept connected\n\nusage:\n")
	width := 0
	for _, d := range commandDocs {
		width = max(width, len(d.name)+1+len(d.args))
	}
	for _, d := range commandDocs {
		fmt.Fprintf(&b, "  mcpfleet %-*s  %s\n", width, strings.TrimSpace(d.name+" "+d.args), d.summary)
	}
	fmt.Fprintf(&b, usageTail, userConfigShown())
	return b.String()
}

// envConfig names the config file when --config is not given.
const envConfig = "MCPFLEET_CONFIG"

// userConfig is the config file of the user's own: mcpfleet/mcp.json in
// the user's config directory.
func userConfig() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcpfleet", "mcp.json"), nil
}

// userConfigShown is userConfig for the usage.
func userConfigShown() string {
	if p, err := userConfig(); err == nil {
		return p
	}
	return "the user's config directory is unknown"
}

// errNoConfig is the error of a command that was given no config file.
var errNoConfig = errors.New("no config file")

// configPath returns the config file: flag (--config), else
// $MCPFLEET_CONFIG, else the user's own if it exists. Never a file of the
// current directory unless named: any directory's mcp.json would make
// mcpfleet run the commands whoever wrote it chose.
func configPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := os.Getenv(envConfig); p != "" {
		return p, nil
	}
	p, err := userConfig()
	if err != nil {
		return "", fmt.Errorf("%w: give --config FILE or set %s=FILE (%v)", errNoConfig, envConfig, err)
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: give --config FILE, set %s=FILE, or write your servers to %s "+
		"(mcpfleet no longer reads mcp.json from the current directory: it runs the commands a config names)",
		errNoConfig, envConfig, p)
}

// checkInputs refuses an --input that is not ID=VALUE.
func checkInputs(inputs []string) error {
	for _, kv := range inputs {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--input wants ID=VALUE, not %q", kv)
		}
	}
	return nil
}

// parse parses args into fs, allowing flags after the positional
// arguments (mcpfleet call notes__find '{}' --json), and returns the
// positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) { return parseUntil(fs, args, -1) }

// parseUntil is parse that stops looking for flags once it has n
// positional arguments (n < 0: never): what follows is positional as it
// is, as the command line of a server (mcpfleet add memory npx -y PKG).
func parseUntil(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	var pos []string
	for {
		if n >= 0 && len(pos) >= n {
			return append(pos, args...), nil
		}
		if err := parseQuiet(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseQuiet is fs.Parse, which prints the usage for -h only: a mistyped
// flag gets one line, with the flags it resembles and where to find them
// all, as an unknown command does.
func parseQuiet(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		msg = "unknown flag --" + name + didYouMean("--"+name, names)
	}
	return usagef("%s; %s -h lists its flags", msg, fs.Name())
}
