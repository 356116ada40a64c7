package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// vscodeConfig writes a VS Code mcp.json at path whose server's
// environment uses ${workspaceFolder} and ${input:token} (a password,
// with no default), and returns the fault server's entry it holds.
func vscodeConfig(t *testing.T, path string) {
	t.Helper()
	inv := faultserver.Command(faultserver.ModeNormal)
	env := map[string]string{"WS": "${workspaceFolder}", "TOKEN": "${input:token}"}
	for k, v := range inv.Env {
		env[k] = v
	}
	b, _ := json.MarshalIndent(map[string]any{
		"inputs":  []any{map[string]any{"type": "promptString", "id": "token", "description": "API token", "password": true}},
		"servers": map[string]any{"files": map[string]any{"type": "stdio", "command": inv.Path, "args": inv.Args, "env": env}},
	}, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("// VS Code's\n"), b...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// environOf returns the environment of process pid.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestVSCodeVariables: a VS Code file's ${workspaceFolder} and ${input:…}
// are answered by --workspace and --input (and, on a terminal, by asking;
// a .vscode/mcp.json's workspace is the folder above); without them the
// error names those flags, not Go options. Every child's environment names
// the fleet above it.
func TestVSCodeVariables(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads a child's environment from /proc")
	}
	c := newCLI(t)
	work := t.TempDir()
	c.config = filepath.Join(work, "vs.json")
	vscodeConfig(t, c.config)

	code, _, errOut := c.run("status")
	if code != exitError || !strings.Contains(errOut, "uses ${workspaceFolder}: give --workspace DIR") || strings.Contains(errOut, "client.With") {
		t.Fatalf("no --workspace: %d %q", code, errOut)
	}
	code, _, errOut = c.run("status", "--workspace", work)
	if code != exitError || !strings.Contains(errOut, "give --input token=VALUE") || strings.Contains(errOut, "client.With") {
		t.Fatalf("no --input: %d %q", code, errOut)
	}
	if code, _, errOut = c.run("status", "--input", "token"); code != exitUsage || !strings.Contains(errOut, "--input wants ID=VALUE") {
		t.Fatalf("a bad --input: %d %q", code, errOut)
	}

	// The values reach the server: it reports its own environment through
	// a serve, which keeps it running while the test reads /proc.
	c.startServe("--workspace", work, "--input", "token=s3cret")
	got := environOf(t, serverPID(t, c, "files__pid"))
	abs, _ := filepath.Abs(c.config)
	if got["WS"] != work || got["TOKEN"] != "s3cret" || got[envServeChain] != abs {
		t.Fatalf("the server's WS=%q TOKEN=%q %s=%q", got["WS"], got["TOKEN"], envServeChain, got[envServeChain])
	}
}

// serverPID returns the pid of the stdio server whose tool pid is tool,
// through the running serve, which keeps it running.
func serverPID(t *testing.T, c *cli, tool string) int {
	t.Helper()
	code, out, errOut := c.run("call", tool, "{}")
	if code != exitOK {
		t.Fatalf("call %s through the serve: %d %q %q", tool, code, out, errOut)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid %q", out)
	}
	return pid
}

// TestVSCodeInputAsked: serve --http on a terminal asks for an input the
// flags do not answer (saying what for), and a .vscode/mcp.json's
// ${workspaceFolder} is the folder above .vscode.
func TestVSCodeInputAsked(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads a child's environment from /proc")
	}
	c := newCLI(t)
	work := t.TempDir()
	c.config = filepath.Join(work, ".vscode", "mcp.json")
	vscodeConfig(t, c.config)
	t.Setenv(envStateDir, c.stateDir)

	var stderr syncBuffer
	e := newEnv(strings.NewReader("typed-s3cret\n"), io.Discard, &stderr, false)
	e.stdinTTY = true
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--http", "127.0.0.1:0", "--no-auth", "--config", c.config}, e)
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve: %d\n%s", code, stderr.String())
		}
	}()
	for !strings.Contains(stderr.String(), readyLine) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, stderr.String())
		case <-stderr.changed():
		}
	}
	if !strings.Contains(stderr.String(), "API token (token): ") {
		t.Fatalf("serve did not ask:\n%s", stderr.String())
	}
	got := environOf(t, serverPID(t, c, "files__pid"))
	if got["WS"] != work || got["TOKEN"] != "typed-s3cret" {
		t.Fatalf("the server's WS=%q TOKEN=%q", got["WS"], got["TOKEN"])
	}
}

// syncBuffer is a buffer written by one goroutine and read by another,
// which can wait for the next write.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	waiters []chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters {
		close(w)
	}
	s.waiters = nil
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// changed returns a channel closed at the next write.
func (s *syncBuffer) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	return ch
}

// TestUnknownKeysTolerated: a Claude Desktop file with its globalShortcut,
// and Cline's autoApprove and alwaysAllow in an entry, is used, with one
// warning line naming what is passed over; a typo of a known key is still
// refused, with the key it resembles.
func TestUnknownKeysTolerated(t *testing.T) {
	c := newCLI(t)
	entry := faultEntry(faultserver.ModeNormal, nil)
	entry["autoApprove"] = []string{"echo"}
	entry["alwaysAllow"] = []string{}
	b, _ := json.MarshalIndent(map[string]any{"globalShortcut": "Ctrl+Space", "mcpServers": map[string]any{"files": entry}}, "", "  ")
	c.writeConfigBytes(b)
	code, out, errOut := c.run("tools", "--wait", "2m")
	if code != exitOK || !strings.Contains(out, "files__echo") {
		t.Fatalf("tools: %d\n%s%s", code, out, errOut)
	}
	var warnings []string
	for l := range strings.SplitSeq(errOut, "\n") {
		if strings.Contains(l, "passing over keys") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `globalShortcut, alwaysAllow (server "files"), autoApprove (server "files")`) {
		t.Fatalf("want one warning naming the keys: %q", errOut)
	}
	delete(entry, "command")
	entry["comand"] = os.Args[0]
	b, _ = json.Marshal(map[string]any{"mcpServers": map[string]any{"files": entry}})
	c.writeConfigBytes(b)
	if code, _, errOut := c.run("status"); code != exitError || !strings.Contains(errOut, `unknown key (did you mean "command"?)`) {
		t.Fatalf("a typo: %d %q", code, errOut)
	}
}
