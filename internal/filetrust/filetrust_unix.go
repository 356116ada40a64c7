//go:build unix

package filetrust

import (
	"io/fs"
	"os"
	"syscall"
)

func untrusted(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "owned by another user"
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return "writable by other users"
	}
	return ""
}
