//go:build linux

package client

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpfleet/mcpfleet/internal/testkit/fakeclock"
	"github.com/mcpfleet/mcpfleet/internal/testkit/gosdkserver"
	"github.com/mcpfleet/mcpfleet/internal/testkit/proctest"
	"github.com/mcpfleet/mcpfleet/lifecycle"
	"github.com/mcpfleet/mcpfleet/transport/stdio"
)

// envOutOfFiles runs a test that lowers RLIMIT_NOFILE in a process of its
// own (proctest.Subprocess): the limit is the whole process's.
const envOutOfFiles = "MCPFLEET_CLIENT_TEST_OUT_OF_FILES"

// TestStdioOutOfFiles: the host runs out of file descriptors while it adds
// stdio servers. The spawn that finds none left is a dial failure like any
// other: the slot stays Connecting and retries on its backoff, its error
// says too many open files and the call's names the server, the servers
// already connected go on answering, the failed spawns leave no
// descriptor, child or guard behind, and once descriptors are back the
// next retry connects. The backoff runs on a fake clock, so that the test
// decides when each retry comes and can look at the process while no
// spawn is in progress.
func TestStdioOutOfFiles(t *testing.T) {
	if !proctest.Subprocess(t, envOutOfFiles) {
		return
	}
	inv, err := gosdkserver.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spec := ServerSpec{Stdio: &stdio.Spec{Command: inv.Path}}
	ignore := goleak.IgnoreCurrent()
	fdsStart, err := proctest.OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	const first = time.Minute // the first retry's wait; each doubles it
	clock := fakeclock.New(time.Unix(1000, 0))
	m := newTestManager(t, WithClock(clock), WithTimeouts(Timeouts{IdleProbe: -1, Ready: time.Second, Close: time.Minute}), WithPolicy(lifecycle.Policy{
		InitialInterval: first, MaxInterval: 16 * first, Jitter: -1, MaxAttempts: 5, ProbeInterval: -1}))
	rec := record(m)
	var names []string
	add := func(name string) Event {
		t.Helper()
		names = append(names, name)
		mustAdd(t, m, name, spec)
		return rec.wait(t, func(e Event) bool {
			return e.Server == name && (e.Kind == EventRetry || e.Kind == EventState && e.To == lifecycle.Connected)
		})
	}
	for i := range 3 {
		if e := add(fmt.Sprintf("ok%d", i)); e.Kind != EventState {
			t.Fatalf("ok%d under the host's own limit: %v", i, e.Err)
		}
	}

	// From now on the host has 20 descriptors to spare: enough for two
	// servers or three, not for many.
	restore, err := proctest.LimitOpenFiles(20)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	var low syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	// look lifts the limit for as long as it reads /proc, which takes a
	// descriptor; nothing spawns meanwhile (no retry is due on the fake
	// clock), so it changes nothing else.
	look := func() (fds []string, kids []proctest.Proc) {
		t.Helper()
		if err := restore(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
				t.Fatal(err)
			}
		}()
		fds, err := proctest.OpenFileSet()
		if err != nil {
			t.Fatal(err)
		}
		kids, err = proctest.Children()
		if err != nil {
			t.Fatal(err)
		}
		return fds, kids
	}
	fdsBase, kidsBase := look()
	var victim string
	var failed Event
	for i := 0; victim == ""; i++ {
		if i == 10 {
			t.Fatalf("10 more servers connected with 20 descriptors to spare")
		}
		name := fmt.Sprintf("more%d", i)
		e := add(name)
		if e.Kind == EventRetry {
			victim, failed = name, e
			break
		}
		fdsBase, kidsBase = look()
	}
	t.Logf("out of files at the %dth server (limit %d): %v", len(names), low.Cur, failed.Err)
	connected := names[:len(names)-1]

	// The failure: transient, on the backoff, and saying what ran out.
	checkCause := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, stdio.ErrOutOfResources) || !errors.Is(err, syscall.EMFILE) ||
			!strings.Contains(err.Error(), "too many open files") {
			t.Errorf("%s: %v; want stdio.ErrOutOfResources and EMFILE, saying too many open files", what, err)
		}
	}
	checkCause("the retry event", failed.Err)
	if failed.Attempt != 1 || failed.NextRetry.Sub(clock.Now()) != first {
		t.Errorf("retry event: attempt %d, next retry in %v; want 1, %v", failed.Attempt, failed.NextRetry.Sub(clock.Now()), first)
	}
	st, err := m.Status(victim)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != lifecycle.Connecting {
		t.Errorf("%s is %s, want Connecting (retrying)", victim, st.State)
	}
	checkCause("Status.LastError", st.LastError)

	// Nothing of the failed spawn is left, and the others go on.
	if err := clock.WaitForTimers(testCtx(t), 1); err != nil { // parked on its backoff
		t.Fatal(err)
	}
	leftNothing := func(when string) {
		t.Helper()
		fds, kids := look()
		// A descriptor of the base may have closed since (a guard's pipe,
		// read until the guard is armed, which Dial does not wait for);
		// one that is not in it is left over.
		for _, fd := range fds {
			if !slices.Contains(fdsBase, fd) {
				t.Errorf("%s: open file %s, not open before the failed spawns (%v)", when, fd, fdsBase)
			}
		}
		if len(kids) != len(kidsBase) || len(kids) != 2*len(connected) {
			t.Errorf("%s: %d child processes, before the failed spawns %d, want %d (a server and its guard for each of %d)",
				when, len(kids), len(kidsBase), 2*len(connected), len(connected))
		}
	}
	leftNothing("after the first failed spawn")
	echoAll := func(names ...string) {
		t.Helper()
		for _, name := range names {
			res, err := m.CallTool(testCtx(t), name, "echo", map[string]any{"text": name})
			if err != nil || text(res) != name {
				t.Errorf("%s: echo = %q, %v", name, text(res), err)
			}
		}
	}
	echoAll(connected...)
	for _, st := range m.Statuses() {
		if st.Name != victim && st.State != lifecycle.Connected {
			t.Errorf("%s is %s, want Connected", st.Name, st.State)
		}
	}

	// The next retry comes on the backoff, fails alike, and backs off further.
	clock.Advance(first)
	e := rec.wait(t, func(e Event) bool { return e.Server == victim && e.Kind == EventRetry && e.Attempt == 2 })
	checkCause("the second retry event", e.Err)
	if wait := e.NextRetry.Sub(clock.Now()); wait != 2*first {
		t.Errorf("after the second failure the next retry is in %v, want %v", wait, 2*first)
	}
	if err := clock.WaitForTimers(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}

	// A call waits (and pulls an extra attempt forward, which fails too),
	// then gives up with an error that names the server and the cause.
	from := len(rec.snapshot())
	callErr := make(chan error, 1)
	go func() {
		_, err := m.CallTool(testCtx(t), victim, "echo", map[string]any{"text": "x"})
		callErr <- err
	}()
	if !rec.await(testCtx(t), from, func(e Event) bool { return e.Server == victim && e.Kind == EventRetry }) {
		t.Fatal("the waiting call pulled no attempt forward")
	}
	if err := clock.WaitForTimers(testCtx(t), 2); err != nil { // the backoff's and the call's
		t.Fatal(err)
	}
	clock.Advance(time.Second) // the ready timeout, well before the retry
	err = <-callErr
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), fmt.Sprintf("server %q", victim)) {
		t.Errorf("call = %v; want an *UnavailableError naming server %q", err, victim)
	}
	checkCause("the call", err)
	t.Logf("the call: %v", err)
	leftNothing("after three failed spawns")

	// Descriptors are back: the retry due connects.
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * first)
	mustWait(t, m, victim, lifecycle.Connected)
	echoAll(names...)
	if st, _ := m.Status(victim); st.LastError != nil || st.Generation != 1 {
		t.Errorf("%s once connected: generation %d, last error %v; want 1, nil", victim, st.Generation, st.LastError)
	}

	closeAndCheck(t, m, rec)
	proctest.NoChildren(t)
	if fds, err := proctest.OpenFiles(); err != nil || !slices.Equal(fds, fdsStart) {
		t.Errorf("open files %v after Close, %v before the manager (%v)", fds, fdsStart, err)
	}
	goleak.VerifyNone(t, ignore)
}
