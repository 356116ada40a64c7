//go:build linux

package client

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
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// A host embedding the Manager is killed with SIGKILL: none of its stdio
// servers, nor anything they started, outlives it. The host is this test
// binary re-executed (hostMain), so that it can be killed without taking
// the test along.

// envHost makes the test binary a host: it runs a Manager with the
// servers of hostSpecs (and the state file the variable names, if not
// empty), prints "ready" once all are Connected, and waits for its stdin
// to close.
const envHost = "MCPFLEET_CLIENT_TEST_HOST"

// hostSpecs are the test host's servers: the shapes hosts' configuration
// files are full of.
func hostSpecs() map[string]ServerSpec {
	wrap := func(script string) ServerSpec {
		s := faultSpec(faultserver.ModeNormal)
		s.Stdio.Args = append([]string{"-c", script, s.Stdio.Command}, s.Stdio.Args...)
		s.Stdio.Command = "sh"
		return s
	}
	return map[string]ServerSpec{
		// Exits on stdin EOF, as well-behaved servers do.
		"eof": faultSpec(faultserver.ModeNormal),
		// A wrapper that outlives its server (npx, uvx and scripts).
		"wrapper": wrap(`"$0" "$@"; sleep 1000`),
		// A wrapper that starts a helper first: a grandchild already
		// running, which holds none of the server's pipes.
		"helper": wrap(`sleep 1000 </dev/null >/dev/null 2>&1 & exec "$0" "$@"`),
	}
}

// hostMain runs the host and exits if envHost is set. TestMain calls it
// after faultserver.Main, so that the host's children, which inherit
// envHost, are servers rather than hosts.
func hostMain() {
	stateFile, ok := os.LookupEnv(envHost)
	if !ok {
		return
	}
	opts := []Option{WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil)))}
	if stateFile != "" {
		opts = append(opts, WithStateFile(stateFile))
	}
	m := New(opts...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, spec := range hostSpecs() {
		if err := m.Add(ctx, name, spec); err != nil {
			fmt.Fprintln(os.Stderr, "host:", err)
			os.Exit(1)
		}
	}
	for name := range hostSpecs() {
		if err := m.WaitFor(ctx, name, lifecycle.Connected); err != nil {
			fmt.Fprintln(os.Stderr, "host:", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = m.Close()
	os.Exit(0)
}

// TestHostKilledTakesChildren: a host with a stdio server that exits on
// stdin EOF, a wrapper that does not, and a wrapper with a helper running
// in the background is killed with SIGKILL; within the bound no process of
// any of their groups still runs. The state file it kept then lists groups
// that are all gone, so the next Manager on it kills nothing.
func TestHostKilledTakesChildren(t *testing.T) {
	stateFile := t.TempDir() + "/state.json"
	host := proctest.StartHost(t, time.Minute, envHost+"="+stateFile)

	pgids := proctest.ChildGroups(t, host.Process.Pid)
	before, err := proctest.Members(pgids...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("groups %v before the kill: %v", pgids, before)
	comms := map[string]int{}
	for _, p := range before {
		comms[p.Comm]++
	}
	// Three servers (the test binary), the wrapper's shell (the helper's
	// exec'd the server), one guard shell per group, and the helper's sleep.
	if len(pgids) != 3 || comms["client.test"] != 3 || comms["sh"] != 4 || comms["sleep"] != 1 {
		t.Fatalf("want 3 groups of 3 servers, a wrapper, 3 guards and a sleep; found %v", before)
	}

	killed := time.Now()
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	if err := proctest.WaitGroupsGone(testCtx(t), pgids...); err != nil {
		t.Fatal(err)
	}
	t.Logf("host killed -> every group gone: %v", time.Since(killed))

	// The dead host's file still lists its groups; they are gone.
	logs := &syncBuffer{}
	m := newTestManager(t, WithStateFile(stateFile), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if got, want := m.OrphanSweep(), (stdio.SweepResult{Listed: 3}); got != want {
		t.Errorf("OrphanSweep() = %+v, want %+v\n%s", got, want, logs)
	}
}
