//go:build darwin

package stdio

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// darwinZombie is SZOMB, p_stat of an exited, unreaped process
// (<sys/proc.h>).
const darwinZombie = 5

// readProc asks the kernel (sysctl kern.proc.pid) for the process's start
// time, to the microsecond, and its group.
func readProc(pid int) (procState, error) {
	if !exists(pid) {
		return procState{}, errProcGone
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return procState{}, fmt.Errorf("%w: sysctl: %w", errNoStartTime, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return procState{}, errProcGone
	}
	t := kp.Proc.P_starttime
	return procState{
		start:  fmt.Sprintf("darwin:%d.%06d", t.Sec, t.Usec),
		pgid:   int(kp.Eproc.Pgid),
		zombie: kp.Proc.P_stat == darwinZombie,
	}, nil
}

// runningGroups: see runningGroupsByKill.
func runningGroups(groups []groupRecord) map[int]bool { return runningGroupsByKill(groups) }
