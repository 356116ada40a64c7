package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpfleet/mcpfleet/internal/configfile"
)

// installClient is an MCP client whose config install writes mcpfleet's
// entry into.
type installClient struct {
	name string // as people say it
	// file returns the client's config file of the user's own.
	file func() (string, error)
	// key is the object of its servers: "mcpServers", or VS Code's
	// "servers", whose entries say their "type".
	key string
}

var installClients = map[string]installClient{
	"claude": {"Claude Desktop", func() (string, error) {
		dir, err := os.UserConfigDir() // ~/Library/Application Support, %AppData%, ~/.config
		return filepath.Join(dir, "Claude", "claude_desktop_config.json"), err
	}, "mcpServers"},
	"cursor": {"Cursor", func() (string, error) {
		home, err := os.UserHomeDir()
		return filepath.Join(home, ".cursor", "mcp.json"), err
	}, "mcpServers"},
	"vscode": {"VS Code", func() (string, error) {
		dir, err := os.UserConfigDir()
		return filepath.Join(dir, "Code", "User", "mcp.json"), err
	}, "servers"},
}

func cmdInstall(_ context.Context, args []string, e *env) error {
	var c commonFlags
	fs := newFlags("install", e, &c, flagConfig)
	var print, force bool
	var file, name, command string
	fs.BoolVar(&print, "print", false, "print the entry instead of writing it")
	fs.StringVar(&file, "file", "", "the client's config `file` (default: the user's own of that client)")
	fs.StringVar(&name, "name", "mcpfleet", "the `name` of the entry")
	fs.BoolVar(&force, "force", false, "replace an entry of that name")
	fs.StringVar(&command, "command", "", "the mcpfleet `executable` the client runs (default: this one)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || installClients[pos[0]].name == "" {
		return usagef("install takes the client: claude, cursor or vscode")
	}
	ic := installClients[pos[0]]
	config, err := configPath(c.config)
	if err != nil {
		return err
	}
	if config, err = filepath.Abs(config); err != nil {
		return err
	}
	if command == "" {
		if command, err = os.Executable(); err != nil {
			return fmt.Errorf("this executable's path: %w (give --command PATH)", err)
		}
		if resolved, err := filepath.EvalSymlinks(command); err == nil {
			command = resolved
		}
		if tmp, err := filepath.EvalSymlinks(os.TempDir()); err == nil && strings.HasPrefix(command, tmp+string(filepath.Separator)) {
			return fmt.Errorf("this mcpfleet is under the temporary directory (%s: go run's build is gone once it exits, "+
				"and the system may clean the directory): install it (go install ./cmd/mcpfleet) and run that, or give --command PATH", command)
		}
	}
	en := map[string]any{"command": command, "args": []string{"serve", "--config", config}}
	if ic.key == "servers" {
		en = map[string]any{"type": "stdio", "command": command, "args": []string{"serve", "--config", config}}
	}
	if print {
		b, err := json.MarshalIndent(map[string]any{ic.key: map[string]any{name: en}}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(e.stdout, string(b))
		return err
	}
	if file == "" {
		if file, err = ic.file(); err != nil {
			return fmt.Errorf("%s's config file: %w (give --file FILE)", ic.name, err)
		}
	}
	if file, err = filepath.Abs(file); err != nil {
		return err
	}
	if a, err := os.Stat(file); err == nil {
		if b, err := os.Stat(config); err == nil && os.SameFile(a, b) {
			return fmt.Errorf("%s is the config mcpfleet serves: an entry of mcpfleet in it would start mcpfleet within itself; "+
				"keep the servers in a config of their own (mcpfleet add writes to %s) and install that", file, userConfigShown())
		}
	}
	was, err := os.ReadFile(file)
	if err != nil && !isNotExist(err) {
		return err
	}
	if isNotExist(err) {
		was = nil
	}
	doc, err := configfile.ParseDoc(was)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if doc.ServersKey() != ic.key && len(doc.Servers()) == 0 && was == nil {
		doc, _ = configfile.ParseDoc([]byte("{\n  \"" + ic.key + "\": {}\n}\n"))
	}
	if _, exists := doc.Server(name); exists {
		if !force {
			return fmt.Errorf("%s already has an entry %q: --force replaces it, --name chooses another", file, name)
		}
		err = doc.ReplaceServer(name, en)
	} else {
		err = doc.AddServer(name, en)
	}
	if err != nil {
		return err
	}
	if err := configfile.WriteFile(file, was, doc.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote the entry %q to %s: %s starts %s serve --config %s (restart %s to see its tools)\n",
		name, file, ic.name, command, config, ic.name)
	return nil
}
