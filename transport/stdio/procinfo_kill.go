//go:build unix && !linux

package stdio

import (
	"errors"
	"syscall"
)

// exists reports whether pid names a process, zombies included.
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// runningGroupsByKill reports, for each group, whether it has a member:
// kill(-pgid, 0) succeeds. Zombies count, which is right where init reaps
// orphans promptly, as on macOS and the BSDs.
func runningGroupsByKill(groups []groupRecord) map[int]bool {
	out := make(map[int]bool, len(groups))
	for _, g := range groups {
		err := syscall.Kill(-g.PGID, 0)
		out[g.PGID] = err == nil || errors.Is(err, syscall.EPERM)
	}
	return out
}
