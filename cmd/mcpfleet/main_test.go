package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// envRunCLI makes the test binary run as mcpfleet: tests and real MCP
// clients start it as `mcpfleet serve`.
const envRunCLI = "MCPFLEET_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	faultserver.Main() // the test binary is the stdio test servers too
	if os.Getenv(envRunCLI) != "" {
		os.Exit(mainCode())
	}
	goleak.VerifyTestMain(m)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// cli is what a test needs to run mcpfleet: a state directory of its own
// (MCPFLEET_STATE_DIR) and a config file in a directory of its own.
type cli struct {
	t        testing.TB
	stateDir string
	config   string
}

func newCLI(t testing.TB) *cli {
	dir := t.TempDir()
	return &cli{t: t, stateDir: filepath.Join(dir, "state"), config: filepath.Join(dir, "mcp.json")}
}

// writeConfig writes the config file (through a rename, as editors do).
func (c *cli) writeConfig(servers map[string]any) {
	c.t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeConfigBytes(b)
}

func (c *cli) writeConfigBytes(b []byte) {
	c.t.Helper()
	if err := os.WriteFile(c.config+".tmp", b, 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(c.config+".tmp", c.config); err != nil {
		c.t.Fatal(err)
	}
}

// run runs mcpfleet in this process with args (--config added) and returns
// its exit code, stdout and stderr. Tests that use it do not run in
// parallel: it sets MCPFLEET_STATE_DIR.
func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	c.t.Setenv(envStateDir, c.stateDir)
	var out, errOut bytes.Buffer
	code := run(testCtx(c.t), c.withConfig(args), newEnv(strings.NewReader(""), &out, &errOut, false))
	return code, out.String(), errOut.String()
}

// withConfig returns args with --config added after the command's name,
// before its arguments (which may end with a server's command line).
func (c *cli) withConfig(args []string) []string {
	if len(args) == 0 {
		return []string{"--config", c.config}
	}
	return append([]string{args[0], "--config", c.config}, args[1:]...)
}

// command returns the test binary as mcpfleet with args (--config added),
// in the test's state directory.
func (c *cli) command(args ...string) *exec.Cmd {
	return c.commandContext(context.Background(), args...)
}

// commandContext is command, killed when ctx ends.
func (c *cli) commandContext(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], c.withConfig(args)...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1", envStateDir+"="+c.stateDir, "GORACE="+faultserver.NoRaceExitDelay())
	return cmd
}

// env returns what a process needs to run as mcpfleet in this test, for a
// client that starts it: the variables and the command line.
func (c *cli) env() []string {
	return []string{envRunCLI + "=1", envStateDir + "=" + c.stateDir, "GORACE=" + faultserver.NoRaceExitDelay()}
}

// serveProc is a `mcpfleet serve --http` in a process of its own.
type serveProc struct {
	cmd *exec.Cmd
	url string
	// token is the bearer token the serve printed for its clients (the one
	// it made), if it printed one.
	token string
	done  chan struct{}

	mu      sync.Mutex // guards logs and waiters
	logs    bytes.Buffer
	waiters []chan struct{}
}

// Logs returns what the serve wrote to stderr so far.
func (s *serveProc) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// waitLogs waits until the serve's stderr holds want.
func (s *serveProc) waitLogs(t testing.TB, want string) {
	t.Helper()
	ctx := testCtx(t)
	for !strings.Contains(s.Logs(), want) {
		select {
		case <-s.done:
			t.Fatalf("serve exited before logging %q:\n%s", want, s.Logs())
		case <-ctx.Done():
			t.Fatalf("serve never logged %q:\n%s", want, s.Logs())
		case <-s.changed():
		}
	}
}

// changed returns a channel closed at the next line of stderr.
func (s *serveProc) changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	return ch
}

// tokenLine starts the line of serve's stderr that shows the token
// clients must send.
const tokenLine = "  Authorization: Bearer "

// authHeader is the Authorization header of a client of s.
func (s *serveProc) authHeader() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "Bearer " + s.token
}

// startServe runs `mcpfleet serve --http 127.0.0.1:0 args...` and waits
// until it answers; it is stopped (SIGINT, as a user's ^C) when the test
// ends. Its clients need the token it made (serveProc.token), unless args
// say otherwise.
func (c *cli) startServe(args ...string) *serveProc {
	c.t.Helper()
	cmd := c.command(append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	s := &serveProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			for _, w := range s.waiters {
				close(w)
			}
			s.waiters = nil
			s.mu.Unlock()
			if tok, ok := strings.CutPrefix(line, tokenLine); ok {
				s.mu.Lock()
				s.token = tok
				s.mu.Unlock()
			}
			if u, ok := strings.CutPrefix(line, readyLine); ok {
				ready <- u
			}
		}
		_ = cmd.Wait()
	}()
	c.t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
			c.t.Errorf("serve did not stop on SIGINT:\n%s", s.Logs())
		}
	})
	select {
	case s.url = <-ready:
	case <-s.done:
		c.t.Fatalf("serve exited:\n%s", s.Logs())
	case <-testCtx(c.t).Done():
		c.t.Fatalf("serve never got ready:\n%s", s.Logs())
	}
	return s
}
