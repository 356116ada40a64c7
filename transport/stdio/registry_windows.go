//go:build windows

package stdio

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Windows needs no sweep: every child is in a kill-on-close Job Object,
// which the kernel ends when the host exits, however it exits. Without a
// start time (readProc) no entry is ever proved ours, so nothing here is
// ever signalled; the stubs keep the shared code simple.

// readProc cannot tell a process's start time here.
func readProc(int) (procState, error) { return procState{}, errNoStartTime }

// signalGroup: Windows has no process groups to signal.
func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }

// ownGroup: no process groups.
func ownGroup() int { return 0 }

// untrusted trusts the ACLs of the directory the host chose.
func untrusted(fs.FileInfo) string { return "" }

// runningGroups reports nothing running: nothing is ever signalled here.
func runningGroups([]groupRecord) map[int]bool { return map[int]bool{} }

// openNoFollow: Windows has no O_NOFOLLOW; the host's choice of directory
// and its ACLs protect the file.
const openNoFollow = 0

// install closes tmp, renames it over path (Windows renames no file that
// is open) and opens the result again for appending.
func install(tmp *os.File, path string) (*os.File, error) {
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
}
