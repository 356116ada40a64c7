// Command capture records the tools/list of the real MCP servers pinned in
// testdata/toolcorpus/npm into testdata/toolcorpus/corpus.json, the corpus
// the tool-search tests and benchmarks read. Run it once after changing the
// pinned packages, from the repository root:
//
//	npm ci --prefix testdata/toolcorpus/npm --ignore-scripts
//	go run ./internal/testkit/toolcorpus/capture
//
// Each server starts over stdio with dummy credentials in a throwaway HOME
// (none of them needs its service to list its tools), answers initialize
// and every page of tools/list, and is killed. The tools are kept as the
// server sent them; the servers are sorted by name, so a capture of the
// same packages writes the same file. A server that fails is reported and
// the capture fails: the corpus is all of them or nothing.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// server is one pinned package and how to start it.
type server struct {
	name, pkg, bin string
	args           []string
	env            []string
}

var servers = []server{
	{name: "chart", pkg: "@antv/mcp-server-chart", bin: "build/index.js"},
	{name: "circleci", pkg: "@circleci/mcp-server-circleci", bin: "dist/index.js", env: []string{"CIRCLECI_TOKEN=dummy"}},
	{name: "git", pkg: "@cyanheads/git-mcp-server", bin: "dist/index.js", env: []string{"MCP_TRANSPORT_TYPE=stdio", "MCP_LOG_LEVEL=error"}},
	{name: "playwright-ea", pkg: "@executeautomation/playwright-mcp-server", bin: "dist/index.js"},
	{name: "youtube", pkg: "@kimtaeyoon83/mcp-server-youtube-transcript", bin: "dist/index.js"},
	{name: "aws-kb", pkg: "@modelcontextprotocol/server-aws-kb-retrieval", bin: "dist/index.js",
		env: []string{"AWS_ACCESS_KEY_ID=dummy", "AWS_SECRET_ACCESS_KEY=dummy", "AWS_REGION=us-east-1"}},
	{name: "brave", pkg: "@modelcontextprotocol/server-brave-search", bin: "dist/index.js", env: []string{"BRAVE_API_KEY=dummy"}},
	{name: "everart", pkg: "@modelcontextprotocol/server-everart", bin: "dist/index.js", env: []string{"EVERART_API_KEY=dummy"}},
	{name: "everything", pkg: "@modelcontextprotocol/server-everything", bin: "dist/index.js", args: []string{"stdio"}},
	{name: "filesystem", pkg: "@modelcontextprotocol/server-filesystem", bin: "dist/index.js", args: []string{"{home}"}},
	{name: "github", pkg: "@modelcontextprotocol/server-github", bin: "dist/index.js", env: []string{"GITHUB_PERSONAL_ACCESS_TOKEN=dummy"}},
	{name: "gitlab", pkg: "@modelcontextprotocol/server-gitlab", bin: "dist/index.js", env: []string{"GITLAB_PERSONAL_ACCESS_TOKEN=dummy"}},
	{name: "maps", pkg: "@modelcontextprotocol/server-google-maps", bin: "dist/index.js", env: []string{"GOOGLE_MAPS_API_KEY=dummy"}},
	{name: "memory", pkg: "@modelcontextprotocol/server-memory", bin: "dist/index.js", env: []string{"MEMORY_FILE_PATH={home}/memory.json"}},
	{name: "postgres", pkg: "@modelcontextprotocol/server-postgres", bin: "dist/index.js", args: []string{"postgresql://127.0.0.1:1/corpus"}},
	{name: "thinking", pkg: "@modelcontextprotocol/server-sequential-thinking", bin: "dist/index.js"},
	{name: "slack", pkg: "@modelcontextprotocol/server-slack", bin: "dist/index.js", env: []string{"SLACK_BOT_TOKEN=dummy", "SLACK_TEAM_ID=dummy"}},
	{name: "notion", pkg: "@notionhq/notion-mcp-server", bin: "bin/cli.mjs", env: []string{"NOTION_TOKEN=dummy"}},
	{name: "playwright", pkg: "@playwright/mcp", bin: "cli.js"},
	{name: "context7", pkg: "@upstash/context7-mcp", bin: "dist/index.js"},
	{name: "desktop", pkg: "@wonderwhy-er/desktop-commander", bin: "dist/index.js"},
	{name: "devtools", pkg: "chrome-devtools-mcp", bin: "build/src/bin/chrome-devtools-mcp.js"},
	{name: "exa", pkg: "exa-mcp-server", bin: "dist/stdio.cjs", env: []string{"EXA_API_KEY=dummy"}},
	{name: "firecrawl", pkg: "firecrawl-mcp", bin: "dist/index.js", env: []string{"FIRECRAWL_API_KEY=fc-dummy"}},
	{name: "kubernetes", pkg: "mcp-server-kubernetes", bin: "dist/index.js"},
	{name: "mongodb", pkg: "mongodb-mcp-server", bin: "dist/esm/index.js", env: []string{"MDB_MCP_TELEMETRY=disabled"}},
	{name: "tavily", pkg: "tavily-mcp", bin: "build/index.js", env: []string{"TAVILY_API_KEY=dummy"}},
}

// Corpus is the file's shape; internal/testkit/toolcorpus reads it.
type Corpus struct {
	Comment string   `json:"comment"`
	Servers []Server `json:"servers"`
}

// Server is one server's capture.
type Server struct {
	Name    string            `json:"name"`
	Package string            `json:"package"`
	Version string            `json:"version"`
	Tools   []json.RawMessage `json:"tools"`
}

func main() {
	npm := flag.String("npm", "testdata/toolcorpus/npm", "the npm project holding the servers")
	out := flag.String("out", "testdata/toolcorpus/corpus.json", "where to write the corpus")
	only := flag.String("only", "", "capture only this server and print its tools (for trying a new one)")
	flag.Parse()
	corpus := Corpus{Comment: "tools/list of real MCP servers, captured by go run ./internal/testkit/toolcorpus/capture; do not edit"}
	var failed []string
	for _, s := range servers {
		if *only != "" && s.name != *only {
			continue
		}
		got, err := capture(*npm, s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s (%s): %v\n", s.name, s.pkg, err)
			failed = append(failed, s.name)
			continue
		}
		fmt.Fprintf(os.Stderr, "%s %s@%s: %d tools\n", s.name, s.pkg, got.Version, len(got.Tools))
		corpus.Servers = append(corpus.Servers, got)
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "capture failed for %s\n", strings.Join(failed, ", "))
		os.Exit(1)
	}
	if *only != "" {
		return
	}
	slices.SortFunc(corpus.Servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	b, err := json.MarshalIndent(corpus, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func capture(npm string, s server) (Server, error) {
	dir, err := filepath.Abs(filepath.Join(npm, "node_modules", s.pkg))
	if err != nil {
		return Server{}, err
	}
	var pj struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return Server{}, fmt.Errorf("not installed (npm ci --prefix %s --ignore-scripts): %w", npm, err)
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		return Server{}, err
	}
	home, err := os.MkdirTemp("", "toolcorpus-")
	if err != nil {
		return Server{}, err
	}
	defer os.RemoveAll(home)
	subst := func(v string) string { return strings.ReplaceAll(v, "{home}", home) }
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{filepath.Join(dir, s.bin)}
	for _, a := range s.args {
		args = append(args, subst(a))
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1", "DO_NOT_TRACK=1")
	for _, e := range s.env {
		cmd.Env = append(cmd.Env, subst(e))
	}
	cmd.Dir = home
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Server{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Server{}, err
	}
	if err := cmd.Start(); err != nil {
		return Server{}, err
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	rpc := &conn{w: stdin, r: bufio.NewReaderSize(stdout, 1<<20)}
	fail := func(err error) (Server, error) {
		return Server{}, fmt.Errorf("%w; stderr: %s", err, tail(stderr.String()))
	}
	if _, err := rpc.call(1, "initialize", map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "mcpfleet-toolcorpus", "version": "1"},
	}); err != nil {
		return fail(err)
	}
	if err := rpc.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return fail(err)
	}
	out := Server{Name: s.name, Package: s.pkg, Version: pj.Version}
	cursor := ""
	for id := 2; id < 100; id++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := rpc.call(id, "tools/list", params)
		if err != nil {
			return fail(err)
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return fail(err)
		}
		out.Tools = append(out.Tools, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(out.Tools) == 0 {
		return fail(errors.New("no tools"))
	}
	return out, nil
}

// conn is newline-delimited JSON-RPC over a child's pipes.
type conn struct {
	w io.Writer
	r *bufio.Reader
}

func (c *conn) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// call sends a request and reads lines until its response, skipping the
// server's notifications and answering its requests with an error.
func (c *conn) call(id int, method string, params any) (json.RawMessage, error) {
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &msg) != nil {
			continue // a log line on stdout
		}
		if msg.Method != "" {
			if len(msg.ID) > 0 {
				_ = c.send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32601, "message": "not supported"}})
			}
			continue
		}
		if string(msg.ID) != fmt.Sprint(id) {
			continue
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result, nil
	}
}

func tail(s string) string {
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return strings.TrimSpace(s)
}
