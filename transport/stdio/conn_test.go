package stdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpfleet/mcpfleet/internal/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/proctest"
)

// TestConnectListCall is the Manager's path: Dial, start an mcp-go client
// on Transport, handshake, list, call.
func TestConnectListCall(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), fastClose...)
	cl := mustConnect(t, c)
	ctx := testCtx(t, waitBound)

	tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Name == "echo" && (tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint) {
			t.Errorf("echo should be read-only: %+v", tool.Annotations)
		}
		if tool.Name == "add" && (tool.Annotations.ReadOnlyHint != nil || tool.Annotations.IdempotentHint != nil) {
			t.Errorf("add should carry no hints: %+v", tool.Annotations)
		}
	}
	for _, want := range []string{"echo", "add", "sleep", "pid"} {
		if !names[want] {
			t.Errorf("ListTools lacks %q: %v", want, names)
		}
	}
	if out, err := callTool(ctx, cl, "echo", map[string]any{"text": "hi"}); err != nil || out != "hi" {
		t.Errorf("echo = %q, %v", out, err)
	}
	if out, err := callTool(ctx, cl, "add", map[string]any{"a": 2, "b": 3}); err != nil || out != "5" {
		t.Errorf("add = %q, %v", out, err)
	}
	if out, err := callTool(ctx, cl, "pid", nil); err != nil || out != strconv.Itoa(c.PID()) {
		t.Errorf("pid = %q, %v; want %d", out, err, c.PID())
	}
	if p, err := proctest.Stat(c.PID()); err != nil || p.PGID != c.PID() {
		t.Errorf("child should lead its own process group: %+v, %v", p, err)
	}
	if c.Err() != nil {
		t.Errorf("Err() = %v while running", c.Err())
	}
}

// TestKilledFromOutside: SIGKILL from someone else closes Done at once, and
// a call in flight fails promptly with ErrTransportClosed instead of
// hanging; the process is already reaped, before anyone calls Close.
func TestKilledFromOutside(t *testing.T) {
	lines := make(lineHandler, 64)
	c := dial(t, faultSpec(faultserver.ModeNormal), append(fastClose, WithStderrLogger(slog.New(lines), slog.LevelInfo))...)
	cl := mustConnect(t, c)

	callErr := make(chan error, 1)
	go func() {
		_, err := callTool(testCtx(t, 10*waitBound), cl, "sleep", map[string]any{"ms": 60_000})
		callErr <- err
	}()
	waitLine(t, lines, faultserver.SleepLine) // the call is on the server now

	killed := time.Now()
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, c)
	t.Logf("death -> Done: %v", time.Since(killed))
	select {
	case err := <-callErr:
		t.Logf("death -> pending call returned: %v (%v)", time.Since(killed), err)
		if !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("pending call: %v, want ErrTransportClosed", err)
		}
	case <-time.After(waitBound):
		t.Fatal("pending call still blocked after the child died")
	}
	err := c.Err()
	if !strings.HasPrefix(err.Error(), "stdio: process killed by signal SIGKILL") {
		t.Errorf("Err() = %q", err)
	}
	if !errors.Is(err, ErrExited) || errors.Is(err, ErrClosed) {
		t.Errorf("Err() = %v: want ErrExited and not ErrClosed", err)
	}
	// Reaped by the exit watcher, not waiting for Close.
	if err := proctest.WaitNoChildren(testCtx(t, waitBound)); err != nil {
		t.Error(err)
	}
	if _, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "x"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("call after death: %v, want ErrTransportClosed", err)
	}
}

// TestLeaderDiesGrandchildHoldsPipes: the server dies while a grandchild it
// started still holds stdout and stderr. Done must close anyway, the
// pending call must fail, and the grandchild must die with its group even
// before Close.
func TestLeaderDiesGrandchildHoldsPipes(t *testing.T) {
	lines := make(lineHandler, 64)
	c := dial(t, faultSpec(faultserver.ModeGrandchild), append(fastClose, WithStderrLogger(slog.New(lines), slog.LevelInfo))...)
	cl := mustConnect(t, c)
	out, err := callTool(testCtx(t, waitBound), cl, "grandchild", nil)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, _ := strconv.Atoi(out)
	if p, err := proctest.Stat(grandchild); err != nil || p.PGID != c.PID() {
		t.Fatalf("grandchild %d should be in the server's group %d: %+v, %v", grandchild, c.PID(), p, err)
	}

	callErr := make(chan error, 1)
	go func() {
		_, err := callTool(testCtx(t, 10*waitBound), cl, "sleep", map[string]any{"ms": 60_000})
		callErr <- err
	}()
	waitLine(t, lines, faultserver.SleepLine)

	killed := time.Now()
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDone(t, c)
	t.Logf("death -> Done: %v", time.Since(killed))
	select {
	case err := <-callErr:
		if !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("pending call: %v, want ErrTransportClosed", err)
		}
	case <-time.After(waitBound):
		t.Fatal("pending call still blocked after the child died")
	}
	proctest.WaitDead(t, grandchild)
}

// TestCloseConcurrent: Close from many goroutines at once, then again;
// every call returns the same (nil) result and the process is reaped.
func TestCloseConcurrent(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), fastClose...)
	mustConnect(t, c)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Close(testCtx(t, waitBound)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Close #%d: %v", i, err)
		}
	}
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Errorf("Close again: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", c.Err())
	}
}

// TestCloseBoundedByContext: with the default (long) grace and a child that
// ignores stdin EOF and SIGTERM, Close still returns when its ctx ends,
// having sent SIGKILL; the reap follows in the background.
func TestCloseBoundedByContext(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeIgnoreSIGTERM))
	mustConnect(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Close(ctx)
	took := time.Since(start)
	t.Logf("Close returned after %v: %v", took, err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v, want DeadlineExceeded", err)
	}
	if took > time.Second {
		t.Errorf("Close took %v with a 100ms ctx", took)
	}
	waitDone(t, c)
	if got := how(c.Err()); got != "SIGKILL" {
		t.Errorf("ended by %s, want SIGKILL", got)
	}
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Errorf("Close after the forced one: %v", err)
	}
}

// TestCloseBeforeStart: a Conn whose transport was never started closes
// cleanly too (a dial abandoned before the handshake).
func TestCloseBeforeStart(t *testing.T) {
	c := dial(t, faultSpec(faultserver.ModeNormal), fastClose...)
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Fatal(err)
	}
	if got := how(c.Err()); got != "exit 0" {
		t.Errorf("ended by %s, want exit 0 (stdin EOF)", got)
	}
	// Starting afterwards fails the handshake instead of hanging.
	if _, err := connect(testCtx(t, waitBound), c); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("handshake after Close: %v, want ErrTransportClosed", err)
	}
}

// TestStderrFloodBounded: a child writing to stderr without pause neither
// blocks (calls keep working) nor makes us hold more than the ring allows.
func TestStderrFloodBounded(t *testing.T) {
	const maxLines, maxBytes = 64, 16 << 10
	c := dial(t, faultSpec(faultserver.ModeStderrFlood), append(fastClose, WithStderrBuffer(maxLines, maxBytes))...)
	cl := mustConnect(t, c)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	// Keep calling until the child has pushed 32 MiB through stderr: far
	// more than the pipe (64 KiB) holds, so the drain must keep up.
	ctx := testCtx(t, 30*time.Second)
	calls := 0
	for {
		text := fmt.Sprint(calls)
		out, err := callTool(ctx, cl, "echo", map[string]any{"text": text})
		if err != nil || out != text {
			t.Fatalf("call %d during the flood: %q, %v", calls, out, err)
		}
		calls++
		if _, total, _ := c.ring.stats(); total >= 32<<20 {
			break
		}
	}
	held, total, dropped := c.ring.stats()
	lines := c.Stderr()
	t.Logf("%d calls while %d MiB of stderr went through; holding %d lines, %d bytes; dropped %d lines", calls, total>>20, len(lines), held, dropped)
	if len(lines) > maxLines || held > maxBytes {
		t.Errorf("ring holds %d lines, %d bytes; want <= %d, %d", len(lines), held, maxLines, maxBytes)
	}
	for _, l := range lines {
		if len(l) > MaxStderrLine+len(truncatedMark) {
			t.Errorf("a line of %d bytes was kept", len(l))
		}
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("heap grew by %d MiB during a %d MiB flood", grew>>20, total>>20)
	}
}

// TestDialErrors: the mistakes people make in a config get an error that
// names the command or the directory.
func TestDialErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badInterp := filepath.Join(dir, "interp.sh")
	if err := os.WriteFile(badInterp, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec Spec
		is   error
		says string
	}{
		{"empty", Spec{}, nil, "command is empty"},
		{"not in PATH", Spec{Command: "mcpfleet-no-such-server"}, ErrCommandNotFound, `"mcpfleet-no-such-server" is not in $PATH`},
		{"no such path", Spec{Command: "/nonexistent/server"}, ErrCommandNotFound, `"/nonexistent/server" does not exist`},
		{"relative to dir", Spec{Command: "./nope", Dir: dir}, ErrCommandNotFound, filepath.Join(dir, "nope")},
		{"not executable", Spec{Command: notExec}, ErrNotExecutable, notExec + `" has no execute permission`},
		{"a directory", Spec{Command: dir}, ErrNotExecutable, "is a directory"},
		{"missing interpreter", Spec{Command: badInterp}, ErrCommandNotFound, "interpreter"},
		{"no such dir", Spec{Command: "sh", Dir: "/nonexistent/dir"}, ErrDirNotFound, `"/nonexistent/dir"`},
		{"dir is a file", Spec{Command: "sh", Dir: notExec}, ErrDirNotFound, "is not a directory"},
		{"bad env", Spec{Command: "sh", Env: map[string]string{"A=B": "x"}}, nil, "env name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(testCtx(t, waitBound), tt.spec)
			if err == nil {
				_ = c.Close(testCtx(t, waitBound))
				t.Fatal("Dial succeeded")
			}
			t.Logf("%v", err)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not match %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}
	proctest.NoChildren(t)
}

// TestDialCanceled: a Dial whose ctx is already over starts nothing.
func TestDialCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, faultSpec(faultserver.ModeNormal)); !errors.Is(err, context.Canceled) {
		t.Errorf("Dial: %v, want context.Canceled", err)
	}
	proctest.NoChildren(t)
}

// TestDialCanceledDuringSpawn: when ctx ends while the process is being
// started, Dial kills and reaps it before returning the error.
func TestDialCanceledDuringSpawn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookAfterStart = cancel
	defer func() { testHookAfterStart = nil }()
	c, err := Dial(ctx, faultSpec(faultserver.ModeIgnoreSIGTERM))
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Dial = %v, %v; want nil, context.Canceled", c, err)
	}
	// Reaped before Dial returned, even though it ignores SIGTERM.
	if kids, err := proctest.Children(); err != nil || len(kids) != 0 {
		t.Errorf("children after the cancelled Dial: %v, %v", kids, err)
	}
}

// TestOutlivesDialContext: the process must outlive the ctx given to Dial
// (mcp-go's own transport would kill it with CommandContext).
func TestOutlivesDialContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Dial(ctx, faultSpec(faultserver.ModeNormal), fastClose...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(testCtx(t, waitBound)); proctest.NoChildren(t) })
	cancel()
	cl := mustConnect(t, c)
	if out, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "still here"}); err != nil || out != "still here" {
		t.Errorf("echo after the Dial ctx ended: %q, %v", out, err)
	}
}

// TestEnvAndDir: the env is inherited with Spec.Env layered on top, or not
// inherited at all with NoInheritEnv; Dir is the working directory.
func TestEnvAndDir(t *testing.T) {
	t.Setenv("MCPFLEET_TEST_INHERITED", "from-host")
	t.Setenv("MCPFLEET_TEST_OVERRIDDEN", "from-host")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	script := `printf '%s|%s|%s\n' "${MCPFLEET_TEST_INHERITED-unset}" "$MCPFLEET_TEST_OVERRIDDEN" "$(pwd -P)" >&2`
	for _, tt := range []struct {
		name    string
		noInher bool
		want    string
	}{
		{"inherit", false, "from-host|from-spec|" + dir},
		{"no inherit", true, "unset|from-spec|" + dir},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, Spec{
				Command: "sh", Args: []string{"-c", script}, Dir: dir, NoInheritEnv: tt.noInher,
				Env: map[string]string{"MCPFLEET_TEST_OVERRIDDEN": "from-spec"},
			}, fastClose...)
			waitDone(t, c)
			if got := c.Stderr(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("child saw %q, want %q", got, tt.want)
			}
			if got := how(c.Err()); got != "exit 0" {
				t.Errorf("ended by %s", got)
			}
		})
	}
}

// TestSpecHidesEnvValues: secrets in Env never reach String or LogValue.
func TestSpecHidesEnvValues(t *testing.T) {
	s := Spec{Command: "server", Args: []string{"--stdio"}, Env: map[string]string{"API_KEY": "s3cr3t-value", "B": "other-secret"}, Dir: "/srv"}
	var b strings.Builder
	slog.New(slog.NewJSONHandler(&b, nil)).Info("dial", "spec", s)
	for _, out := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v", s), b.String()} {
		if strings.Contains(out, "s3cr3t") || strings.Contains(out, "other-secret") {
			t.Errorf("secret printed: %s", out)
		}
		if !strings.Contains(out, "API_KEY") || !strings.Contains(out, "server") {
			t.Errorf("name or command missing: %s", out)
		}
	}
	if got, want := s.String(), "server --stdio env=[API_KEY,B] dir=/srv"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := (Spec{Command: "x", Env: map[string]string{"K": "a\x00b"}}).Validate(); err == nil || strings.Contains(err.Error(), "a\x00b") {
		t.Errorf("Validate: %v", err)
	}
}
