//go:build windows

package stdio

import (
	"errors"
	"io/fs"
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
