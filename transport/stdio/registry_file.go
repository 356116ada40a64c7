package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// The state file on disk. Version 2, written here, is a log of JSON lines:
//
//	{"format":"mcpfleet/stdio-registry","version":2,"owner":{"pid":7,"start":"..."}}
//	{"op":"add","pid":41,"pgid":41,"start":"...","command":"node"}
//	{"op":"add","pid":42,"pgid":42,"start":"...","command":"uvx"}
//	{"op":"del","pid":41,"start":"..."}
//
// The header is the first line; each later line adds a group or removes
// one, so that a spawn or a reap appends one short line instead of
// rewriting every entry (which made a fleet of n children cost O(n²) bytes
// written). When the dead lines (removed groups, and the lines that
// removed them) outnumber the live ones compactFactor to one, the file is
// rewritten whole as a header and one add per live group, atomically as
// before (a temporary file renamed over it); so is it at takeover and at
// Close. Each change thus costs O(1) amortized, and the file holds at most
// about (compactFactor+1) lines per live group.
//
// Version 1, one JSON document {"format", "version", "owner", "groups"}
// rewritten whole on every change, is still read, so that a host upgraded
// across a crash sweeps what the old one left; it is never written.

const (
	// registryVersion is the version this package writes: the log above.
	registryVersion = 2
	// registryVersionWhole is the version before it: one JSON document.
	registryVersionWhole = 1
	// maxRegistrySize bounds what OpenRegistry reads: a line is about 150
	// bytes, so this holds the log of a host with a hundred thousand
	// children, far beyond the file descriptors a host has for them.
	// Anything larger is not a state file of ours.
	maxRegistrySize = 64 << 20
	// maxRecordSize bounds one line. A record is a few hundred bytes at
	// most (the command's base name is at most a file name long).
	maxRecordSize = 64 << 10
	// compactFactor and compactMinDead decide when the log is rewritten:
	// once it has more than compactMinDead dead lines and more than
	// compactFactor times as many dead lines as live ones. The minimum
	// keeps a small fleet that churns from rewriting at every change.
	compactFactor  = 2
	compactMinDead = 64
)

// Operations of a log line.
const (
	opAdd = "add"
	opDel = "del"
)

// stateFile is what a state file says, whichever its version: who owns it
// and the groups it lists. It is also the JSON of version 1, whole.
// Unknown fields are ignored, so a later version may add some without a
// new format.
type stateFile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Owner is the host that writes the file; nil once it closed its
	// Registry, so that a later host may take the file over at once.
	Owner  *processRecord `json:"owner,omitempty"`
	Groups []groupRecord  `json:"groups"`
}

// logHeader is the first line of a version 2 file.
type logHeader struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	Owner   *processRecord `json:"owner,omitempty"`
}

// logRecord is every later line: a group added (all fields) or removed
// (pid and start, so that the removal of an older group cannot take out a
// newer one given the same pid).
type logRecord struct {
	Op      string `json:"op"`
	PID     int    `json:"pid"`
	PGID    int    `json:"pgid,omitempty"`
	Start   string `json:"start"`
	Command string `json:"command,omitempty"`
}

func addRecord(g groupRecord) logRecord {
	return logRecord{Op: opAdd, PID: g.PID, PGID: g.PGID, Start: g.Start, Command: g.Command}
}

func delRecord(g groupRecord) logRecord {
	return logRecord{Op: opDel, PID: g.PID, Start: g.Start}
}

// appendLine appends v as one JSON line to b.
func appendLine(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(append(b, j...), '\n'), nil
}

// badStateFile is why a whole file is ignored: the message and the
// attributes to log with it.
type badStateFile struct {
	reason string
	args   []any
}

func (e *badStateFile) Error() string { return e.reason }

func badState(reason string, args ...any) error { return &badStateFile{reason: reason, args: args} }

// decodeResult is what decodeState read, and what it had to leave out.
type decodeResult struct {
	stateFile
	// skipped counts the lines of a version 2 file that could not be
	// read (corrupt, too long, an unknown operation) and were passed over.
	skipped int
	// torn is set when the last line was cut short: the host died, or the
	// disk filled, while appending it. The lines before it are honoured.
	torn bool
}

// decodeState reads a state file of either version from rd, which it
// reads no further than limit bytes (a longer file is refused whole).
// A nil error with an empty result means an empty file. An error is a
// *badStateFile: the file as a whole is not to be believed.
func decodeState(rd io.Reader, limit int64) (decodeResult, error) {
	lr := &io.LimitedReader{R: rd, N: limit + 1}
	br := bufio.NewReaderSize(lr, maxRecordSize)
	tooLarge := func() bool { return lr.N <= 0 }
	var res decodeResult

	first, complete, err := readLine(br)
	if err != nil {
		return res, badState("cannot be read", "error", err)
	}
	if json.Unmarshal(first, &res.stateFile) != nil || !complete {
		// Not one JSON line: an indented version 1 document, or garbage.
		rest, err := io.ReadAll(br)
		switch {
		case err != nil:
			return res, badState("cannot be read", "error", err)
		case tooLarge():
			return res, badState("larger than a state file can be", "limit", limit)
		}
		all := append(slices.Clip(first), rest...)
		if len(bytes.TrimSpace(all)) == 0 {
			return decodeResult{}, nil
		}
		res.stateFile = stateFile{}
		if err := json.Unmarshal(all, &res.stateFile); err != nil {
			return res, badState("corrupt or not a state file", "error", err)
		}
		// One document, read to its end: a version 2 one is a header
		// with no line after it.
	}
	switch {
	case res.Format != registryFormat:
		return res, badState("not a state file of mcpfleet", "format", res.Format)
	case res.Version == registryVersionWhole:
		if tooLarge() {
			return res, badState("larger than a state file can be", "limit", limit)
		}
		return res, nil
	case res.Version != registryVersion:
		return res, badState("unsupported version", "version", res.Version)
	}
	res.Groups = nil // a header lists none; the lines below do

	live := map[int]groupRecord{}
	for {
		line, complete, err := readLine(br)
		if err != nil {
			return res, badState("cannot be read", "error", err)
		}
		if tooLarge() {
			return res, badState("larger than a state file can be", "limit", limit)
		}
		if len(line) == 0 && complete {
			continue // an empty line
		}
		if len(line) == 0 {
			break // the end
		}
		var rec logRecord
		if json.Unmarshal(line, &rec) != nil {
			// A line cut short cannot parse: every record ends in '}'.
			if !complete {
				res.torn = true
				break
			}
			res.skipped++
			continue
		}
		// A last line that parses is whole even without its newline.
		switch rec.Op {
		case opAdd:
			live[rec.PID] = groupRecord{PID: rec.PID, PGID: rec.PGID, Start: rec.Start, Command: rec.Command}
		case opDel:
			// Only the group it names: a newer one with the same pid stays.
			if g, ok := live[rec.PID]; ok && g.Start == rec.Start {
				delete(live, rec.PID)
			}
		default:
			res.skipped++
		}
		if !complete {
			break
		}
	}
	for _, g := range live {
		res.Groups = append(res.Groups, g)
	}
	slices.SortFunc(res.Groups, func(a, b groupRecord) int { return a.PID - b.PID })
	return res, nil
}

// readLine returns the next line without its newline, and whether it had
// one. At the end it returns an empty line that is not complete. A line
// longer than maxRecordSize comes back as a short line that is complete
// and cannot parse (its start), the rest of it passed over.
func readLine(br *bufio.Reader) (line []byte, complete bool, err error) {
	line, err = br.ReadSlice('\n')
	switch {
	case err == nil:
		return line[:len(line)-1], true, nil
	case errors.Is(err, io.EOF):
		return line, false, nil
	case errors.Is(err, bufio.ErrBufferFull):
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		return []byte("<line too long>"), true, nil
	}
	return nil, false, err
}

// liveLocked is how many groups the file lists: ours and the inherited.
func (r *Registry) liveLocked() int { return len(r.groups) + len(r.inherited) }

// appendLocked records one change. It appends a line to the file, unless
// the file must be rewritten anyway: after a failed append (which may have
// left part of a line), or when it is not open. It rewrites the file after
// the append once the dead lines are compactFactor times the live ones.
//
// Nothing is fsynced: the file must survive the host, not the machine.
// One write(2) of one line to a file opened O_APPEND lands whole at the
// end or not at all when the host process dies, however it dies; only a
// crash of the machine can tear it, and the reboot that follows ends every
// process the file could name. (decodeState honours what precedes a torn
// line all the same.)
func (r *Registry) appendLocked(rec logRecord) error {
	if r.file == nil || r.dirty {
		return r.rewriteLocked()
	}
	r.buf = r.buf[:0]
	b, err := appendLine(r.buf, rec)
	if err != nil {
		return fmt.Errorf("stdio: state file %s: %w", r.path, err)
	}
	r.buf = b
	if _, err := r.file.Write(b); err != nil {
		r.dirty = true
		return fmt.Errorf("stdio: state file: %w", err)
	}
	r.records++
	live := r.liveLocked()
	if dead := r.records - live; dead > compactMinDead && dead > compactFactor*live {
		err := r.rewriteLocked()
		switch {
		case err != nil && !r.compactFailing:
			// The log itself is whole: only its size grows.
			r.logger.Warn("mcpfleet: stdio: state file not compacted; it keeps growing until it can be", "error", err)
			r.compactFailing = true
		case err == nil && r.compactFailing:
			r.logger.Info("mcpfleet: stdio: state file compacted again", "path", r.path)
			r.compactFailing = false
		}
	}
	return nil
}

// rewriteLocked replaces the file with a header and one add per listed
// group, atomically: a reader (the next host) sees the old file or the new,
// never a part. It then appends to the new file. A closed Registry writes
// no owner; with no group left it removes the file instead.
func (r *Registry) rewriteLocked() error {
	// Ours after the inherited: should one of ours have the pid of an
	// inherited group (which then is gone), the reader keeps ours.
	groups := make([]groupRecord, 0, r.liveLocked())
	groups = append(groups, r.inherited...)
	for _, e := range r.groups {
		groups = append(groups, e.rec)
	}
	slices.SortStableFunc(groups[len(r.inherited):], func(a, b groupRecord) int { return a.PID - b.PID })
	if r.closed && len(groups) == 0 {
		r.closeFileLocked()
		if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stdio: state file: %w", err)
		}
		return nil
	}

	h := logHeader{Format: registryFormat, Version: registryVersion}
	if !r.closed {
		owner := r.owner
		h.Owner = &owner
	}
	b, err := appendLine(nil, h)
	for _, g := range groups {
		if err == nil {
			b, err = appendLine(b, addRecord(g))
		}
	}
	if err != nil {
		return fmt.Errorf("stdio: state file %s: %w", r.path, err)
	}
	tmp, err := createTemp(r.path)
	if err != nil {
		return fmt.Errorf("stdio: state file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("stdio: state file: %w", err)
	}
	// Closed first: Windows renames over no file that is open. Should the
	// rename fail, the next change finds no file open and rewrites.
	r.closeFileLocked()
	f, err := install(tmp, r.path)
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("stdio: state file: %w", err)
	}
	r.file, r.records, r.dirty = f, len(groups), false
	return nil
}

// closeFileLocked closes the descriptor the Registry appends to.
func (r *Registry) closeFileLocked() {
	if r.file != nil {
		_ = r.file.Close()
		r.file = nil
	}
}

// createTemp creates a new file, mode 0600, beside path, opened for
// appending. O_EXCL: it never opens, nor follows, something already there.
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("cannot create a temporary file beside %s", path)
}
