// Command host is a small interactive MCP host to keep open while writing
// an MCP server. It loads a config file in the mcpServers form (Claude
// Desktop, Claude Code's .mcp.json, Cursor, Gemini CLI's settings.json) or
// VS Code's servers form, connects every server through an mcpfleet
// Manager, prints a live timeline of what the servers do, and reads
// commands from stdin, one per line. From the repository root, with the
// sample config (two servers that need only Go, a third that needs
// `make npm`):
//
//	go run ./examples/host -config examples/host/mcp.json [-tokens tokens.json] [-workspace dir]
//
// Without -config it reads ./mcp.json, and if there is none it says how to
// start. ${workspaceFolder} in the config is -workspace (the current
// directory by default); a VS Code ${input:id} without a default is asked
// for on stdin once, when the config is first read.
//
//	status                  every server: state, generation, tools, retries, idle, last error
//	tools [server]          qualified tool names with the first line of their description
//	call <tool> [json]      call a tool by its qualified name with a JSON object of arguments
//	enable <server>         switch a server on
//	disable <server>        switch a server off
//	reconnect <server>      replace a server's runtime, with a fresh reconnect budget
//	stderr <server>         the last lines a stdio server wrote to stderr
//	allow <server> [tool…]  publish only these of a server's tools (names or globs like
//	                        read_*); none clears the allow list
//	deny <server> [tool…]   hide these of a server's tools (deny wins over allow); none
//	                        clears the deny list; neither reconnects the server
//	auth <server> [redirect]  authorize an OAuth server: prints the URL to open and waits
//	                        for the browser's redirect on 127.0.0.1; on a headless host,
//	                        paste the redirect URL (or the code) as the second argument
//	reload                  re-read the config file and apply what changed
//	help                    this list
//	quit                    close every server and exit (so does end of input)
//
// Timeline lines start with "* " and appear as things happen, between the
// answers to commands.
//
// A server entry with "idleTimeout" (say "5m") has its runtime closed after
// that long unused: its status row says "idle" and for how long, its tools
// stay listed, and the next call starts it again. A reload that changes only
// the idle timeout applies it without a restart.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
)

// applyTimeout bounds one Apply, which waits for the servers marked
// required to connect.
const applyTimeout = 30 * time.Second

// separator joins a server's name and a tool's in qualified names: the
// Manager's default, which the host does not change.
const separator = "__"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp), errors.Is(err, context.Canceled):
	default:
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
}

// run is the whole host: main gives it the process's arguments and stdio,
// the test gives it a pipe. It returns once stdin says quit or ends, or ctx
// ends, after closing every server.
func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(stdout)
	path := fs.String("config", "", "config `file`: mcpServers form (Claude, Cursor, Gemini CLI) or VS Code's servers form (default ./mcp.json)")
	tokens := fs.String("tokens", "", "`file` to keep OAuth tokens in across runs (mode 0600); empty keeps them in memory")
	workspace := fs.String("workspace", "", "the `dir` ${workspaceFolder} names in the config (default: the current directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *path == "" {
		if _, err := os.Stat(defaultConfig); err != nil {
			fmt.Fprint(stdout, noConfigText)
			return nil
		}
		*path = defaultConfig
	}
	if *workspace == "" {
		if *workspace, err = os.Getwd(); err != nil {
			return err
		}
	}
	lines, stopReading := readLines(stdin)
	defer stopReading()
	in := &inputs{ctx: ctx, lines: lines, write: func(s string) { io.WriteString(stdout, s) }, answers: map[string]string{}}
	load := func() (*client.Config, error) {
		return client.LoadConfig(*path, client.WithWorkspaceFolder(*workspace), client.WithInputs(in.answer))
	}
	cfg, err := load()
	if err != nil {
		return err
	}

	var opts []client.Option
	if *tokens != "" {
		opts = append(opts, client.WithTokenStore(oauth.NewFileStore(*tokens)))
	}
	h := &host{m: client.New(opts...), path: *path, load: load, cfg: cfg, out: stdout, auths: map[string]context.CancelFunc{}}
	defer h.stopAuths()
	in.write = h.write // from now on the timeline writes too
	events, _ := h.m.Events(0)
	timelineDone := make(chan struct{})
	go func() {
		defer close(timelineDone)
		h.timeline(events)
	}()
	defer func() {
		// Close delivers the last events (every server going Closed) and
		// then closes the subscription, which ends the timeline.
		if cerr := h.m.Close(); cerr != nil && err == nil {
			err = cerr
		}
		<-timelineDone
	}()

	h.printf("host: %s from %s; type help for commands\n", plural(len(cfg.Servers), "server", "servers"), *path)
	actx, cancel := context.WithTimeout(ctx, applyTimeout)
	_, err = h.m.Apply(actx, cfg)
	cancel()
	if err != nil {
		// One bad entry does not stop the others: show it and carry on,
		// so that the developer can fix the file and reload.
		h.printf("apply: %v\n", err)
	}

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case line, ok := <-lines:
			if !ok {
				return nil // end of input is quit
			}
			if !h.command(ctx, line) {
				return nil
			}
		}
	}
}

// defaultConfig is the file read when -config is not given.
const defaultConfig = "mcp.json"

// noConfigText is what the host says when it has no config to read.
const noConfigText = `host: no config file: give one with -config, or put an mcp.json in this directory.
To try it, from the mcpfleet repository (two servers that need only Go):

  go run ./examples/host -config examples/host/mcp.json

A config is the file you give Claude Desktop, Claude Code, Cursor or Gemini CLI
({"mcpServers": {"name": {"command": "...", "args": [...]}}}, or "url" for HTTP),
or VS Code's mcp.json ({"servers": {...}, "inputs": [...]}).
`

// inputs answers the config's ${input:id} on stdin, the first time each is
// used: an input with a default takes it, one without is asked for. Only
// the command loop's goroutine reads lines, through it.
type inputs struct {
	ctx     context.Context
	lines   <-chan string
	write   func(string)
	answers map[string]string
}

// answer is a client.WithInputs callback.
func (in *inputs) answer(input client.Input) (string, error) {
	if a, ok := in.answers[input.ID]; ok {
		return a, nil
	}
	if input.Default != "" {
		return input.Default, nil
	}
	if input.Type == "command" {
		return "", fmt.Errorf("it runs the VS Code command %q, which only VS Code can; give the input a \"default\"", input.Command)
	}
	prompt := "host: the config asks for input " + strconv.Quote(input.ID)
	if input.Description != "" {
		prompt += " (" + input.Description + ")"
	}
	if len(input.Options) > 0 {
		prompt += ", one of " + strings.Join(input.Options, ", ")
	}
	if input.Password {
		prompt += "; it is a secret, and what you type is shown"
	}
	in.write(prompt + ":\n")
	select {
	case line, ok := <-in.lines:
		if !ok {
			return "", errors.New("input ended before an answer")
		}
		a := strings.TrimSpace(line)
		if a == "" {
			return "", errors.New("no answer")
		}
		in.answers[input.ID] = a
		return a, nil
	case <-in.ctx.Done():
		return "", in.ctx.Err()
	}
}

// readLines reads r line by line on its own goroutine, so that the command
// loop can also watch its context: a read from a terminal cannot be
// interrupted. The goroutine ends when r does, or when stop is called and
// it has finished the read in progress.
func readLines(r io.Reader) (lines <-chan string, stop func()) {
	ch := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20) // call arguments can be long
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return ch, func() { once.Do(func() { close(done) }) }
}

// host is the state of one run: the manager, the config it last applied,
// and the output that commands and the timeline share.
type host struct {
	m    *client.Manager
	path string
	// load reads the config file at path.
	load func() (*client.Config, error)

	// cfg is the config last loaded. Only the command loop touches it.
	cfg *client.Config

	// mu guards out, so that a command's answer and a timeline line never
	// interleave: each is written whole under it.
	mu  sync.Mutex
	out io.Writer

	// auths cancels the loopback authorizations under way, by server; only
	// the command loop touches it. authWG counts their goroutines.
	auths  map[string]context.CancelFunc
	authWG sync.WaitGroup
}

// write writes s to the output in one piece.
func (h *host) write(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	io.WriteString(h.out, s)
}

func (h *host) printf(format string, args ...any) { h.write(fmt.Sprintf(format, args...)) }

// command runs one line of input and reports whether to keep going.
func (h *host) command(ctx context.Context, line string) bool {
	line = strings.TrimSpace(line)
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	var b strings.Builder
	switch verb {
	case "":
		return true
	case "quit", "exit":
		return false
	case "help":
		b.WriteString(helpText)
	case "status":
		h.status(&b)
	case "tools":
		h.tools(&b, rest)
	case "call":
		h.call(ctx, &b, rest)
	case "enable", "disable", "reconnect":
		h.toggle(ctx, &b, verb, rest)
	case "stderr":
		h.stderr(&b, rest)
	case "allow", "deny":
		h.filter(&b, verb, rest)
	case "stats":
		h.stats(&b)
	case "auth":
		h.auth(ctx, &b, rest)
	case "reload":
		h.reload(ctx, &b)
	default:
		fmt.Fprintf(&b, "unknown command %q; type help\n", verb)
	}
	h.write(b.String())
	return true
}

const helpText = `commands:
  status                  every server: state, generation, tools, retries, idle, last error
  tools [server]          qualified tool names with their descriptions
  call <tool> [json]      call a tool, e.g. call files__read {"path": "/tmp/a"}
  enable <server>         switch a server on
  disable <server>        switch a server off
  reconnect <server>      replace a server's runtime, with a fresh reconnect budget
  stderr <server>         the last lines a stdio server wrote to stderr
  allow <server> [tool…]  publish only these tools of the server (names or globs like
                          read_*); none clears the allow list
  deny <server> [tool…]   hide these tools of the server (deny wins over allow); none
                          clears the deny list. Neither reconnects the server; reload
                          puts back the config file's filter if it differs
  stats                   requests by outcome, dials, reconnects, retries, recovery times
  auth <server> [redirect]  authorize an OAuth server: open the URL it prints; the
                          redirect comes back to 127.0.0.1, or paste it (or the code)
  reload                  re-read the config file and apply what changed
  quit                    close every server and exit
`
