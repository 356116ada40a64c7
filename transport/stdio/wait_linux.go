//go:build linux

package stdio

import (
	"syscall"
	"unsafe"
)

// waitExitedNoReap blocks until the process pid has exited, leaving it a
// zombie (WNOWAIT). While it is an unreaped zombie its pid, which is also
// its process group id, cannot be reused, so signalling the group is safe
// from racing with an unrelated new process.
func waitExitedNoReap(pid int) error {
	const (
		pPID    = 1          // P_PID
		wNOWAIT = 0x01000000 // WNOWAIT
	)
	var info [128]byte // siginfo_t; contents unused
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNOWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
