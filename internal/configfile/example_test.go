package configfile_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpfleet/mcpfleet/internal/configfile"
)

// Load reads a config file the way a serve does: refusing one another
// user could have written before anything of it runs.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "configfile")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"files": {"command": "mcp-server-filesystem", "args": ["/tmp"]}}}`), 0o600); err != nil {
		panic(err)
	}
	cfg, err := configfile.Load(path)
	if err != nil {
		panic(err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		fmt.Println(name, cfg.Servers[name].Stdio.Command)
	}
	// Output: files mcp-server-filesystem
}
