//go:build linux

package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// readProc reads /proc/<pid>/stat. The start time is field 22 (clock ticks
// since boot), qualified by the boot id, so that a process of an earlier
// boot that had the same pid and tick count is not taken for this one.
func readProc(pid int) (procState, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procState{}, errProcGone
	}
	if err != nil {
		return procState{}, err
	}
	s, err := parseStat(b)
	if err != nil {
		return procState{}, err
	}
	boot, err := bootID()
	if err != nil {
		return procState{}, err
	}
	return procState{start: "linux:" + boot + ":" + s.start, pgid: s.pgid, zombie: s.zombie}, nil
}

// statFields are the fields of /proc/<pid>/stat the registry uses.
type statFields struct {
	pgid   int
	start  string // field 22, starttime, as written
	zombie bool
}

// parseStat parses a stat line. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func parseStat(b []byte) (statFields, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return statFields{}, fmt.Errorf("malformed /proc stat %q", b)
	}
	// After ") ": state(3) ppid(4) pgrp(5) ... starttime(22).
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return statFields{}, fmt.Errorf("malformed /proc stat %q", b)
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return statFields{}, fmt.Errorf("malformed /proc stat %q", b)
	}
	if _, err := strconv.ParseUint(f[19], 10, 64); err != nil {
		return statFields{}, fmt.Errorf("malformed /proc stat %q", b)
	}
	return statFields{pgid: pgid, start: f[19], zombie: f[0] == "Z" || f[0] == "X"}, nil
}

// bootID names this boot of the machine.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNoStartTime, err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("%w: empty boot id", errNoStartTime)
	}
	return id, nil
})

// runningGroups reports, for each group, whether a member still runs. An
// unreaped zombie does not count: where nobody reaps orphans (a container
// whose init does not), a killed group would otherwise look alive for
// ever. kill(-pgid, 0) answers cheaply when the group is empty; otherwise
// one scan of /proc looks at what is left.
func runningGroups(groups []groupRecord) map[int]bool {
	out := make(map[int]bool, len(groups))
	need := map[int]bool{}
	for _, g := range groups {
		if err := syscall.Kill(-g.PGID, 0); err == nil || errors.Is(err, syscall.EPERM) {
			need[g.PGID] = true
		}
	}
	if len(need) == 0 {
		return out
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		// Cannot look closer: a zombie counts as running.
		return need
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue // not a process
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s, err := parseStat(b)
		if err != nil || s.zombie || !need[s.pgid] {
			continue
		}
		out[s.pgid] = true
	}
	return out
}
