//go:build unix

package stdio

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/mcpfleet/mcpfleet/internal/filetrust"
)

// signalGroup sends sig to every process of the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	return syscall.Kill(-pgid, sig)
}

// ownGroup is the process group of this host, which the sweep never
// signals.
func ownGroup() int { return syscall.Getpgrp() }

// untrusted returns why a state file must not be believed, or "": whoever
// can write it chooses which processes the sweep signals, so it must be
// this user's and writable by no one else.
func untrusted(fi fs.FileInfo) string { return filetrust.Untrusted(fi) }

// openNoFollow makes the open of the state file fail on a symbolic link.
const openNoFollow = syscall.O_NOFOLLOW

// install renames tmp over path and returns tmp, still open for
// appending: it is the file at path now. On error tmp is closed.
func install(tmp *os.File, path string) (*os.File, error) {
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = tmp.Close()
		return nil, err
	}
	return tmp, nil
}
