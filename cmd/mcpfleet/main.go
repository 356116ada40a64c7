// Command mcpfleet serves a fleet of MCP servers as one MCP server, and
// tells a person what the fleet is doing.
//
//	mcpfleet serve  [--config FILE] [--stdio | --http ADDR] [--tool-search] ...
//	mcpfleet status [--config FILE] [--json]
//	mcpfleet tools  [QUERY] [--config FILE] [--json]
//	mcpfleet call   SERVER/TOOL|SERVER__TOOL ['JSON'] [--config FILE] [--json]
//	mcpfleet auth   SERVER [--config FILE] [--no-browser]
//	mcpfleet watch  [--config FILE] [--json]
//
// The config file is the one Claude Desktop, Claude Code, Cursor, Gemini
// CLI or VS Code reads: --config FILE, else $MCPFLEET_CONFIG, else
// mcp.json in mcpfleet's directory of the user's config directory
// (os.UserConfigDir); never the current directory's, whose commands
// anyone who wrote the directory chose. A file that is not the user's, or
// that others can write, is refused. serve runs the fleet for an
// MCP host: a host that starts it as its one stdio server (or connects to
// --http) gets every server of the file behind it, reconnected when they
// crash, with their tools under qualified names. The other commands talk
// to the serve of the same config file if one runs (through its admin
// endpoint, which only the user can reach), and otherwise start the
// servers of the file themselves for as long as the command runs.
//
// Run mcpfleet COMMAND -h for a command's flags.
package main

import (
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
)

func main() {
	os.Exit(mainCode())
}

// mainCode runs the command of the process's arguments and returns its
// exit code.
func mainCode() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], newEnv(os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stderr.Fd())))
}

// env is a command's world: its streams, whether stderr is a terminal (for
// progress), and the logger the Manager of a direct command writes to
// (nothing: what it would say, the commands show).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            bool
	logger         *slog.Logger
}

func newEnv(stdin io.Reader, stdout, stderr io.Writer, tty bool) *env {
	return &env{stdin: stdin, stdout: stdout, stderr: stderr, tty: tty,
		logger: slog.New(slog.DiscardHandler)}
}

// commandDocs are mcpfleet's commands as the usage lists them and their -h
// shows them: name, arguments (flags are listed by -h) and what it does.
var commandDocs = []struct{ name, args, summary string }{
	{"serve", "[--stdio | --http ADDR]", "serve the fleet as one MCP server"},
	{"status", "", "every server's state"},
	{"tools", "[QUERY]", "the tools, or the best matches of QUERY"},
	{"call", "SERVER/TOOL|SERVER__TOOL ['JSON']", "call a tool with a JSON object of arguments"},
	{"auth", "SERVER", "authorize an OAuth server in a browser"},
	{"watch", "", "events as they happen"},
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
		"serve": cmdServe, "status": cmdStatus, "tools": cmdTools, "call": cmdCall, "auth": cmdAuth, "watch": cmdWatch,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(e.stdout, usageText())
			return exitOK
		}
		fmt.Fprintf(e.stderr, "mcpfleet: unknown command %q\n\n%s", args[0], usageText())
		return exitUsage
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
	case errors.Is(err, errErrorResult):
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

// commonFlags are the flags every command but serve takes.
type commonFlags struct {
	config string
	direct bool
	json   bool
}

// newFlags returns the flag set of command name, with the common flags:
// --config for every command, --direct for those that use a fleet, and
// --json for those that print something a program may read.
func newFlags(name string, e *env, c *commonFlags, withJSON bool) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpfleet "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: mcpfleet %s [flags]\n\n", strings.TrimSpace(name+" "+commandArgs(name)))
		fs.PrintDefaults()
	}
	fs.StringVar(&c.config, "config", "", "the config `file` (default $MCPFLEET_CONFIG, else "+userConfigShown()+"; never the current directory's)")
	if name != "serve" {
		fs.BoolVar(&c.direct, "direct", false, "start the config's servers here even if a serve of it runs")
	}
	if withJSON {
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
	flags            func(fs *flag.FlagSet) // the command's own flags
	// check, if set, refuses positional arguments that are wrong in
	// themselves, before the fleet is opened.
	check func(args []string) error
}

// invocation is a command other than serve, ready to run: its flags, its
// positional arguments and the fleet of its config. close ends the fleet.
type invocation struct {
	commonFlags
	args  []string
	fleet fleet
}

func (inv *invocation) close() { inv.fleet.close() }

// prepare is the preamble of every command other than serve: it parses
// args by s (the common flags and the command's own), checks the
// positional arguments, and opens the fleet of the config (the running
// serve's, or one of its own).
func prepare(ctx context.Context, e *env, s cmdSpec, args []string) (*invocation, error) {
	inv := &invocation{}
	fs := newFlags(s.name, e, &inv.commonFlags, s.json)
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
	inv.args = pos
	if inv.fleet, err = openFleet(ctx, e, inv.config, inv.direct); err != nil {
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

// parse parses args into fs, allowing flags after the positional
// arguments (mcpfleet call notes__find '{}' --json), and returns the
// positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{} // the flag package printed it, with the usage
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
