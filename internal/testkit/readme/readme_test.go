// Package readme checks that every Go block of the repository's README
// compiles: a block that is a whole program (package main) as it is, any
// other as the body of a function given a context (ctx) and a Manager (m),
// with the imports a README snippet uses.
package readme

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/npmtest"
)

// goBlock matches a fenced Go block of Markdown.
var goBlock = regexp.MustCompile("(?s)\n```go\n(.*?)\n```")

// fragment wraps a block that is not a program. Every import is used once
// below, so that a block need not use them all.
const fragment = `package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/client"
	"github.com/mcpfleet/mcpfleet/fleet"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/llm"
	"github.com/mcpfleet/mcpfleet/store"
	"github.com/mcpfleet/mcpfleet/toolsearch"
	mcphttp "github.com/mcpfleet/mcpfleet/transport/http"
	"github.com/mcpfleet/mcpfleet/transport/http/oauth"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

var (
	_ = errors.Is
	_ = fmt.Sprint
	_ = log.Print
	_ = slog.Default
	_ = time.Second
	_ = mcp.NewTool
	_ = lifecycle.Connected
	_ = fleet.New
	_ = llm.Explain
	_ = store.NewMemory
	_ toolsearch.Query
	_ mcphttp.Spec
	_ oauth.Config
	_ stdio.Spec
)

func main() {}

func snippet(ctx context.Context, m *client.Manager) error {
%s
	return nil
}
`

func TestREADMECompiles(t *testing.T) {
	root := npmtest.Root()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// Inside the module, under testdata (which ./... leaves out), so that
	// the blocks build against this checkout with no download.
	if err := os.MkdirAll(filepath.Join(here, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, b := range blocks {
		src := string(b[1])
		if !strings.HasPrefix(src, "package main") {
			src = strings.Replace(fragment, "%s", src, 1)
		}
		line := 1 + bytes.Count(readme[:bytes.Index(readme, b[0])], []byte("\n")) + 1
		dir, err := os.MkdirTemp(filepath.Join(here, "testdata"), "block-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("go", "vet", "-unreachable=false", "./"+filepath.Join("testdata", filepath.Base(dir))).CombinedOutput()
		if err != nil {
			t.Errorf("README.md:%d: block %d does not compile:\n%s\n--- the block as built:\n%s", line, i+1, out, src)
		}
	}
}
