package stdio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// DefaultSweepGrace is how long the sweep of OpenRegistry lets a group it
// sent SIGTERM exit before it sends SIGKILL, and then how long it waits for
// the SIGKILL to take effect.
const DefaultSweepGrace = 2 * time.Second

// ErrRegistryInUse: the state file belongs to a host that is still
// running. Its groups are that host's live servers, not orphans: they are
// left alone, and the file is not touched.
var ErrRegistryInUse = errors.New("stdio: state file in use by a running host")

const (
	// registryFormat marks a state file as ours; with a version this
	// package reads (registryVersion, registryVersionWhole: see
	// registry_file.go). A file with anything else is not swept.
	registryFormat = "mcpfleet/stdio-registry"
	// sweepPoll is how often the sweep looks whether a group is gone. The
	// processes are not our children, so no event tells us.
	sweepPoll = 10 * time.Millisecond
)

// errProcGone and errNoStartTime are what readProc (procinfo_*.go) fails
// with: no such process, or no way to tell when it started.
var (
	errProcGone    = errors.New("no such process")
	errNoStartTime = errors.New("the process's start time cannot be read on this system")
)

// procState is what the OS says about one process.
type procState struct {
	// start names the moment the process started, in a form only compared
	// for equality (procinfo_*.go). Two processes with the same pid never
	// have the same start.
	start  string
	pgid   int
	zombie bool // exited, not yet reaped
}

// Registry records the process groups of a host's stdio servers in a
// state file of the host's choosing, so that a host killed without a chance
// to clean up (SIGKILL, the OOM killer, a crash, a power-off of its
// container) does not leave them running for ever: the next Registry
// opened on the same file ends them.
//
// Each Conn dialled WithRegistry adds its group when it starts and takes it
// out when its process is reaped. An entry holds the leader's pid, the
// group id, the leader's start time and the base name of the command; never
// its arguments or environment, which may hold secrets. The file has mode
// 0600; each change appends one line to it, and it is rewritten
// atomically (a temporary file renamed over it) when it is taken over,
// when most of its lines are of groups already gone, and at Close, which
// removes it once it lists nothing. A spawn thus costs the same with ten
// thousand children as with one. The file a crash leaves is read whole
// but for a last line cut short, which is passed over.
//
// Whether a Registry is needed depends on the OS. On Linux a parent-death
// signal and a guard in each group (see the package doc) end the group
// with the host, and the state file is the fallback for when they could
// not act. On macOS and the BSDs it is the only way (start times come from
// sysctl on macOS, from ps(1) on the BSDs). On Windows every child is in a
// kill-on-close Job Object and dies with the host anyway; start times are
// not read there, so the file records nothing and the sweep ends nothing.
//
// A Registry is safe for concurrent use by any number of Conns.
type Registry struct {
	// Set by OpenRegistry, read-only afterwards.
	path   string
	logger *slog.Logger
	owner  processRecord // this host, as written in the file
	swept  SweepResult

	mu sync.Mutex // guards everything below; held across a write, so that writes land in order
	// groups are the live groups of our Conns, by leader pid.
	groups map[int]*registered
	// inherited are a predecessor's groups that the sweep could not end;
	// they stay in the file for the next sweep.
	inherited []groupRecord
	closed    bool
	failing   bool // the last write failed; logged once until one succeeds
	// The file as written (registry_file.go): file is open for appending
	// (nil before the first write, after Close, or when a rewrite could
	// not reopen it); records counts its lines after the header, live and
	// dead; dirty says the last append failed and may have left part of a
	// line, so the next change rewrites the file instead of appending.
	file           *os.File
	records        int
	dirty          bool
	compactFailing bool   // the last compaction failed; logged once
	buf            []byte // the line being appended, reused
}

// registered is one of our groups in a Registry; Conn.remove takes it out
// by identity, so that a Conn whose pid was reused by a newer Conn's child
// cannot remove the newer entry.
type registered struct{ rec groupRecord }

// SweepResult says what OpenRegistry did with the groups a previous host
// left in the state file. Every group it did not end is logged with the
// reason.
type SweepResult struct {
	// Listed is how many process groups the file listed.
	Listed int
	// Killed is how many of those were still running, were proved to be
	// the processes recorded (same pid, same start time, same group), and
	// are gone now, ended by SIGTERM or, after the grace, SIGKILL.
	Killed int
	// Failed is how many were proved to be the recorded ones and still
	// running, but did not go away even after SIGKILL. They stay in the
	// file for the next sweep.
	Failed int
	// The rest (Listed - Killed - Failed) had exited already, or could not
	// be proved to be the recorded processes (a reused pid, a start time
	// the OS does not tell) and were left alone.
}

// processRecord names one process so that a reused pid is not taken for it.
type processRecord struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
}

// groupRecord is one process group of the host: its leader and, for the
// logs, the base name of the leader's command.
type groupRecord struct {
	PID     int    `json:"pid"`
	PGID    int    `json:"pgid"`
	Start   string `json:"start"`
	Command string `json:"command"`
}

// RegistryOption configures OpenRegistry.
type RegistryOption func(*registryOptions)

type registryOptions struct {
	logger *slog.Logger
	grace  time.Duration
}

// WithRegistryLogger sets the logger for what the Registry does: each
// group it ends or leaves alone, a file it ignores and why, a write that
// failed. Defaults to discarding (the package writes nothing to the
// host's stdout or stderr by itself). A nil logger discards.
func WithRegistryLogger(l *slog.Logger) RegistryOption {
	return func(o *registryOptions) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.logger = l
	}
}

// WithSweepGrace sets how long the sweep waits after SIGTERM before it
// sends SIGKILL, and after SIGKILL before it gives up. Values below 1 keep
// the default. Defaults to DefaultSweepGrace.
func WithSweepGrace(d time.Duration) RegistryOption {
	return func(o *registryOptions) {
		if d > 0 {
			o.grace = d
		}
	}
}

// OpenRegistry opens the state file at path (creating it, and its
// directory, if missing) and takes it over for this host.
//
// If the file lists groups of a previous host that is no longer running,
// OpenRegistry ends those that still run: each only if its leader's pid is
// alive and its start time is the recorded one, so that a pid the system
// reused for another process is never signalled. It sends SIGTERM to each
// such group, SIGKILL to what is left after the sweep grace, and returns
// once they are gone or a second grace has passed; Swept says what it did.
// A file that cannot be read, is corrupt, is not a state file, or could
// have been written by another user is ignored for the sweep (the reason
// is logged) and replaced. A file this package wrote before the current
// format (version 1) is read and swept all the same.
//
// It fails with ErrRegistryInUse when the file belongs to a host that is
// still running (another process, or another open Registry of this one),
// and with an error when the file cannot be written. Two hosts that open
// the same file at the same moment may both take it over; each then writes
// its own groups only, so a later sweep can miss the groups of one of
// them, but never signals those of a host that runs.
func OpenRegistry(path string, opts ...RegistryOption) (*Registry, error) {
	o := registryOptions{logger: slog.New(slog.DiscardHandler), grace: DefaultSweepGrace}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, errors.New("stdio: state file: path is empty")
	}
	r := &Registry{path: path, logger: o.logger, groups: map[int]*registered{}}
	r.owner.PID = os.Getpid()
	if st, err := readProc(r.owner.PID); err == nil {
		r.owner.Start = st.start
	} else {
		r.logger.Info("mcpfleet: stdio: this system does not tell when a process started, so the state file can prove no process ours: it records none and ends none",
			"path", path, "reason", err)
	}

	prev := r.load()
	if prev.Owner != nil && r.running(*prev.Owner) {
		return nil, fmt.Errorf("%w: %s (pid %d)", ErrRegistryInUse, path, prev.Owner.PID)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("stdio: state file %s: %w", path, err)
	}
	// Take the file over before the sweep, keeping the predecessor's groups
	// in it until they are dealt with, so that a host that dies in the
	// middle of the sweep loses none of them, and so that another host
	// opening the file meanwhile finds it in use.
	r.inherited = prev.Groups
	if err := r.rewrite(); err != nil {
		return nil, err
	}
	r.swept, r.inherited = sweep(prev.Groups, o.grace, r.logger)
	if r.swept.Listed > 0 {
		r.logger.Info("mcpfleet: stdio: swept the process groups a previous host left", "path", path,
			"listed", r.swept.Listed, "killed", r.swept.Killed, "failed", r.swept.Failed)
	}
	if err := r.rewrite(); err != nil {
		r.mu.Lock()
		r.closeFileLocked()
		r.mu.Unlock()
		return nil, err
	}
	return r, nil
}

// Swept returns what OpenRegistry did with the groups a previous host left.
func (r *Registry) Swept() SweepResult { return r.swept }

// Close releases the state file: it removes it if it lists nothing, as
// after every Conn recorded in it was closed. Otherwise the remaining
// groups stay listed, without an owner, so that the next Registry opened
// on the file (by any host, this one included) ends them. Conns that still
// run are no longer recorded. Close is safe to call more than once.
func (r *Registry) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if n := len(r.groups); n > 0 {
		r.logger.Warn("mcpfleet: stdio: state file closed while process groups still run; the next host to open it ends them",
			"path", r.path, "groups", n)
	}
	// Rewritten without an owner, or removed if it lists nothing.
	err := r.rewriteLocked()
	r.closeFileLocked()
	return err
}

// add records the group pgid led by pid, started from command. It returns
// nil (and remove ignores nil) when r is nil, closed, or the start time
// cannot be read: an entry without one could never be swept.
func (r *Registry) add(pid, pgid int, command string) *registered {
	if r == nil {
		return nil
	}
	st, err := readProc(pid)
	if err != nil {
		level := slog.LevelWarn
		if r.owner.Start == "" {
			// Expected: this system tells no start times (OpenRegistry said so).
			level = slog.LevelDebug
		}
		r.logger.Log(context.Background(), level, "mcpfleet: stdio: process group not recorded in the state file", "pid", pid, "error", err)
		return nil
	}
	return r.record(groupRecord{PID: pid, PGID: pgid, Start: st.start, Command: baseName(command)})
}

// record adds the group g, whose start time add read.
func (r *Registry) record(g groupRecord) *registered {
	e := &registered{rec: g}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.groups[g.PID] = e
	r.logWriteLocked(r.appendLocked(addRecord(g)))
	return e
}

// remove takes e out, if it is still there.
func (r *Registry) remove(e *registered) {
	if r == nil || e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.groups[e.rec.PID] != e {
		return
	}
	delete(r.groups, e.rec.PID)
	r.logWriteLocked(r.appendLocked(delRecord(e.rec)))
}

// logWriteLocked logs the first of a run of failed writes. A Conn does not
// fail for it: the child runs correctly, it only may outlive a crash.
func (r *Registry) logWriteLocked(err error) {
	switch {
	case err != nil && !r.failing:
		r.logger.Warn("mcpfleet: stdio: state file not updated; children may outlive a crash of this host", "error", err)
		r.failing = true
	case err == nil && r.failing:
		r.logger.Info("mcpfleet: stdio: state file updated again", "path", r.path)
		r.failing = false
	}
}

// rewrite is rewriteLocked (registry_file.go) under the lock.
func (r *Registry) rewrite() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rewriteLocked()
}

// load reads the file a previous host left. Anything that is not a state
// file of ours, written by this user, is logged and treated as empty.
func (r *Registry) load() stateFile {
	ignore := func(reason string, args ...any) stateFile {
		r.logger.Warn("mcpfleet: stdio: state file ignored: "+reason+"; it will be replaced", append([]any{"path", r.path}, args...)...)
		return stateFile{}
	}
	// Not through a symbolic link (Unix): the file is ours, not what a
	// link in its place points at.
	f, err := os.OpenFile(r.path, os.O_RDONLY|openNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return stateFile{}
	}
	if err != nil {
		return ignore("cannot be read", "error", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ignore("cannot be read", "error", err)
	}
	if why := untrusted(fi); why != "" {
		// Whoever can write the file can choose what the sweep signals.
		return ignore(why)
	}
	if !fi.Mode().IsRegular() {
		return ignore("not a regular file")
	}
	if fi.Size() > maxRegistrySize {
		return ignore("larger than a state file can be", "limit", maxRegistrySize)
	}
	res, err := decodeState(f, maxRegistrySize)
	if bad, ok := err.(*badStateFile); ok {
		return ignore(bad.reason, bad.args...)
	}
	if res.torn {
		r.logger.Info("mcpfleet: stdio: state file: its last line was cut short (the host died, or the disk filled, while writing it); the lines before it are honoured",
			"path", r.path)
	}
	if res.skipped > 0 {
		r.logger.Warn("mcpfleet: stdio: state file: lines that could not be read were passed over", "path", r.path, "lines", res.skipped)
	}
	valid := res.Groups[:0]
	for _, g := range res.Groups {
		if g.PID <= 1 || g.PGID <= 1 {
			r.logger.Warn("mcpfleet: stdio: state file entry ignored: not a process group", "path", r.path, "pid", g.PID, "pgid", g.PGID)
			continue
		}
		valid = append(valid, g)
	}
	res.Groups = valid
	return res.stateFile
}

// running reports whether p names a process that runs now (and so a host
// that owns its file). One whose start time cannot be read is taken for
// gone: nothing is signalled on that account, only the file taken over.
func (r *Registry) running(p processRecord) bool {
	if p.Start == "" {
		return false
	}
	st, err := readProc(p.PID)
	return err == nil && !st.zombie && st.start == p.Start
}

// sweep ends the groups that are provably the recorded ones and still
// run. It returns what it did and the groups it could not end.
func sweep(groups []groupRecord, grace time.Duration, logger *slog.Logger) (SweepResult, []groupRecord) {
	res := SweepResult{Listed: len(groups)}
	own := ownGroup()
	var targets []groupRecord
	for _, g := range groups {
		why := verify(g, own)
		if why == "" {
			targets = append(targets, g)
			continue
		}
		logger.Info("mcpfleet: stdio: process group of a previous host left alone: "+why,
			"pid", g.PID, "pgid", g.PGID, "command", g.Command)
	}
	// A group whose leader is proved ours is still ours as long as it has
	// members: its id cannot be reused until the last one is reaped. The
	// waits below look at each group at least every sweepPoll, so a group
	// that emptied is seen gone before its id could be handed out again.
	targets = stillRunning(targets, logger)
	pending := signalAll(targets, syscall.SIGTERM, logger)
	pending = waitGone(pending, grace)
	if len(pending) > 0 {
		pending = signalAll(pending, syscall.SIGKILL, logger)
		pending = waitGone(pending, grace)
	}
	for _, g := range targets {
		if slices.Contains(pending, g) {
			res.Failed++
			logger.Warn("mcpfleet: stdio: process group of a previous host still runs after SIGKILL",
				"pid", g.PID, "pgid", g.PGID, "command", g.Command)
			continue
		}
		res.Killed++
		logger.Info("mcpfleet: stdio: ended a process group a previous host left running",
			"pid", g.PID, "pgid", g.PGID, "command", g.Command)
	}
	return res, pending
}

// verify returns why g must be left alone, or "" if g's leader is the very
// process recorded (alive, or a zombie nobody reaped, which keeps its pid
// and so its group id ours).
func verify(g groupRecord, ownGroup int) string {
	if g.Start == "" {
		return "no start time was recorded"
	}
	if g.PGID == ownGroup || g.PID == os.Getpid() {
		return "it is this host's own process group"
	}
	st, err := readProc(g.PID)
	switch {
	case errors.Is(err, errProcGone):
		return "exited"
	case err != nil:
		return "cannot tell whether the pid was reused: " + err.Error()
	case st.start != g.Start:
		return "the pid now names another process"
	case st.pgid != g.PGID:
		return "the process left its group"
	}
	return ""
}

// stillRunning keeps the groups that have a member running; the others
// (only the unreaped zombie of their leader left) are logged as exited.
func stillRunning(groups []groupRecord, logger *slog.Logger) []groupRecord {
	running := runningGroups(groups)
	var out []groupRecord
	for _, g := range groups {
		if running[g.PGID] {
			out = append(out, g)
			continue
		}
		logger.Info("mcpfleet: stdio: process group of a previous host left alone: exited",
			"pid", g.PID, "pgid", g.PGID, "command", g.Command)
	}
	return out
}

// signalAll sends sig to each group and returns those it reached.
func signalAll(groups []groupRecord, sig syscall.Signal, logger *slog.Logger) []groupRecord {
	var out []groupRecord
	for _, g := range groups {
		if err := signalGroup(g.PGID, sig); err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				logger.Warn("mcpfleet: stdio: cannot signal a process group of a previous host",
					"pid", g.PID, "pgid", g.PGID, "command", g.Command, "signal", signalName(sig), "error", err)
			}
			continue
		}
		out = append(out, g)
	}
	return out
}

// waitGone waits up to d for the groups to have no running member and
// returns those that still have one.
func waitGone(groups []groupRecord, d time.Duration) []groupRecord {
	deadline := time.Now().Add(d)
	for len(groups) > 0 {
		running := runningGroups(groups)
		groups = slices.DeleteFunc(groups, func(g groupRecord) bool { return !running[g.PGID] })
		if len(groups) == 0 || time.Now().After(deadline) {
			break
		}
		// The processes are not our children: no event tells us they died.
		time.Sleep(sweepPoll)
	}
	return groups
}

// baseName is the command's last element: enough to tell servers apart in
// a log, and never a secret the way an argument or a directory can be.
func baseName(command string) string {
	return filepath.Base(command)
}
