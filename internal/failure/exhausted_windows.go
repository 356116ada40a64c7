//go:build windows

package failure

import "golang.org/x/sys/windows"

// exhaustedOS are Windows's own errors for running out of handles or
// memory; syscall's EMFILE and the like are invented values there, which
// no Windows call returns.
var exhaustedOS = []error{
	windows.ERROR_TOO_MANY_OPEN_FILES,
	windows.ERROR_NOT_ENOUGH_MEMORY,
	windows.ERROR_OUTOFMEMORY,
	windows.ERROR_NO_SYSTEM_RESOURCES,
	windows.ERROR_COMMITMENT_LIMIT,
}
