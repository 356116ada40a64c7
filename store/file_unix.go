//go:build unix

package store

import (
	"io/fs"
	"os"
	"syscall"
)

// untrusted returns why a directory or record must not be believed, or "":
// whoever can write it chooses which tasks the Manager polls and what it
// hands the host as their results, so it must be this user's and writable
// by no one else.
func untrusted(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "owned by another user"
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return "writable by other users"
	}
	return ""
}
