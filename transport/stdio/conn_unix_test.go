//go:build unix

package stdio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/transport"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
)

// Tests that need a Unix child: sh, #! scripts, execute permissions, an
// end by signal.

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
		{"not in PATH", Spec{Command: "mcpfleet-no-such-server"}, ErrCommandNotFound, `stdio: start mcpfleet-no-such-server: command not found in $PATH`},
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
			// A mistake no retry can fix: the Manager stops retrying at once.
			if tt.is != nil && !errors.Is(err, transport.ErrMisconfigured) {
				t.Errorf("error %v does not match transport.ErrMisconfigured", err)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}
	noChildren(t)
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
