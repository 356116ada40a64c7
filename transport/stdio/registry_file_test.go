package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The state file's format: the log, its compaction, what a crash leaves,
// and the version before it. These need no process: the groups are made
// up, with pids no system hands out (above Linux's largest pid_max), so
// the sweep lists them and never signals anything.

// fakePID is the first made-up pid.
const fakePID = 5_000_001

// fakeGroup is a made-up group that no sweep can prove running.
func fakeGroup(i int) groupRecord {
	return groupRecord{PID: fakePID + i, PGID: fakePID + i, Start: fmt.Sprintf("test:%d", i), Command: "server"}
}

// goneHost is the owner of a file whose host is gone.
var goneHost = &processRecord{PID: fakePID - 1, Start: "test:gone"}

// encodeState is a state file as a host of the given version writes it:
// the log of this one (registryVersion), or the whole document of the one
// before (registryVersionWhole).
func encodeState(t testing.TB, version int, owner *processRecord, groups ...groupRecord) []byte {
	t.Helper()
	if version == registryVersionWhole {
		b, err := json.MarshalIndent(stateFile{Format: registryFormat, Version: version, Owner: owner, Groups: groups}, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	b, err := appendLine(nil, logHeader{Format: registryFormat, Version: version, Owner: owner})
	for _, g := range groups {
		if err == nil {
			b, err = appendLine(b, addRecord(g))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// line is one more line of a log.
func line(t testing.TB, rec logRecord) []byte {
	t.Helper()
	b, err := appendLine(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pids lists the groups' pids, sorted.
func pids(groups []groupRecord) []int {
	var out []int
	for _, g := range groups {
		out = append(out, g.PID)
	}
	slices.Sort(out)
	return out
}

// TestRegistryTornLastLine: a host died while appending its last line.
// Cut at every byte of that line, the file reads as every line before it,
// and as all of them once the line is whole (its newline need not be
// there); a Registry opened on it neither fails nor panics, lists exactly
// those groups, says that the last line was cut short when it was, and
// takes the file over.
func TestRegistryTornLastLine(t *testing.T) {
	g := []groupRecord{fakeGroup(0), fakeGroup(1), fakeGroup(2), fakeGroup(3), fakeGroup(4)}
	body := encodeState(t, registryVersion, goneHost, g[0], g[1], g[2], g[3])
	body = append(body, line(t, delRecord(g[1]))...)
	before := []int{g[0].PID, g[2].PID, g[3].PID}
	for _, tc := range []struct {
		name  string
		last  logRecord
		whole []int // the groups once the last line is whole
	}{
		{"add", addRecord(g[4]), []int{g[0].PID, g[2].PID, g[3].PID, g[4].PID}},
		{"del", delRecord(g[0]), []int{g[2].PID, g[3].PID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := append(slices.Clip(body), line(t, tc.last)...)
			for cut := len(body); cut <= len(full); cut++ {
				data := full[:cut]
				want, torn := before, cut > len(body) && cut < len(full)-1
				if cut >= len(full)-1 {
					want = tc.whole
				}
				res, err := decodeState(bytes.NewReader(data), maxRegistrySize)
				if err != nil || res.torn != torn || res.skipped != 0 || !slices.Equal(pids(res.Groups), want) {
					t.Fatalf("cut at %d of %d: groups %v, torn %v, skipped %d, %v; want %v, torn %v",
						cut, len(full), pids(res.Groups), res.torn, res.skipped, err, want, torn)
				}

				path := filepath.Join(t.TempDir(), "state.json")
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				logs := &logRecorder{}
				r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
				if err != nil {
					t.Fatalf("cut at %d: OpenRegistry: %v", cut, err)
				}
				if got := r.Swept(); got != (SweepResult{Listed: len(want)}) {
					t.Errorf("cut at %d: Swept() = %+v, want %d listed and nothing killed", cut, got, len(want))
				}
				if got := logs.has("last line was cut short"); got != torn {
					t.Errorf("cut at %d: logged a cut line: %v, want %v:\n%s", cut, got, torn, logs)
				}
				if logs.has("WARN") {
					t.Errorf("cut at %d: warnings:\n%s", cut, logs)
				}
				if sf := readState(t, path); sf.Owner == nil || sf.Owner.PID != os.Getpid() || len(sf.Groups) != 0 {
					t.Errorf("cut at %d: not taken over: %+v", cut, sf)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// countLines counts the lines of the file after its header.
func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n")) - 1
}

// TestRegistryCompacts: each change appends a line; once the dead lines
// outnumber the live ones compactFactor to one (and are more than
// compactMinDead), the file is rewritten with the live groups alone. A
// fleet of 10 that starts and reaps a thousand more children one after
// another never has a file of more than its bound, and ends listing the
// 10. Close leaves the groups still listed, without an owner, and the
// next Registry lists them.
func TestRegistryCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	logs := &logRecorder{}
	r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	const live = 10
	var fleet []*registered
	for i := range live {
		fleet = append(fleet, r.record(fakeGroup(i)))
	}
	if n := countLines(t, path); n != live {
		t.Fatalf("%d lines after %d adds, want one each", n, live)
	}
	bound := live + max(compactMinDead, compactFactor*(live+1)) + 1
	compactions, most := 0, 0
	prev := live
	for i := range 1000 {
		e := r.record(fakeGroup(live + i))
		r.remove(e)
		n := countLines(t, path)
		switch {
		case n < prev:
			compactions++
		case n != prev+2:
			t.Fatalf("change %d: %d lines after %d, want two more (appended) or fewer (compacted)", i, n, prev)
		}
		prev, most = n, max(most, n)
	}
	t.Logf("1,000 spawns and reaps beside %d live groups: %d compactions, at most %d lines", live, compactions, most)
	if most > bound {
		t.Errorf("the file grew to %d lines, want at most %d", most, bound)
	}
	if compactions < 1000*2/bound {
		t.Errorf("%d compactions, want at least %d", compactions, 1000*2/bound)
	}
	if sf := readState(t, path); !slices.Equal(pids(sf.Groups), pids([]groupRecord{fakeGroup(0), fakeGroup(1), fakeGroup(2), fakeGroup(3), fakeGroup(4), fakeGroup(5), fakeGroup(6), fakeGroup(7), fakeGroup(8), fakeGroup(9)})) {
		t.Errorf("the file lists %v, want the %d live groups", pids(sf.Groups), live)
	}

	for _, e := range fleet[3:] {
		r.remove(e)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.has("WARN", "not updated") || logs.has("not compacted") {
		t.Errorf("a write failed:\n%s", logs)
	}
	if sf := readState(t, path); sf.Owner != nil || !slices.Equal(pids(sf.Groups), []int{fakePID, fakePID + 1, fakePID + 2}) {
		t.Errorf("after Close with 3 groups left: %+v", sf)
	}
	r2, err := OpenRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.Swept(); got != (SweepResult{Listed: 3}) {
		t.Errorf("next Registry: Swept() = %+v, want 3 listed", got)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file left after Close: %v", err)
	}
}

// TestRegistryRewritesAfterFailedAppend: an append that failed may have
// left part of a line; the next change rewrites the file whole instead of
// appending after it, so a cut line is only ever the last one.
func TestRegistryRewritesAfterFailedAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	logs := &logRecorder{}
	r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.record(fakeGroup(0))
	// The append fails (its descriptor is gone) after part of the line
	// reached the file, as when the disk fills.
	r.mu.Lock()
	r.file.Close()
	r.mu.Unlock()
	r.record(fakeGroup(1))
	if !logs.has("WARN", "state file not updated") {
		t.Fatalf("the failed append was not logged:\n%s", logs)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"op":"add","pid":5000`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r.record(fakeGroup(2))
	if sf := readState(t, path); !slices.Equal(pids(sf.Groups), []int{fakePID, fakePID + 1, fakePID + 2}) {
		t.Errorf("after the rewrite: %v, want all three groups", pids(sf.Groups))
	}
	if !logs.has("INFO", "state file updated again") {
		t.Errorf("the recovery was not logged:\n%s", logs)
	}
	r.record(fakeGroup(3)) // appended again
	if n := countLines(t, path); n != 4 {
		t.Errorf("%d lines, want 4", n)
	}
}

// TestDecodeState: what a log may hold besides clean lines, and the
// version before it.
func TestDecodeState(t *testing.T) {
	g0, g1, g2 := fakeGroup(0), fakeGroup(1), fakeGroup(2)
	header := encodeState(t, registryVersion, goneHost)
	log := func(lines ...[]byte) []byte { return bytes.Join(append([][]byte{header}, lines...), nil) }
	add := func(g groupRecord) []byte { return line(t, addRecord(g)) }
	newer := g0
	newer.Start = "test:newer"
	tests := []struct {
		name    string
		data    []byte
		groups  []int
		skipped int
		bad     string // the whole file is refused, saying this
	}{
		{"empty", nil, nil, 0, ""},
		{"blank", []byte(" \n\n"), nil, 0, ""},
		{"header alone", header, nil, 0, ""},
		{"header without its newline", bytes.TrimSuffix(header, []byte("\n")), nil, 0, ""},
		{"blank lines between", log([]byte("\n"), add(g0), []byte("\n\n"), add(g1)), []int{g0.PID, g1.PID}, 0, ""},
		{"a corrupt line in the middle", log(add(g0), []byte("{\"op\":\"ad\x00\n"), add(g1)), []int{g0.PID, g1.PID}, 1, ""},
		{"an unknown operation", log(add(g0), []byte(`{"op":"frobnicate","pid":5000002,"start":"x"}`+"\n"), add(g1)), []int{g0.PID, g1.PID}, 1, ""},
		{"a line too long", log(add(g0), append(bytes.Repeat([]byte("x"), maxRecordSize+10), '\n'), add(g1)), []int{g0.PID, g1.PID}, 1, ""},
		{"removal of the group", log(add(g0), add(g1), line(t, delRecord(g0))), []int{g1.PID}, 0, ""},
		// The pid was reused by a newer child before the older one's
		// removal: that removal leaves the newer entry.
		{"removal of an older group with the pid", log(add(g0), add(newer), line(t, delRecord(g0))), []int{g0.PID}, 0, ""},
		{"added twice", log(add(g2), add(g2)), []int{g2.PID}, 0, ""},
		{"version 1, indented", encodeState(t, registryVersionWhole, goneHost, g0, g1), []int{g0.PID, g1.PID}, 0, ""},
		{"version 1, one line", []byte(`{"format":"mcpfleet/stdio-registry","version":1,"groups":[{"pid":5000001,"pgid":5000001,"start":"x","command":"c"}]}`), []int{g0.PID}, 0, ""},
		{"version 1, no groups", []byte(`{"format":"mcpfleet/stdio-registry","version":1,"groups":[]}` + "\n"), nil, 0, ""},
		{"a version 2 header over lines", []byte("{\n\"format\": \"mcpfleet/stdio-registry\",\n\"version\": 2\n}\n"), nil, 0, ""},
		{"foreign", []byte(`{"format":"other","version":2}` + "\n"), nil, 0, "not a state file of mcpfleet"},
		{"future", []byte(`{"format":"mcpfleet/stdio-registry","version":3}` + "\n" + string(add(g0))), nil, 0, "unsupported version"},
		{"garbage", []byte("\x00\x01binary\n{}"), nil, 0, "corrupt or not a state file"},
		{"an add before any header", add(g0), nil, 0, "not a state file of mcpfleet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := decodeState(bytes.NewReader(tt.data), maxRegistrySize)
			if tt.bad != "" {
				var bad *badStateFile
				if !errors.As(err, &bad) || bad.reason != tt.bad {
					t.Fatalf("err = %v, want %q", err, tt.bad)
				}
				return
			}
			if err != nil || res.torn || res.skipped != tt.skipped || !slices.Equal(pids(res.Groups), tt.groups) {
				t.Errorf("groups %v, skipped %d, torn %v, %v; want %v, skipped %d", pids(res.Groups), res.skipped, res.torn, err, tt.groups, tt.skipped)
			}
		})
	}
	// Past the limit, a file is refused whole, whatever it is.
	big := log(add(g0), add(g1), add(g2))
	if _, err := decodeState(bytes.NewReader(big), int64(len(big)-1)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a log over the limit: %v", err)
	}
	whole := encodeState(t, registryVersionWhole, goneHost, g0, g1, g2)
	if _, err := decodeState(bytes.NewReader(whole), int64(len(whole)-1)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a version 1 file over the limit: %v", err)
	}
}

// TestRegistryReadsVersion1: a file of the version before, left by a host
// that crashed before an upgrade, is swept and then rewritten in the
// current version.
func TestRegistryReadsVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, encodeState(t, registryVersionWhole, goneHost, fakeGroup(0), fakeGroup(1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Swept(); got != (SweepResult{Listed: 2}) {
		t.Errorf("Swept() = %+v, want 2 listed", got)
	}
	r.record(fakeGroup(5))
	if sf := readState(t, path); sf.Version != registryVersion || sf.Owner == nil || !slices.Equal(pids(sf.Groups), []int{fakePID + 5}) {
		t.Errorf("after takeover: %+v", sf)
	}
}

// TestRegistryNoSymlink: a symbolic link where the state file should be is
// not followed: what it points at is neither believed nor written, and
// the link is replaced by a file of ours.
func TestRegistryNoSymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no O_NOFOLLOW; links need privileges")
	}
	dir := t.TempDir()
	target, path := filepath.Join(dir, "elsewhere.json"), filepath.Join(dir, "state.json")
	content := encodeState(t, registryVersion, goneHost, fakeGroup(0))
	if err := os.WriteFile(target, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	logs := &logRecorder{}
	r, err := OpenRegistry(path, WithRegistryLogger(slog.New(logs)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Swept(); got != (SweepResult{}) {
		t.Errorf("Swept() = %+v, want nothing: the link was followed", got)
	}
	if !logs.has("WARN", "state file ignored: cannot be read") {
		t.Errorf("not logged:\n%s", logs)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link is still there: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !bytes.Equal(b, content) {
		t.Errorf("the link's target was written:\n%s", b)
	}
}

// TestRegistryOursOverInherited: a group the sweep could not end stays
// listed; should it die and a child of ours get its pid, the rewritten
// file lists our child under that pid, not the dead group.
func TestRegistryOursOverInherited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	r, err := OpenRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	old, ours := fakeGroup(0), fakeGroup(0)
	old.Start, ours.Start = "test:old", "test:ours"
	r.mu.Lock()
	r.inherited = []groupRecord{old, fakeGroup(1)}
	r.mu.Unlock()
	r.record(ours)
	if err := r.rewrite(); err != nil {
		t.Fatal(err)
	}
	sf := readState(t, path)
	if !slices.Equal(pids(sf.Groups), []int{fakePID, fakePID + 1}) {
		t.Fatalf("groups %v", pids(sf.Groups))
	}
	for _, g := range sf.Groups {
		if g.PID == fakePID && g.Start != ours.Start {
			t.Errorf("pid %d listed as %+v, want our child (start %q)", g.PID, g, ours.Start)
		}
	}
}
