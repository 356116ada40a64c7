//go:build linux

// Package proctest checks, from tests, which processes are still around:
// children and zombies of the test process, and whether a given pid (a
// grandchild, say) is still alive. It reads /proc, so it is Linux-only.
//
// A process's exit produces no event a test could wait on for a pid it does
// not own, so the waiting helpers poll /proc with a bounded deadline; that is
// the one place the house rule against sleeping in tests gives way.
package proctest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DefaultWait bounds how long NoChildren and WaitDead wait for processes to
// go away. Teardown in the code under test is itself bounded well below it.
const DefaultWait = 10 * time.Second

// pollEvery is how often the waiting helpers rescan /proc.
const pollEvery = 5 * time.Millisecond

// Proc is one process as /proc/<pid>/stat describes it.
type Proc struct {
	PID   int
	PPID  int
	PGID  int
	State byte   // 'R', 'S', 'D', 'Z', ...
	Comm  string // the executable name, truncated by the kernel to 15 bytes
	// Start is field 22, starttime: clock ticks from boot to the start.
	// Zero if the line was too short to hold it.
	Start uint64
}

// Zombie reports whether the process has exited but was not reaped.
func (p Proc) Zombie() bool { return p.State == 'Z' || p.State == 'X' }

func (p Proc) String() string {
	return fmt.Sprintf("pid=%d ppid=%d pgid=%d state=%c comm=%s", p.PID, p.PPID, p.PGID, p.State, p.Comm)
}

// Stat reads /proc/<pid>/stat. It returns an error wrapping fs.ErrNotExist
// when no such process exists (it exited and was reaped).
func Stat(pid int) (Proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, err
	}
	return parseStat(string(b))
}

// parseStat parses the stat line. comm is in parentheses and may itself
// contain spaces and parentheses, so fields are counted from the last ')'.
func parseStat(s string) (Proc, error) {
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Proc{}, fmt.Errorf("proctest: malformed stat %q", s)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return Proc{}, fmt.Errorf("proctest: malformed pid in stat %q", s)
	}
	// After ") ": state ppid pgrp ...
	f := strings.Fields(s[closing+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return Proc{}, fmt.Errorf("proctest: malformed stat %q", s)
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return Proc{}, fmt.Errorf("proctest: malformed stat %q", s)
	}
	p := Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0], Comm: s[open+1 : closing]}
	if len(f) >= 20 {
		p.Start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return p, nil
}

// BootID returns this boot's id (/proc/sys/kernel/random/boot_id).
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b)), err
}

// All lists every process on the machine, zombies included.
func All() ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process directory
		}
		p, err := Stat(pid)
		if err != nil {
			continue // exited between ReadDir and ReadFile
		}
		out = append(out, p)
	}
	return out, nil
}

// Members lists the processes of the given process groups that still run
// (zombies left out: they run nothing, and where nobody reaps orphans, as
// in a container whose init does not, they stay for ever).
func Members(pgids ...int) ([]Proc, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, p := range all {
		if !p.Zombie() && slices.Contains(pgids, p.PGID) {
			out = append(out, p)
		}
	}
	return out, nil
}

// WaitGroupsGone waits until no process of the given groups runs, or ctx
// ends; then it returns an error listing what still runs.
func WaitGroupsGone(ctx context.Context, pgids ...int) error {
	var left []Proc
	err := poll(ctx, func() (bool, error) {
		var err error
		left, err = Members(pgids...)
		return len(left) == 0, err
	})
	if err != nil {
		return fmt.Errorf("proctest: processes of groups %v still run: %v (%w)", pgids, left, err)
	}
	return nil
}

// Children lists the live children and unreaped zombies of this process.
func Children() ([]Proc, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Proc
	for _, p := range all {
		if p.PPID == self {
			out = append(out, p)
		}
	}
	return out, nil
}

// Alive reports whether pid names a process that still runs. A zombie counts
// as dead: it no longer executes anything, and a grandchild's zombie belongs
// to whoever it was reparented to, not to us.
func Alive(pid int) bool {
	p, err := Stat(pid)
	if err != nil {
		return false
	}
	return !p.Zombie()
}

// NoChildren fails the test unless, within DefaultWait, this process has no
// child left, running or zombie. Call it at the end of a test (not from a
// parallel one: it sees every test's children).
func NoChildren(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultWait)
	defer cancel()
	if err := WaitNoChildren(ctx); err != nil {
		t.Fatal(err)
	}
}

// WaitNoChildren waits until this process has no child left, running or
// zombie, or ctx ends; then it returns an error listing what is left.
func WaitNoChildren(ctx context.Context) error {
	var left []Proc
	err := poll(ctx, func() (bool, error) {
		var err error
		left, err = Children()
		return len(left) == 0, err
	})
	if err != nil {
		return fmt.Errorf("proctest: children still present: %v (%w)", left, err)
	}
	return nil
}

// WaitDead fails the test unless every pid is dead (gone or a zombie)
// within DefaultWait.
func WaitDead(t testing.TB, pids ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultWait)
	defer cancel()
	var alive []int
	err := poll(ctx, func() (bool, error) {
		alive = alive[:0]
		for _, pid := range pids {
			if Alive(pid) {
				alive = append(alive, pid)
			}
		}
		return len(alive) == 0, nil
	})
	if err != nil {
		t.Fatalf("proctest: processes still alive: %v (%v)", alive, err)
	}
}

// poll calls cond until it reports true, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// OpenFiles lists the file descriptors this process has open, in
// increasing order (the one it used to read them left out).
func OpenFiles() ([]int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	self := int(d.Fd())
	var fds []int
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != self {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	return fds, nil
}

// OpenFileSet returns this process's open file descriptors, each with what
// it refers to ("pipe:[123]", a path), as "fd -> target" strings, sorted.
// Two sets compare by identity, not number: a descriptor closed and its
// number taken by a new one shows as a new entry.
func OpenFileSet() ([]string, error) {
	fds, err := OpenFiles()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(fds))
	for _, fd := range fds {
		target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			continue // closed meanwhile
		}
		out = append(out, strconv.Itoa(fd)+" -> "+target)
	}
	slices.Sort(out)
	return out, nil
}

// LimitOpenFiles lowers this process's soft RLIMIT_NOFILE so that exactly
// free more file descriptors can be opened, and returns a function that
// puts the limit back. Descriptors already open above the new limit (a
// test runner's, inherited) stay usable; new ones take the lowest free
// numbers, and only numbers below the limit. The limit is the whole
// process's: lower it only in a process of its own (see Subprocess),
// never beside other tests.
func LimitOpenFiles(free int) (restore func() error, err error) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		return nil, err
	}
	fds, err := OpenFiles()
	if err != nil {
		return nil, err
	}
	// The least limit with free numbers below it that no descriptor holds.
	lim := orig
	lim.Cur = 0
	for spare := 0; spare < free; lim.Cur++ {
		if _, open := slices.BinarySearch(fds, int(lim.Cur)); !open {
			spare++
		}
	}
	if lim.Cur > orig.Cur {
		return nil, fmt.Errorf("proctest: %d more open files would pass the limit %d", free, orig.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil, err
	}
	return func() error { return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) }, nil
}

// Subprocess runs the calling test alone in a new process: the test binary
// re-executed for that test only, with env set to its name. It returns
// true in that process, where the caller goes on with the test's body, and
// false in the calling one, after the run, which fails t unless the test
// passed there. It is for tests that change what belongs to the whole
// process (a resource limit) and so must not run beside others.
func Subprocess(t *testing.T, env string) bool {
	t.Helper()
	child, _ := SubprocessStderr(t, env)
	return child
}

// SubprocessStderr is Subprocess that also returns, in the calling
// process, what the run wrote to its stderr, apart from its stdout (where
// the test's own output goes): for tests of what a process writes there.
func SubprocessStderr(t *testing.T, env string) (child bool, stderr []byte) {
	t.Helper()
	if os.Getenv(env) == t.Name() {
		return true, nil
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	timeout := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) * 9 / 10
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v",
		"-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	t.Logf("%s in a process of its own:\n%s", t.Name(), out)
	if errb.Len() > 0 {
		t.Logf("and on its stderr:\n%s", errb.Bytes())
	}
	if err != nil {
		t.Fatalf("%s in a process of its own: %v", t.Name(), err)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s in a process of its own: did not run", t.Name())
	}
	return false, errb.Bytes()
}

// StartHost starts this test binary again, running no test, with env added
// to its environment: a host process a test can kill without taking itself
// along (its TestMain runs the host when it finds its variable in env). The
// host's stdin is held open, for a host that waits on it. StartHost returns
// once the host printed its "ready" line, and fails the test, with what the
// host wrote to stderr, if it did not within bound. A host still running
// when the test ends is killed and reaped.
func StartHost(t testing.TB, bound time.Duration, env ...string) *exec.Cmd {
	t.Helper()
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), env...)
	stdin, err := host.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	host.Stderr = &stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = host.Process.Kill() // fails harmlessly if the test reaped it
		_ = host.Wait()
		_ = stdin.Close()
	})
	err = ReadyLine(stdout, bound)
	if err == nil {
		return host
	}
	_ = host.Process.Kill()
	_ = host.Wait() // stderr is complete once Wait returns
	t.Fatalf("host: %v\n%s", err, stderr.String())
	return nil
}

// ReadyLine waits, at most bound, for a process to write "ready" as its
// first line to r.
func ReadyLine(r io.Reader, bound time.Duration) error {
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.TrimSpace(s) != "ready" {
			return fmt.Errorf("printed %q instead of ready", s)
		}
		return nil
	case <-time.After(bound):
		return fmt.Errorf("not ready within %v", bound)
	}
}

// ChildGroups returns the process groups of pid's children, other than
// pid's own: the groups of the servers a host started.
func ChildGroups(t testing.TB, pid int) []int {
	t.Helper()
	self, err := Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var pgids []int
	for _, p := range all {
		if p.PPID == pid && p.PGID != self.PGID && !slices.Contains(pgids, p.PGID) {
			pgids = append(pgids, p.PGID)
		}
	}
	slices.Sort(pgids)
	return pgids
}
