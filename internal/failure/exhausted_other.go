//go:build !windows

package failure

// exhaustedOS: on Unix the POSIX errors are the OS's own.
var exhaustedOS []error
