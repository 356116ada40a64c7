// Package filetrust says whether a file of secrets or of process records,
// written by this host, can be believed: whoever else can write it chooses
// what is in it (a token the client then sends, a process the sweep then
// signals).
package filetrust

import "io/fs"

// Untrusted returns why the file fi describes must not be believed, or ""
// if it can be: on Unix it must belong to this process's effective user
// and be writable by no one else (no group or other write bit). On other
// systems the directory's access control, chosen by the host, decides,
// and every file passes.
func Untrusted(fi fs.FileInfo) string { return untrusted(fi) }
