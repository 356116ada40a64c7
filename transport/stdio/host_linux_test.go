//go:build linux

package stdio

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcpfleet/internal/testkit/faultserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
)

// A host that is killed with SIGKILL takes its children with it. The host
// is this test binary re-executed (see hostMain), so that it can be killed
// without taking the test along.

const (
	// envHost makes the test binary a host that dials the server it names
	// (one of hostServers), prints "ready" once the server answered, and
	// waits for its stdin to close.
	envHost = "MCPFLEET_STDIO_TEST_HOST"
	// envHostGuard set to "off" starts the child without a guard, to show
	// that the parent-death signal works alone.
	envHostGuard = "MCPFLEET_STDIO_TEST_HOST_GUARD"
)

// hostServers are the servers a test host can run.
var hostServers = map[string]func() Spec{
	// A server that ignores stdin EOF and SIGTERM.
	"stubborn": func() Spec { return faultSpec(faultserver.ModeIgnoreSIGTERM) },
	// A server (which exits on stdin EOF) started by a wrapper that first
	// starts a helper in the background: the helper is the server's child
	// after the exec, holds none of its pipes, and so can die only by a
	// signal to the group.
	"helper": func() Spec {
		s := faultSpec(faultserver.ModeNormal)
		s.Args = append([]string{"-c", `sleep 1000 </dev/null >/dev/null 2>&1 & exec "$0" "$@"`, s.Command}, s.Args...)
		s.Command = "sh"
		return s
	},
}

// hostMain runs the host and exits if envHost is set. TestMain calls it
// after faultserver.Main, so that the host's children, which inherit
// envHost, are servers rather than hosts.
func hostMain() {
	server, ok := os.LookupEnv(envHost)
	if !ok {
		return
	}
	testHookNoGuard = os.Getenv(envHostGuard) == "off"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, hostServers[server](), WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
	if _, err := connect(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err, c.Err())
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = c.Close(context.Background())
	os.Exit(0)
}

// TestHostKilled: the host is killed with SIGKILL and its child's whole
// process group goes with it, by each mechanism alone where it can be
// isolated: the parent-death signal ends a direct child that ignores stdin
// EOF and SIGTERM (the guard switched off), and the guard ends a
// grandchild, which no parent-death signal reaches.
func TestHostKilled(t *testing.T) {
	for _, tt := range []struct {
		name, server, guard string
		members             int // processes in the group before the kill
	}{
		{"pdeathsig alone", "stubborn", "off", 1},
		{"guard ends grandchild", "helper", "on", 3}, // server, sleep, guard
	} {
		t.Run(tt.name, func(t *testing.T) {
			host := proctest.StartHost(t, 2*waitBound, envHost+"="+tt.server, envHostGuard+"="+tt.guard)

			pgids := proctest.ChildGroups(t, host.Process.Pid)
			before, err := proctest.Members(pgids...)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("groups %v before the kill: %v", pgids, before)
			if len(pgids) != 1 || len(before) != tt.members {
				t.Fatalf("want 1 group of %d processes, found %v: %v", tt.members, pgids, before)
			}

			killed := time.Now()
			if err := host.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = host.Wait()
			if err := proctest.WaitGroupsGone(testCtx(t, waitBound), pgids...); err != nil {
				t.Fatal(err)
			}
			t.Logf("host killed -> group gone: %v", time.Since(killed))
		})
	}
}
