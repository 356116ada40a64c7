//go:build unix

package stdio

import (
	"io/fs"
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
