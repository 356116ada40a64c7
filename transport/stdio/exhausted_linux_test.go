//go:build linux

package stdio

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// envOutOfFiles runs a test that lowers RLIMIT_NOFILE in a process of its
// own (proctest.Subprocess): the limit is the whole process's.
const envOutOfFiles = "MCPFLEET_STDIO_TEST_OUT_OF_FILES"

// TestDialOutOfFiles: with 0, 1, 2, ... file descriptors to spare, every
// Dial fails, at whichever step ran out (the pipes, the exec, the guard),
// with an error that wraps ErrOutOfResources and EMFILE and names the
// command and the limit, and leaves nothing behind: no descriptor, no
// child, no guard, no goroutine. With enough to spare, Dial works and the
// server answers.
func TestDialOutOfFiles(t *testing.T) {
	if !proctest.Subprocess(t, envOutOfFiles) {
		return
	}
	spec := faultSpec(faultserver.ModeNormal)
	// Once with the limit as it was: the first exec sets up for the rest of
	// the process (Go checks once whether pidfds work), and that must not
	// be what the lowered limit hits.
	c := dial(t, spec, eofClose...)
	mustConnect(t, c).Close()
	if err := c.Close(testCtx(t, waitBound)); err != nil {
		t.Fatal(err)
	}
	noChildren(t)

	var failedAt []string // the step each failure named, in order
	for free := 0; ; free++ {
		if free > 64 {
			t.Fatalf("Dial still fails with %d descriptors to spare: %v", free-1, failedAt)
		}
		before, err := proctest.OpenFiles()
		if err != nil {
			t.Fatal(err)
		}
		restore, err := proctest.LimitOpenFiles(free)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Dial(testCtx(t, waitBound), spec, eofClose...)
		var limit syscall.Rlimit
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit)
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		if err == nil {
			t.Logf("with %d descriptors to spare (limit %d), Dial works; it failed before at %v", free, limit.Cur, failedAt)
			cl := mustConnect(t, c)
			if got, err := callTool(testCtx(t, waitBound), cl, "echo", map[string]any{"text": "hi"}); err != nil || got != "hi" {
				t.Errorf("echo = %q, %v", got, err)
			}
			cl.Close()
			if err := c.Close(testCtx(t, waitBound)); err != nil {
				t.Fatal(err)
			}
			break
		}
		msg := err.Error()
		if !errors.Is(err, ErrOutOfResources) || !errors.Is(err, syscall.EMFILE) ||
			!strings.Contains(msg, "too many open files") || !strings.Contains(msg, spec.Command) ||
			!strings.Contains(msg, fmt.Sprintf("RLIMIT_NOFILE, is %d", limit.Cur)) {
			t.Fatalf("%d to spare: Dial = %v; want ErrOutOfResources and EMFILE, naming the command and the limit %d", free, err, limit.Cur)
		}
		if at := step(msg); !slices.Contains(failedAt, at) {
			t.Logf("%d to spare: %v", free, err)
			failedAt = append(failedAt, at)
		} else {
			failedAt = append(failedAt, at)
		}

		// Nothing of the failed spawn is left.
		after, err := proctest.OpenFiles()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(before, after) {
			t.Fatalf("%d to spare: open files %v before the failed Dial, %v after", free, before, after)
		}
		if kids, err := proctest.Children(); err != nil || len(kids) != 0 {
			t.Fatalf("%d to spare: children left after the failed Dial: %v %v", free, kids, err)
		}
		goleak.VerifyNone(t)
	}
	// Each step of the spawn was hit at least once.
	for _, want := range []string{"pipe", "exec", "guard"} {
		if !slices.Contains(failedAt, want) {
			t.Errorf("no Dial failed at %s: %v", want, failedAt)
		}
	}
	noChildren(t)
}

// step names the step of the spawn a Dial error says failed.
func step(msg string) string {
	switch {
	case strings.Contains(msg, "guard:"):
		return "guard"
	case strings.Contains(msg, "fork/exec"):
		return "exec"
	case strings.Contains(msg, "pipe2:"):
		return "pipe"
	}
	return msg
}

// An errno that says the host is out of processes or memory, which this
// test cannot bring about reliably (RLIMIT_NPROC does not bind root, and
// the Go runtime itself needs threads), gets the same error; one that says
// something else about the command keeps its own.
func TestSpawnErrorOutOfProcesses(t *testing.T) {
	spec := Spec{Command: "/usr/bin/server"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "fork/exec", Path: spec.Command, Err: syscall.EAGAIN}, "too many processes (the host user's RLIMIT_NPROC"},
		{&os.PathError{Op: "fork/exec", Path: spec.Command, Err: syscall.ENOMEM}, "out of memory"},
		{os.NewSyscallError("pipe2", syscall.ENFILE), "too many open files in the system"},
	} {
		err := startError(spec, spec.Command, c.err)
		if !errors.Is(err, ErrOutOfResources) || !errors.Is(err, c.err) ||
			!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), spec.Command) {
			t.Errorf("startError(%v) = %v; want ErrOutOfResources saying %q and naming %s", c.err, err, c.want, spec.Command)
		}
	}
	err := startError(spec, spec.Command, &os.PathError{Op: "fork/exec", Path: spec.Command, Err: syscall.ENOENT})
	if errors.Is(err, ErrOutOfResources) || !errors.Is(err, ErrCommandNotFound) {
		t.Errorf("startError(ENOENT) = %v; want ErrCommandNotFound only", err)
	}
}
